#include "io/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <climits>
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

namespace {
// The header length's two rules, checked before anything is sized by it.
void require_header_length(const std::string& path, std::uint64_t file_size,
                           std::uint64_t header_len) {
  require(header_len > 0 && header_len <= kSafetensorsMaxHeader, path, ": header length ",
          header_len, " is outside the format's limit of 1..", kSafetensorsMaxHeader, " bytes");
  require(file_size >= 8 && header_len <= file_size - 8, path, ": header length ", header_len,
          " does not fit the file of ", file_size, " bytes");
}
}  // namespace

std::vector<SafeTensorEntry> check_safetensors_header(const std::string& path,
                                                     std::uint64_t file_size,
                                                     std::uint64_t header_len,
                                                     const std::string& header_text) {
  require_header_length(path, file_size, header_len);
  require(header_text.size() == header_len, path, ": header is truncated");
  // nlohmann keeps the last of duplicate keys silently; the parser callback
  // sees every top-level key, so a duplicate is refused here.
  std::vector<std::string> keys;
  std::string dup;
  json header;
  try {
    header = json::parse(header_text, [&](int depth, json::parse_event_t ev, json& parsed) {
      if (ev == json::parse_event_t::key && depth == 1) {
        const auto& k = parsed.get_ref<const std::string&>();
        if (dup.empty() && std::find(keys.begin(), keys.end(), k) != keys.end()) dup = k;
        keys.push_back(k);
      }
      return true;
    });
  } catch (const json::exception& e) {
    fail(path, ": the header is not valid JSON (", e.what(), ")");
  }
  require(header.is_object(), path, ": the header is not a JSON object");
  require(dup.empty(), path, ": tensor '", dup, "': the name appears twice in the header");
  const std::uint64_t data_size = file_size - 8 - header_len;
  std::vector<SafeTensorEntry> out;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") {
      require(info.is_object(), path, ": __metadata__ is not a JSON object");
      for (const auto& [k, v] : info.items())
        require(v.is_string(), path, ": __metadata__ value '", k, "' is not a string");
      continue;
    }
    const std::string where = path + ": tensor '" + name + "'";
    require(info.is_object() && info.contains("dtype") && info.contains("shape") &&
                info.contains("data_offsets"),
            where, " lacks dtype, shape or data_offsets");
    SafeTensorEntry t;
    t.name = name;
    require(info["dtype"].is_string(), where, ": dtype is not a string");
    t.dtype = info["dtype"].get<std::string>();
    const std::size_t es = dtype_bytes(t.dtype, where);
    require(info["shape"].is_array(), where, ": shape is not an array");
    std::uint64_t count = 1;
    for (const auto& s : info["shape"]) {
      require(s.is_number_integer(), where, ": shape has a dimension that is not an integer");
      require(s.is_number_unsigned() || s.get<std::int64_t>() >= 0, where,
              " has a negative dimension");
      const auto d = s.get<std::uint64_t>();
      require(d <= std::uint64_t(INT64_MAX), where, ": dimension ", d, " is too large");
      std::uint64_t next = 0;
      require(!__builtin_mul_overflow(count, d, &next), where,
              ": the shape's element count overflows 64 bits");
      count = next;
      t.shape.push_back(static_cast<std::int64_t>(d));
    }
    const auto& o = info["data_offsets"];
    require(o.is_array() && o.size() == 2 && o[0].is_number_unsigned() && o[1].is_number_unsigned(),
            where, ": data_offsets is not a pair of non-negative integers");
    t.begin = o[0].get<std::uint64_t>();
    t.end = o[1].get<std::uint64_t>();
    require(t.begin <= t.end, where, ": data_offsets [", t.begin, ", ", t.end, "] run backwards");
    require(t.end <= data_size, where, ": data_offsets end ", t.end, " runs past the ",
            data_size, " bytes of data");
    std::uint64_t want = 0;
    require(!__builtin_mul_overflow(count, std::uint64_t(es), &want) && t.end - t.begin == want,
            where, ": ", t.end - t.begin, " bytes for ", count, " ", t.dtype,
            " values (dtype size x elements)");
    t.elements = count;
    out.push_back(std::move(t));
  }
  // The byte ranges, in order, tile the data exactly: no overlap, no gap.
  std::vector<const SafeTensorEntry*> by_off;
  for (const auto& t : out) by_off.push_back(&t);
  std::sort(by_off.begin(), by_off.end(), [](const SafeTensorEntry* a, const SafeTensorEntry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  std::uint64_t at = 0;
  for (const SafeTensorEntry* t : by_off) {
    const std::string where = path + ": tensor '" + t->name + "'";
    require(t->begin >= at, where, ": data_offsets [", t->begin, ", ", t->end,
            "] overlap the previous tensor's bytes (which end at ", at, ")");
    require(t->begin == at, where, ": data_offsets [", t->begin, ", ", t->end,
            "] leave a gap after byte ", at);
    at = t->end;
  }
  require(at == data_size, path, ": the tensors cover ", at, " of the ", data_size,
          " data bytes; the rest is unaccounted for");
  return out;
}

std::vector<SafeTensor> read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  require(in.good(), path, ": cannot be read");
  const auto file_size = static_cast<std::uint64_t>(in.tellg());
  in.seekg(0);
  std::uint64_t n = 0;
  require(file_size >= 8, path, ": too short for a safetensors file");
  in.read(reinterpret_cast<char*>(&n), sizeof n);
  // Bounds first: nothing is allocated from the file's numbers before this.
  require_header_length(path, file_size, n);
  std::string h(static_cast<std::size_t>(n), '\0');
  in.read(h.data(), static_cast<std::streamsize>(n));
  require(in.good(), path, ": cannot read its header");
  const auto entries = check_safetensors_header(path, file_size, n, h);
  std::vector<SafeTensor> out;
  for (const SafeTensorEntry& e : entries) {
    const std::string where = path + ": tensor '" + e.name + "'";
    const std::size_t es = dtype_bytes(e.dtype, where);
    SafeTensor t;
    t.name = e.name;
    t.shape = e.shape;
    std::vector<char> raw(e.end - e.begin);
    in.seekg(static_cast<std::streamoff>(8 + n + e.begin));
    in.read(raw.data(), static_cast<std::streamsize>(raw.size()));
    require(in.good(), where, ": cannot read its data");
    t.data.resize(static_cast<std::size_t>(e.elements));
    for (std::size_t i = 0; i < t.data.size(); ++i) {
      const char* p = raw.data() + i * es;
      if (e.dtype == "F64") {
        std::memcpy(&t.data[i], p, 8);
      } else if (e.dtype == "F32") {
        float f;
        std::memcpy(&f, p, 4);
        t.data[i] = f;
      } else {
        std::uint16_t b;
        std::memcpy(&b, p, 2);
        t.data[i] = e.dtype == "BF16" ? bf16_to_double(b) : half_to_double(b);
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
  require(j.is_object(), path, ": not a JSON object");
  // value() throws type_error when the key holds a non-string: check the type first.
  require(j.contains("model_type") && j["model_type"].is_string() &&
              j["model_type"].get<std::string>() == "wiola",
          path, ": model_type is not \"wiola\"");
  ModelConfig c;
  try {
    c = read_model_json(j);
    if (j.contains("head_dim"))
      require(c.H > 0 && j.at("head_dim").get<int>() * c.H == c.d, "head_dim ",
              j.at("head_dim").dump(), " is not hidden_size / num_attention_heads = ", c.d, " / ", c.H);
    c.validate();  // inside: its refusal names the file too
  } catch (const json::exception& e) {
    fail(path, ": ", e.what());
  } catch (const Error& e) {
    fail(path, ": ", e.what());
  }
  return c;
}

}  // namespace wiola
