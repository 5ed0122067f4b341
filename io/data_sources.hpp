#pragma once
// What a dataset is made of, as the user names it: entries that are paths,
// globs (`*`, `?`, `[...]`, matches in sorted order) or manifests (an entry
// `@FILE`, or a file ending in `.manifest`). A manifest lists one entry per
// line, `PATH_OR_GLOB [WEIGHT]`, `#` comments, paths relative to the
// manifest's folder; manifests do not nest.
//
// Every entry (a command-line path or glob, or a manifest line) is one
// *component*. Without weights the whole dataset is one component (windows
// are drawn uniformly from all files). With weights (all entries have one,
// from the manifest or from a list given beside the entries) each component
// is drawn with probability weight / sum of weights (mixture_order.hpp);
// within a component, uniformly over its files' windows.
#include <string>
#include <vector>

namespace wiola {

struct DataComponent {
  std::string name;                // the entry as written
  std::vector<std::string> files;  // in order, at least one
  double weight = 1.0;
};

struct DataSources {
  std::vector<DataComponent> components;
  bool weighted = false;
  std::vector<std::string> all_files() const;  // component by component
};

// Expands entries; `weights` is empty or holds one positive weight per
// component (manifest lines included, in order). Errors name the entry, the
// manifest line, or the file listed twice.
DataSources resolve_data_sources(const std::vector<std::string>& entries,
                                 const std::vector<double>& weights = {});

// "0.7,0.3" -> {0.7, 0.3}; each must be a finite number > 0. `what` names the
// option in errors.
std::vector<double> parse_weight_list(const std::string& text, const std::string& what);

}  // namespace wiola
