#pragma once
// A comma-separated list as one option value, for Boost.Program_options:
// `po::value<CommaList<int>>()` reads "1,2,4", `CommaList<double>` reads
// "1.5, 2, 3" (items trimmed). An empty list or item, or an item that is not
// a T, is the option's invalid value.
#include <boost/algorithm/string/trim.hpp>
#include <boost/any.hpp>
#include <boost/lexical_cast.hpp>
#include <boost/program_options/errors.hpp>
#include <boost/program_options/value_semantic.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace wiola::profile {

template <class T>
struct CommaList {
  std::vector<T> items;
};

// Found by Boost.Program_options through argument-dependent lookup.
template <class T>
void validate(boost::any& value, const std::vector<std::string>& tokens, CommaList<T>*, int) {
  namespace po = boost::program_options;
  po::validators::check_first_occurrence(value);
  const std::string& text = po::validators::get_single_string(tokens);
  CommaList<T> list;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    boost::algorithm::trim(item);
    if (item.empty()) throw po::invalid_option_value(text);
    try {
      list.items.push_back(boost::lexical_cast<T>(item));
    } catch (const boost::bad_lexical_cast&) {
      throw po::invalid_option_value(text);
    }
  }
  if (list.items.empty()) throw po::invalid_option_value(text);
  value = list;
}

}  // namespace wiola::profile
