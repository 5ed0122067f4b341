#include "wiola-profile/counted_work.hpp"

#include <array>
#include <cstdio>

#include "core/error.hpp"
#include "core/model_fields.hpp"
#include "wiola-profile/files.hpp"

namespace wiola::profile {

namespace {

// The model the file counted, from its fields as text (core/model_fields.hpp).
ModelConfig counted_model(const Json& fields, const std::string& path) {
  ModelConfig c;
  for (const ModelField& f : model_fields()) {
    const auto it = fields.find(f.key);
    require(it != fields.end() && it->is_string(), path, ": model field '", f.key,
            "' is missing (count again with tools/gpu-counts.sh --json)");
    const std::string v = it->get<std::string>();
    try {
      switch (f.kind()) {
        case FieldKind::Int: f.set_int(c, std::stoi(v)); break;
        case FieldKind::Real: f.set_real(c, std::stod(v)); break;
        case FieldKind::Choice: f.set_choice(c, v); break;
      }
    } catch (const std::logic_error&) {
      fail(path, ": model field '", f.key, "' = '", v, "' is not a number");
    }
  }
  return c;
}

// Work's kinds, each fitted and priced on its own.
constexpr double Work::*kKinds[] = {&Work::gemm_flops, &Work::attention_flops, &Work::bytes,
                                    &Work::operations};

// q(b, t) = f + b (α t + β t²) through the three shapes (B, T), (2B, T),
// (B, 2T), at (b, t).
double fit(const std::array<double, 3>& q, double B, double T, double b, double t) {
  const double per_seq = (q[1] - q[0]) / B;  // α T + β T²
  const double fixed = q[0] - B * per_seq;
  const double per_seq2 = (q[2] - fixed) / B;  // 2 α T + 4 β T²
  const double beta = (per_seq2 - 2 * per_seq) / (2 * T * T);
  const double alpha = (per_seq - beta * T * T) / T;
  return fixed + b * (alpha * t + beta * t * t);
}

// The counts document fitted to the target (read_counted_work).
CountedWork fit_counts(const Json& j, const std::string& path, const ModelConfig& model,
                       int micro_batch, int seq) {
  require(j.is_object() && j.value("format", "") == "wiola-device-counts", path,
          ": not a counts file (tools/gpu-counts.sh --json writes one)");
  require(j.value("version", 0) == 1, path, ": counts format version ",
          j.value("version", 0), " is not 1");
  ModelConfig counted = counted_model(j.at("model"), path);
  counted.L = model.L;  // the counts are per layer: any depth
  const std::string diff = model_differences(counted, model, FieldSet::Stored);
  require(diff.empty(), path, ": counted other widths than the target's (", diff,
          "); count the target's preset with tools/gpu-counts.sh --json");

  const Json& shapes = j.at("shapes");
  require(shapes.is_array() && shapes.size() == 3, path, ": needs three shapes, has ",
          shapes.is_array() ? shapes.size() : 0);
  std::array<int, 3> b{}, t{};
  for (std::size_t i = 0; i < 3; ++i) {
    b[i] = shapes[i].at("batch").get<int>();
    t[i] = shapes[i].at("seq").get<int>();
  }
  require(b[0] >= 1 && t[0] >= 1 && b[1] == 2 * b[0] && t[1] == t[0] && b[2] == b[0] &&
              t[2] == 2 * t[0],
          path, ": the shapes must be (B, T), (2B, T) and (B, 2T); they are (", b[0], ", ", t[0],
          "), (", b[1], ", ", t[1], "), (", b[2], ", ", t[2], ")");
  require(t[0] % 128 == 0, path, ": counted at ", t[0], " tokens a sequence, not a multiple of "
          "128 (the attention forward's 128-row query tile), so the tiles' work does not fit t "
          "and t²; count again with --seq 128");

  CountedWork w;
  w.file = path;
  w.micro_batch = micro_batch;
  w.seq = seq;
  char buf[200];
  std::snprintf(buf, sizeof buf, "%s widths, %s, counted at %dx%d, %dx%d and %dx%d tokens",
                j.value("preset", std::string("?")).c_str(),
                j.value("dtype", std::string("?")).c_str(), b[0], t[0], b[1], t[1], b[2], t[2]);
  w.counted = buf;
  const auto part = [&](const char* name) {
    CountedPart p;
    for (const char* pass : {"forward", "backward"}) {
      std::array<Work, 3> q;
      for (std::size_t i = 0; i < 3; ++i)
        q[i] = counted_pass(shapes[i].at(name).at(pass),
                            path + ": shape " + std::to_string(i + 1) + ", " + name + "." + pass);
      Work& out = std::string(pass) == "forward" ? p.forward : p.backward;
      for (double Work::*kind : kKinds)
        out.*kind = fit({q[0].*kind, q[1].*kind, q[2].*kind}, b[0], t[0], micro_batch, seq);
    }
    return p;
  };
  w.atm_layer = part("atm_layer");
  w.plain_layer = part("plain_layer");
  w.embedding = part("embedding");
  const CountedPart last = part("last_layer_and_head");
  const auto less = [](Work x, const Work& y) {
    for (double Work::*kind : kKinds) x.*kind -= y.*kind;
    return x;
  };
  w.head = {less(last.forward, w.plain_layer.forward),
            less(last.backward, w.plain_layer.backward)};
  return w;
}

}  // namespace

Work counted_pass(const Json& pass, const std::string& where) {
  const auto get = [&](const char* key) {
    const auto it = pass.find(key);
    require(it != pass.end() && it->is_number(), where, ": '", key, "' is missing");
    return it->get<double>();
  };
  return {get("gemm_flops"), get("attention_flops"), get("non_gemm_bytes"),
          get("device_operations")};
}

CountedWork read_counted_work(const std::string& path, const ModelConfig& model,
                              int micro_batch, int seq) {
  const Json j = read_json_file(path);
  try {
    return fit_counts(j, path, model, micro_batch, seq);
  } catch (const nlohmann::json::exception& e) {
    fail(path, ": ", e.what());
  }
}

LayerTimes counted_layer_times(const CountedWork& w, const ModelConfig& model,
                               const Ceilings& c) {
  const auto times = [&](const CountedPart& p) {
    return PartTimes{time_of(p.forward, c).total(), time_of(p.backward, c).total()};
  };
  LayerTimes t;
  t.micro_batch = w.micro_batch;
  for (int l = 0; l < model.L; ++l)
    t.layers.push_back(times(model.atm_layer(l) ? w.atm_layer : w.plain_layer));
  t.embed = times(w.embedding);
  t.head = times(w.head);
  return t;
}

}  // namespace wiola::profile
