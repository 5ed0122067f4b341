#pragma once
// A fuzz target: one reader of bytes that wiola did not write in the same
// process, fed arbitrary input. The contract every reader keeps
// (docs/testing.md "Fuzzing"): on any input it either reads it or refuses it
// with a wiola::Error that names the file; anything else that escapes (a
// std::exception from a library, a crash, an out-of-bounds read that the
// sanitizers see, a hang) is a bug.
//
// The same target source builds twice: into a libFuzzer binary
// (-DWIOLA_FUZZ=ON, one binary per target, libfuzzer_entry.cpp) and into the
// replay program of the normal suite (replay_main.cpp), which runs the seed
// corpus and every regression input through it.
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace wiola::fuzz {

using TargetFn = void (*)(std::string_view bytes);
struct Target {
  const char* name;
  TargetFn run;
};
std::vector<Target>& registry();
// A libFuzzer binary runs one target; one of its sources may hold others
// (WIOLA_FUZZ_ONLY names the one it runs).
inline bool selected(std::string_view name) {
#ifdef WIOLA_FUZZ_ONLY
  return name == WIOLA_FUZZ_ONLY;
#else
  (void)name;
  return true;
#endif
}
struct Register {
  Register(const char* name, TargetFn run) {
    if (selected(name)) registry().push_back({name, run});
  }
};

// Runs `body`. Returns true when it finished, false when it refused the input
// with a wiola::Error whose message contains `where` (when `where` is not
// empty). Any other outcome aborts the process with what escaped.
template <class Body>
bool read_or_refuse(const std::string& where, Body&& body);

// A file named `name` holding `bytes`, in a scratch folder of this process
// (removed at exit). Returns its path.
std::string scratch_file(const std::string& name, std::string_view bytes);

// Runs `body`, which must succeed: any exception is a bug, reported with `what`.
template <class Body>
void must_succeed(const char* what, Body&& body);

// How many inputs the targets read and refused (the replay program prints
// them, so that a seed that no longer reads is seen).
struct Outcomes {
  long read = 0, refused = 0;
};
Outcomes& outcomes();

[[noreturn]] void bug(const std::string& what);
void check_refusal(const std::string& where, const char* message);

template <class Body>
bool read_or_refuse(const std::string& where, Body&& body) {
  try {
    body();
    ++outcomes().read;
    return true;
  } catch (const Error& e) {
    check_refusal(where, e.what());
    ++outcomes().refused;
    return false;
  } catch (const std::exception& e) {
    bug(std::string("an exception other than wiola::Error escaped: ") + e.what());
  } catch (...) {
    bug("a non-std exception escaped");
  }
}

template <class Body>
void must_succeed(const char* what, Body&& body) {
  try {
    body();
  } catch (const std::exception& e) {
    bug(std::string(what) + ": " + e.what());
  }
}

}  // namespace wiola::fuzz

// WIOLA_FUZZ_TARGET(name) { ...uses `bytes`... } defines and registers a target.
#define WIOLA_FUZZ_TARGET(name)                                                     \
  static void wiola_fuzz_##name(std::string_view bytes);                            \
  static const ::wiola::fuzz::Register wiola_fuzz_register_##name(#name,            \
                                                                  wiola_fuzz_##name); \
  static void wiola_fuzz_##name(std::string_view bytes)
