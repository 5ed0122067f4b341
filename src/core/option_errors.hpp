#pragma once
// The text of an exception for a user, safe for Boost.Program_options errors.
//
// Boost fills the placeholders of its messages ("%value%", "%canonical_option%")
// by replacing until none is left, so a value that itself contains one
// (`--steps %value%`, or `steps = %value%` in a config file) makes what() loop
// forever. error_text() defuses the values first; every place that reports an
// options error (or any exception that may be one) goes through it.
#include <exception>
#include <string>

namespace wiola {

std::string error_text(const std::exception& e);

}  // namespace wiola
