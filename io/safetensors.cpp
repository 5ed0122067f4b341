#include "io/safetensors.hpp"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/text.hpp"
#include "io/checkpoint_manifest.hpp"
#include "io/model_config_io.hpp"

namespace wiola {

namespace {

using json = nlohmann::json;

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; this code assumes a little-endian host");

double half_to_double(std::uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1F, frac = h & 0x3FF;
  double v;
  if (exp == 0)
    v = std::ldexp(frac, -24);  // subnormal
  else if (exp == 31)
    v = frac ? NAN : INFINITY;
  else
    v = std::ldexp(1024 + frac, exp - 25);
  return sign ? -v : v;
}

double bf16_to_double(std::uint16_t b) {
  const std::uint32_t bits = std::uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

std::size_t dtype_bytes(const std::string& dt, const std::string& where) {
  if (dt == "F64") return 8;
  if (dt == "F32") return 4;
  if (dt == "BF16" || dt == "F16") return 2;
  fail(where, ": tensor dtype '", dt, "' is not supported (F64, F32, BF16, F16)");
}

}  // namespace

namespace {

std::uint16_t double_to_bf16(double v) {
  const float f = static_cast<float>(v);
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7F800000u) == 0x7F800000u && (bits & 0x7FFFFFu))
    return static_cast<std::uint16_t>((bits >> 16) | 0x40);  // NaN stays NaN
  bits += 0x7FFFu + ((bits >> 16) & 1u);                   // round to nearest even
  return static_cast<std::uint16_t>(bits >> 16);
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<SafeTensor>& tensors,
                       DType dtype, const std::map<std::string, std::string>& metadata) {
  require(dtype == DType::F32 || dtype == DType::F64 || dtype == DType::BF16,
          "safetensors export is fp32, fp64 or bf16");
  const std::size_t es = dtype_size(dtype);
  const char* name = dtype == DType::F64 ? "F64" : dtype == DType::BF16 ? "BF16" : "F32";
  json header = json::object();
  json meta = json::object();
  for (const auto& [k, v] : metadata) meta[k] = v;
  header["__metadata__"] = meta;
  std::size_t offset = 0;
  for (const SafeTensor& t : tensors) {
    std::int64_t n = 1;
    for (auto s : t.shape) n *= s;
    require(n == static_cast<std::int64_t>(t.data.size()), "safetensors: tensor '", t.name,
            "' has ", t.data.size(), " values for its shape");
    const std::size_t bytes = static_cast<std::size_t>(n) * es;
    header[t.name] = {{"dtype", name}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    require(out.good(), tmp, ": cannot create");
    const std::uint64_t n = h.size();
    out.write(reinterpret_cast<const char*>(&n), sizeof n);
    out.write(h.data(), static_cast<std::streamsize>(h.size()));
    for (const SafeTensor& t : tensors) {
      if (dtype == DType::F64) {
        out.write(reinterpret_cast<const char*>(t.data.data()),
                  static_cast<std::streamsize>(t.data.size() * 8));
      } else if (dtype == DType::BF16) {
        std::vector<std::uint16_t> b(t.data.size());
        for (std::size_t i = 0; i < b.size(); ++i) b[i] = double_to_bf16(t.data[i]);
        out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size() * 2));
      } else {
        std::vector<float> f(t.data.begin(), t.data.end());
        out.write(reinterpret_cast<const char*>(f.data()), static_cast<std::streamsize>(f.size() * 4));
      }
    }
    out.flush();
    require(out.good(), tmp, ": write failed");
  }
  require(std::rename(tmp.c_str(), path.c_str()) == 0, path, ": cannot rename ", tmp, " into place");
}

std::vector<SafeTensor> read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  require(in.good(), path, ": cannot be read");
  const auto file_size = static_cast<std::uint64_t>(in.tellg());
  in.seekg(0);
  std::uint64_t n = 0;
  require(file_size >= 8, path, ": too short for a safetensors file");
  in.read(reinterpret_cast<char*>(&n), sizeof n);
  require(n > 0 && n <= file_size - 8 && n < (std::uint64_t(1) << 30), path,
          ": header length ", n, " does not fit the file of ", file_size, " bytes");
  std::string h(static_cast<std::size_t>(n), '\0');
  in.read(h.data(), static_cast<std::streamsize>(n));
  json header;
  try {
    header = json::parse(h);
  } catch (const json::exception& e) {
    fail(path, ": the header is not valid JSON (", e.what(), ")");
  }
  require(header.is_object(), path, ": the header is not a JSON object");
  const std::uint64_t data_size = file_size - 8 - n;
  std::vector<SafeTensor> out;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string where = path + ": tensor '" + name + "'";
    require(info.is_object() && info.contains("dtype") && info.contains("shape") &&
                info.contains("data_offsets"),
            where, " lacks dtype, shape or data_offsets");
    SafeTensor t;
    t.name = name;
    const std::string dt = info["dtype"].get<std::string>();
    const std::size_t es = dtype_bytes(dt, where);
    std::int64_t count = 1;
    for (const auto& s : info["shape"]) {
      const auto d = s.get<std::int64_t>();
      require(d >= 0, where, " has a negative dimension");
      t.shape.push_back(d);
      count *= d;
    }
    const auto off = info["data_offsets"].get<std::vector<std::uint64_t>>();
    require(off.size() == 2 && off[0] <= off[1] && off[1] <= data_size, where,
            ": data_offsets outside the file's data");
    require(off[1] - off[0] == std::uint64_t(count) * es, where, ": ", off[1] - off[0],
            " bytes for ", count, " ", dt, " values");
    std::vector<char> raw(off[1] - off[0]);
    in.seekg(static_cast<std::streamoff>(8 + n + off[0]));
    in.read(raw.data(), static_cast<std::streamsize>(raw.size()));
    require(in.good(), where, ": cannot read its data");
    t.data.resize(static_cast<std::size_t>(count));
    for (std::size_t i = 0; i < t.data.size(); ++i) {
      const char* p = raw.data() + i * es;
      if (dt == "F64") {
        std::memcpy(&t.data[i], p, 8);
      } else if (dt == "F32") {
        float f;
        std::memcpy(&f, p, 4);
        t.data[i] = f;
      } else {
        std::uint16_t b;
        std::memcpy(&b, p, 2);
        t.data[i] = dt == "BF16" ? bf16_to_double(b) : half_to_double(b);
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

void write_hf_config(const std::string& path, const ModelConfig& c, const HfConfigExtras& x) {
  json j;
  j["model_type"] = "wiola";
  j["architectures"] = {"WiolaForCausalLM"};
  // transformers' trust_remote_code loads these from modeling_wiola.py beside it.
  j["auto_map"] = {{"AutoConfig", "modeling_wiola.WiolaConfig"},
                   {"AutoModelForCausalLM", "modeling_wiola.WiolaForCausalLM"}};
  j["torch_dtype"] = x.dtype == DType::F64 ? "float64" : x.dtype == DType::BF16 ? "bfloat16" : "float32";
  j["tie_word_embeddings"] = true;
  j["head_dim"] = c.head_dim();
  if (x.bos_token_id >= 0) j["bos_token_id"] = x.bos_token_id;
  if (x.eos_token_id >= 0) j["eos_token_id"] = x.eos_token_id;
  write_model_json(j, c);  // each field once: its Hugging Face name, else its own
  j["canonical_names"] = x.names;
  if (!x.wiola_version.empty()) j["wiola_version"] = x.wiola_version;
  write_text_file_atomic(path, j.dump(2) + "\n");
}

ModelConfig read_hf_config(const std::string& path) {
  json j;
  try {
    j = json::parse(read_text_file(path));
  } catch (const json::exception& e) {
    fail(path, ": not valid JSON (", e.what(), ")");
  }
  require(j.is_object() && j.value("model_type", "") == "wiola", path,
          ": model_type is not \"wiola\"");
  ModelConfig c;
  try {
    c = read_model_json(j);
    if (j.contains("head_dim"))
      require(c.H > 0 && j.at("head_dim").get<int>() * c.H == c.d, "head_dim ",
              j.at("head_dim").dump(), " is not hidden_size / num_attention_heads = ", c.d, " / ", c.H);
  } catch (const json::exception& e) {
    fail(path, ": ", e.what());
  } catch (const Error& e) {
    fail(path, ": ", e.what());
  }
  c.validate();
  return c;
}

}  // namespace wiola
