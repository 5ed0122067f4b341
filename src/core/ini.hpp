#pragma once
// The one INI dialect of wiola's configuration files (wiola-train --config,
// the configuration a checkpoint records, jobs/configs/*.ini), read through
// Boost.Program_options:
//   * `option = value` lines, the option's long name as key; blanks around
//     key and value do not count;
//   * blank lines, and comment lines whose first non-blank character is `#`
//     or `;`, are ignored;
//   * a comment after a value is refused, naming the origin, the line and the
//     key: a `#` anywhere in a value, or a `;` that starts a value or follows a
//     blank (`preset = x ; note`). A `;` inside a word (`a;b`) is part of the
//     value;
//   * `[section]` headers are refused: the options are flat, so a file is the
//     command line written one option per line;
//   * unknown options are refused naming the line.
// The profiler's projection specs are another format (src/profile/ini.hpp).
#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>
#include <string>

namespace wiola {

// Stores the options of `text` into `vm` (as po::store does: values already
// in `vm` win). `origin` names the text in errors ("--config run.ini"); every
// error is a wiola::Error "<origin>:<line>: <what>" when the line is known,
// else "<origin>: <what>".
void store_ini(const std::string& text, const std::string& origin,
               const boost::program_options::options_description& desc,
               boost::program_options::variables_map& vm);

}  // namespace wiola
