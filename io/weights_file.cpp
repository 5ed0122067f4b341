#include "io/weights_file.hpp"

#include <filesystem>
#include <limits>
#include <set>
#include <system_error>

#include "core/error.hpp"
#include "io/h5.hpp"
#include "io/model_config_io.hpp"
#include "core/param_layout.hpp"
#include "core/param_names.hpp"

namespace wiola {

using param_names::is_vector_param;

namespace {

h5::Shape file_shape(const std::string& name, std::int64_t rows, std::int64_t cols) {
  if (is_vector_param(name)) return {cols};
  return {rows, cols};
}

std::string shape_text(const h5::Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

void write_config(h5::File& f, const ModelConfig& c) {
  f.write_attr_string("format", kWeightsFormat);
  write_model_attrs(f, c);
}

ModelConfig read_config(const h5::File& f) {
  if (f.has_attr("format")) {
    const std::string format = f.read_attr_string("format");
    require(format == kWeightsFormat, f.path(), ": not a wiola weights file (attribute 'format' is '",
            format, "', expected '", kWeightsFormat, "')");
  }
  ModelConfig c = read_model_attrs(f);
  try {
    c.validate();
  } catch (const Error& e) {
    fail(f.path(), ": ", e.what());
  }
  return c;
}

}  // namespace

void write_weights_file(const std::string& path, const ModelConfig& config,
                        const std::vector<NamedArray>& arrays, DType file_dtype) {
  require(file_dtype == DType::F32 || file_dtype == DType::F64, path,
          ": weights files hold fp32 or fp64, not ", dtype_name(file_dtype));
  try {
    config.validate();
  } catch (const Error& e) {
    fail(path, ": ", e.what());
  }
  std::set<std::string> seen;
  for (const auto& a : arrays) {
    require(seen.insert(a.name).second, path, ": parameter '", a.name, "' is given twice");
    require(a.rows >= 0 && a.cols >= 0 &&
                static_cast<std::int64_t>(a.data.size()) == a.rows * a.cols,
            path, ": parameter '", a.name, "' is [", a.rows, ", ", a.cols, "] but holds ",
            a.data.size(), " values");
    require(!is_vector_param(a.name) || a.rows == 1, path, ": parameter '", a.name,
            "' is a vector and must have rows = 1, got ", a.rows);
  }
  const h5::Type type = file_dtype == DType::F32 ? h5::Type::F32 : h5::Type::F64;
  const std::string tmp = path + ".tmp";
  try {
    h5::File f = h5::File::create(tmp);
    write_config(f, config);
    for (const auto& a : arrays)
      f.write<double>(a.name, file_shape(a.name, a.rows, a.cols), a.data, type);
    f.close();
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    require(!ec, path, ": cannot rename ", tmp, " onto it: ", ec.message());
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw;
  }
}

WeightsFile read_weights_file(const std::string& path) {
  const h5::File f = h5::File::open_read(path);
  WeightsFile w;
  w.config = read_config(f);
  const ParamLayout layout(w.config, StageSpec::whole(w.config));
  for (const auto& p : layout.entries()) {
    require(f.has_dataset(p.name), path, ": parameter '", p.name, "' is missing");
    const h5::Shape want = file_shape(p.name, p.rows, p.cols);
    const h5::Shape got = f.shape(p.name);
    require(got == want, path, ": parameter '", p.name, "' has shape ", shape_text(got),
            ", expected ", shape_text(want));
    NamedArray a;
    a.name = p.name;
    a.rows = p.rows;
    a.cols = p.cols;
    a.data = f.read<double>(p.name);
    w.arrays.push_back(std::move(a));
  }
  return w;
}

std::vector<std::int32_t> read_token_matrix(const std::string& path, std::int64_t& rows,
                                            std::int64_t& cols) {
  const h5::File f = h5::File::open_read(path);
  require(f.has_dataset("tokens"), path, ": dataset 'tokens' is missing");
  const h5::Dataset ds = f.dataset("tokens");
  const h5::Shape s = ds.shape();
  require(s.size() == 2, path, ": dataset 'tokens' must be 2-D [B, T+1], it has shape ",
          shape_text(s));
  require(ds.holds_integers(), path, ": dataset 'tokens' must hold integers");
  const std::vector<std::int64_t> wide = f.read<std::int64_t>("tokens");
  std::vector<std::int32_t> out(wide.size());
  for (std::size_t i = 0; i < wide.size(); ++i) {
    require(wide[i] >= 0 && wide[i] <= std::numeric_limits<std::int32_t>::max(), path,
            ": token id ", wide[i], " at [", static_cast<std::int64_t>(i) / s[1], ", ",
            static_cast<std::int64_t>(i) % s[1], "] is not a valid id");
    out[i] = static_cast<std::int32_t>(wide[i]);
  }
  rows = s[0];
  cols = s[1];
  return out;
}

}  // namespace wiola
