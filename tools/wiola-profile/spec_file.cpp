#include "wiola-profile/spec_file.hpp"

#include <boost/algorithm/string/trim.hpp>
#include <map>
#include <sstream>

#include "core/error.hpp"
#include "wiola-profile/comma_list.hpp"
#include "wiola-profile/model_fields.hpp"
#include "core/option_errors.hpp"

namespace po = boost::program_options;

namespace wiola::profile {

namespace {

using Numbers = CommaList<double>;

po::options_description make_spec_keys() {
  po::options_description keys("projection spec (docs/profiling.md, \"The spec file\")");
  add_model_keys(keys);
  keys.add_options()
      ("cluster.gpus_per_node", po::value<int>(), "ranks per node")
      ("cluster.nodes", po::value<int>(), "nodes")
      ("cluster.intra_latency_us", po::value<double>(), "intra-node link latency")
      ("cluster.intra_bandwidth_GBps", po::value<double>(), "intra-node link bandwidth")
      ("cluster.inter_latency_us", po::value<double>(), "inter-node link latency")
      ("cluster.inter_bandwidth_GBps", po::value<double>(), "inter-node link bandwidth")
      ("cluster.device", po::value<std::string>(), "a device whose peak is known")
      ("cluster.peak_tflops", po::value<double>(), "peak per rank")
      ("cluster.compute_efficiency", po::value<double>(), "fraction of the peak the layers reach")
      ("cluster.memory_bandwidth_GBps", po::value<double>(), "prices the optimizer update")
      ("cluster.device_memory_GiB", po::value<double>(), "memory per rank for the schedule's memory check (default: the device's; 0: unchecked)")
      ("cluster.optimizer_bytes_per_param", po::value<double>(), "bytes the update moves a parameter")
      ("run.pp", po::value<int>(), "pipeline stages")
      ("run.dp", po::value<int>(), "data-parallel replicas")
      ("run.micro_batch", po::value<int>(), "sequences per micro-batch")
      ("run.global_batch", po::value<int>(), "sequences per step")
      ("run.microbatches", po::value<int>(), "micro-batches per replica")
      ("run.schedule", po::value<std::string>(), "best (default: simulate 1f1b, interleaved, zb-h1, zb-h2 and keep the fastest that fits), 1f1b, gpipe, interleaved, zb-h1 or zb-h2")
      ("run.virtual_stages", po::value<int>(), "model chunks per stage for interleaved (default 2)")
      ("run.recompute", po::value<int>(), "1: activation recomputation (the memory check)")
      ("run.zero", po::value<int>(), "ZeRO stage")
      ("run.stage_layers", po::value<std::string>(), "layers per stage")
      ("run.activation_bytes", po::value<double>(), "bytes per boundary element")
      ("run.grad_bytes", po::value<double>(), "bytes per reduced gradient element")
      ("run.param_bytes", po::value<double>(), "bytes per gathered parameter")
      ("run.train_tokens", po::value<std::string>(), "a number or chinchilla")
      ("run.overlap_comm", po::value<int>(), "1: data-parallel collectives overlap compute (a device transport such as NCCL), 0: they do not (MPI on CPUs)")
      ("times.profile", po::value<std::string>(), "a profile.json to take times from")
      ("times.counts", po::value<std::string>(), "a counts file (tools/gpu-counts.sh --json): layer times from the counted work at the [ceilings]")
      ("ceilings.gemm_tflops", po::value<double>(), "times.counts: the matrix products' rate")
      ("ceilings.attention_tflops", po::value<double>(), "times.counts: the attention kernels' rate")
      ("ceilings.memory_GBps", po::value<double>(), "times.counts: device memory bandwidth for the other kernels")
      ("ceilings.launch_us", po::value<double>(), "times.counts: the gap each device operation costs")
      ("ceilings.source", po::value<std::string>(), "times.counts: where the ceilings come from (printed with them)")
      ("times.micro_batch", po::value<int>(), "micro-batch size the given times are for")
      ("times.stage_forward", po::value<Numbers>(), "per stage, seconds")
      ("times.stage_backward", po::value<Numbers>(), "per stage, seconds")
      ("times.stage_optimizer", po::value<Numbers>(), "per stage, seconds")
      ("times.stage_other", po::value<Numbers>(), "per stage, seconds")
      ("times.layer_forward", po::value<Numbers>(), "per layer, seconds")
      ("times.layer_backward", po::value<Numbers>(), "per layer, seconds")
      ("times.embed_forward", po::value<double>(), "seconds")
      ("times.embed_backward", po::value<double>(), "seconds")
      ("times.head_forward", po::value<double>(), "seconds")
      ("times.head_backward", po::value<double>(), "seconds")
      ("times.optimizer_seconds_per_param", po::value<double>(), "seconds per parameter")
      ("times.other_s", po::value<double>(), "per step, outside every action")
      ("times.weight_share", po::value<double>(), "share of the backward that is weight gradients (zero-bubble W; default 0.5 or the profile's)")
      ("times.message_bytes", po::value<Numbers>(), "per boundary");
  return keys;
}

const char* const kKeyList = "docs/profiling.md lists the spec keys";

// --project-set assignments, stored first: Boost keeps the first value stored
// for a key, so they win over the file read after them.
void store_assignments(const std::vector<std::string>& assignments, po::variables_map& vm) {
  std::map<std::string, std::string> last;  // the later of two for one key wins
  for (const std::string& a : assignments) {
    const auto eq = a.find('=');
    const std::string key = boost::algorithm::trim_copy(a.substr(0, eq));
    require(eq != std::string::npos && !key.empty(),
            "--project-set: expected section.key=value, got '", a, "'");
    require(spec_keys().find_nothrow(key, false) != nullptr, "--project-set: unknown key '", key,
            "' (", kKeyList, ")");
    last[key] = boost::algorithm::trim_copy(a.substr(eq + 1));
  }
  po::parsed_options parsed(&spec_keys());
  for (const auto& [key, value] : last) parsed.options.emplace_back(key, std::vector{value});
  try {
    po::store(parsed, vm);
  } catch (const po::error& e) {
    fail("--project-set: ", wiola::error_text(e));
  }
}

}  // namespace

const po::options_description& spec_keys() {
  static const po::options_description keys = make_spec_keys();
  return keys;
}

std::string strip_ini_comment(std::string_view line) {
  return std::string(line.substr(0, line.find_first_of("#;")));
}

po::variables_map spec_from_ini(const std::string& text, const std::string& origin,
                                const std::vector<std::string>& assignments) {
  // Comments go first (Boost's reader knows only '#' at the start of a
  // line); each `key = value` line's number is kept for messages: Boost
  // returns one option per such line, in order.
  std::istringstream in(text);
  std::string line, clean;
  std::vector<int> entry_lines;
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string l = boost::algorithm::trim_copy(strip_ini_comment(line));
    if (!l.empty() && !(l.front() == '[' && l.back() == ']')) entry_lines.push_back(n);
    clean += l;
    clean += '\n';
  }
  std::istringstream cleaned(clean);
  po::parsed_options parsed(&spec_keys());
  try {
    parsed = po::parse_config_file(cleaned, spec_keys(), /*allow_unregistered=*/true);
  } catch (const po::error& e) {
    fail(origin, ": ", wiola::error_text(e));
  }
  std::map<std::string, std::string> where;  // key -> "file:line"
  for (std::size_t i = 0; i < parsed.options.size(); ++i) {
    const po::option& o = parsed.options[i];
    const std::string at = origin + ":" + std::to_string(entry_lines.at(i));
    require(!o.unregistered, at, ": unknown key '", o.string_key, "' (", kKeyList, ")");
    where[o.string_key] = at;
  }
  po::variables_map vm;
  store_assignments(assignments, vm);
  try {
    po::store(parsed, vm);
  } catch (const po::error_with_option_name& e) {
    const auto it = where.find(e.get_option_name());
    fail(it == where.end() ? origin : it->second, ": ", wiola::error_text(e));
  } catch (const po::error& e) {
    fail(origin, ": ", wiola::error_text(e));
  }
  po::notify(vm);
  return vm;
}

po::variables_map spec_from_profile(const MeasuredProfile& p, const std::string& origin,
                                    const std::vector<std::string>& assignments) {
  // The profiled model and layout on a one-node cluster with the measured
  // link and peak.
  po::variables_map vm;
  put_model_defaults(p.layout.model, vm);
  const RunLayout& l = p.layout;
  put_spec_default(vm, "run.pp", l.pp);
  put_spec_default(vm, "run.micro_batch", l.micro_batch);
  put_spec_default(vm, "run.global_batch", l.global_batch);
  put_spec_default(vm, "run.zero", l.zero);
  put_spec_default(vm, "run.overlap_comm", 0);  // a measured run's transport: MPI, no overlap
  put_spec_default(vm, "run.schedule", std::string(pipeline::schedule_kind_name(l.schedule)));
  if (l.virtual_stages > 1) put_spec_default(vm, "run.virtual_stages", l.virtual_stages);
  const double element = double(dtype_size(l.dtype));
  put_spec_default(vm, "run.activation_bytes", element);
  put_spec_default(vm, "run.grad_bytes", element);
  put_spec_default(vm, "run.param_bytes", element);
  put_spec_default(vm, "cluster.gpus_per_node", l.world());
  put_spec_default(vm, "cluster.nodes", 1);
  if (p.link.measured) {
    put_spec_default(vm, "cluster.intra_latency_us", p.link.latency_s / kSpecUs);
    put_spec_default(vm, "cluster.intra_bandwidth_GBps", p.link.bandwidth_Bps / kSpecGB);
  }
  put_spec_default(vm, "cluster.peak_tflops", p.peak_flops / 1e12);
  put_spec_default(vm, "times.profile", origin);
  store_assignments(assignments, vm);
  po::notify(vm);
  return vm;
}

bool SpecValues::has(const std::string& key) const {
  const auto it = vm_.find(key);
  return it != vm_.end() && !it->second.empty();
}

const po::variable_value* SpecValues::find(const std::string& key) const {
  if (!has(key)) return nullptr;
  read_.insert(key);
  return &vm_.at(key);
}

std::string SpecValues::text(const std::string& key, const std::string& fallback) const {
  const po::variable_value* v = find(key);
  return v ? v->as<std::string>() : fallback;
}

double SpecValues::number(const std::string& key, double fallback) const {
  const po::variable_value* v = find(key);
  return v ? v->as<double>() : fallback;
}

int SpecValues::integer(const std::string& key, int fallback) const {
  const po::variable_value* v = find(key);
  return v ? v->as<int>() : fallback;
}

std::vector<double> SpecValues::numbers(const std::string& key) const {
  const po::variable_value* v = find(key);
  return v ? v->as<Numbers>().items : std::vector<double>{};
}

std::vector<std::string> SpecValues::unused() const {
  std::vector<std::string> out;
  for (const auto& [key, value] : vm_)
    if (!value.defaulted() && !read_.count(key)) out.push_back(key);
  return out;
}

}  // namespace wiola::profile
