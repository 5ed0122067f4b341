#include "io/h5.hpp"

#include <hdf5.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <mutex>
#include <type_traits>

#include "core/error.hpp"

static_assert(std::is_same_v<hid_t, std::int64_t>, "h5.hpp stores hid_t as int64_t");

namespace wiola::h5 {

std::string shape_text(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

namespace {

// Every entry point takes this lock; it also switches HDF5's automatic
// error-stack printing off (per thread in thread-safe builds, so each time).
std::unique_lock<std::recursive_mutex> lib_lock() {
  static std::recursive_mutex m;
  std::unique_lock<std::recursive_mutex> lock(m);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  return lock;
}

// Owns one HDF5 identifier and closes it with the matching H5?close.
class Id {
 public:
  using Closer = herr_t (*)(hid_t);
  Id(hid_t id, Closer close) : id_(id), close_(close) {}
  Id(Id&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = -1; }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  Id& operator=(Id&&) = delete;
  ~Id() {
    if (id_ >= 0) close_(id_);
  }
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  Closer close_;
};

Id space(hid_t id) { return Id(id, H5Sclose); }
Id dtype(hid_t id) { return Id(id, H5Tclose); }
Id plist(hid_t id) { return Id(id, H5Pclose); }
Id object(hid_t id) { return Id(id, H5Oclose); }

hid_t mem_type(Type t) {
  switch (t) {
    case Type::F32: return H5T_NATIVE_FLOAT;
    case Type::F64: return H5T_NATIVE_DOUBLE;
    case Type::I32: return H5T_NATIVE_INT32;
    case Type::U16: return H5T_NATIVE_UINT16;
    case Type::U32: return H5T_NATIVE_UINT32;
    case Type::U64: return H5T_NATIVE_UINT64;
    case Type::I64: return H5T_NATIVE_INT64;
    case Type::U8: return H5T_NATIVE_UINT8;
  }
  return -1;
}

hid_t disk_type(Type t) {
  switch (t) {
    case Type::F32: return H5T_IEEE_F32LE;
    case Type::F64: return H5T_IEEE_F64LE;
    case Type::I32: return H5T_STD_I32LE;
    case Type::U16: return H5T_STD_U16LE;
    case Type::U32: return H5T_STD_U32LE;
    case Type::U64: return H5T_STD_U64LE;
    case Type::I64: return H5T_STD_I64LE;
    case Type::U8: return H5T_STD_U8LE;
  }
  return -1;
}

std::string quoted(const std::string& name) { return "'" + name + "'"; }

// "attribute 'a'" on the root, "attribute 'a' of 'obj'" elsewhere.
std::string attr_where(const std::string& attr, const std::string& object) {
  std::string s = "attribute " + quoted(attr);
  if (object != "/" && !object.empty()) s += " of " + quoted(object);
  return s;
}

// True when every link on the path exists (H5Lexists needs the parents to).
bool path_exists(hid_t loc, const std::string& name) {
  if (name.empty() || name == "/") return true;
  std::size_t pos = name[0] == '/' ? 1 : 0;
  while (true) {
    const std::size_t slash = name.find('/', pos);
    const std::string prefix = name.substr(0, slash);
    if (H5Lexists(loc, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (slash == std::string::npos) return true;
    pos = slash + 1;
  }
}

H5I_type_t object_kind(hid_t loc, const std::string& name) {
  if (!path_exists(loc, name)) return H5I_BADID;
  Id o = object(H5Oopen(loc, name.c_str(), H5P_DEFAULT));
  if (!o.ok()) return H5I_BADID;
  return H5Iget_type(o.get());
}

Type type_of_file(hid_t t, const std::string& where) {
  const H5T_class_t cls = H5Tget_class(t);
  const std::size_t size = H5Tget_size(t);
  if (cls == H5T_FLOAT) {
    if (size == 4) return Type::F32;
    if (size == 8) return Type::F64;
  } else if (cls == H5T_INTEGER) {
    const bool sign = H5Tget_sign(t) == H5T_SGN_2;
    if (sign && size == 4) return Type::I32;
    if (sign && size == 8) return Type::I64;
    if (!sign && size == 1) return Type::U8;
    if (!sign && size == 2) return Type::U16;
    if (!sign && size == 4) return Type::U32;
    if (!sign && size == 8) return Type::U64;
  }
  fail(where, " has an unsupported element type (class ", static_cast<int>(cls), ", ", size,
       " bytes)");
}

bool numeric_class(hid_t t) {
  const H5T_class_t cls = H5Tget_class(t);
  return cls == H5T_INTEGER || cls == H5T_FLOAT;
}

Shape extent(hid_t sp) {
  const int rank = H5Sget_simple_extent_ndims(sp);
  if (rank <= 0) return {};
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(sp, dims.data(), nullptr);
  return Shape(dims.begin(), dims.end());
}

std::string number_text(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

}  // namespace

std::string_view type_name(Type t) {
  switch (t) {
    case Type::F32: return "float32";
    case Type::F64: return "float64";
    case Type::I32: return "int32";
    case Type::U16: return "uint16";
    case Type::U32: return "uint32";
    case Type::U64: return "uint64";
    case Type::I64: return "int64";
    case Type::U8: return "uint8";
  }
  return "?";
}

std::size_t type_size(Type t) {
  switch (t) {
    case Type::U8: return 1;
    case Type::U16: return 2;
    case Type::F32:
    case Type::I32:
    case Type::U32: return 4;
    case Type::F64:
    case Type::U64:
    case Type::I64: return 8;
  }
  return 0;
}

bool is_integer(Type t) { return t != Type::F32 && t != Type::F64; }

std::int64_t numel(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

// ---------------------------------------------------------------- File ----

File File::create(const std::string& path) {
  auto lock = lib_lock();
  // No creation and modification times in object headers: the same content
  // makes the same bytes (reproducible token shards and checkpoints).
  Id fcpl = plist(H5Pcreate(H5P_FILE_CREATE));
  H5Pset_obj_track_times(fcpl.get(), 0);
  const hid_t id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl.get(), H5P_DEFAULT);
  require(id >= 0, path, ": cannot create the file (does its directory exist and is it writable?)");
  return File(path, id);
}

namespace {
hid_t open_existing(const std::string& path, unsigned flags) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  require(std::filesystem::exists(st), path, ": no such file");
  require(!std::filesystem::is_directory(st), path, ": is a directory, not an HDF5 file");
#if H5_VERSION_GE(1, 12, 0)
  const htri_t is_h5 = H5Fis_accessible(path.c_str(), H5P_DEFAULT);
#else
  const htri_t is_h5 = H5Fis_hdf5(path.c_str());
#endif
  require(is_h5 > 0, path, ": not an HDF5 file");
  // Readers keep HDF5's file locks where the file system has them and go on
  // without where it has not (parallel file systems), so many ranks can open
  // the same read-only files at once.
  Id fapl = plist(H5Pcreate(H5P_FILE_ACCESS));
#if H5_VERSION_GE(1, 10, 7)
  H5Pset_file_locking(fapl.get(), 1, 1);
#endif
  const hid_t id = H5Fopen(path.c_str(), flags, fapl.get());
  require(id >= 0, path, ": cannot open the HDF5 file",
          flags == H5F_ACC_RDWR ? " for writing" : "",
          " (truncated or damaged, unreadable, or locked by a writer?)");
  return id;
}
}  // namespace

File File::open_read(const std::string& path) {
  auto lock = lib_lock();
  return File(path, open_existing(path, H5F_ACC_RDONLY));
}

File File::open_rw(const std::string& path) {
  auto lock = lib_lock();
  return File(path, open_existing(path, H5F_ACC_RDWR));
}

File::File(File&& o) noexcept : path_(std::move(o.path_)), id_(o.id_) { o.id_ = -1; }

File& File::operator=(File&& o) noexcept {
  if (this != &o) {
    if (id_ >= 0) {
      auto lock = lib_lock();
      H5Fclose(id_);
    }
    path_ = std::move(o.path_);
    id_ = o.id_;
    o.id_ = -1;
  }
  return *this;
}

File::~File() {
  if (id_ >= 0) {
    auto lock = lib_lock();
    H5Fclose(id_);
  }
}

void File::close() {
  if (id_ < 0) return;
  auto lock = lib_lock();
  const herr_t flushed = H5Fflush(id_, H5F_SCOPE_LOCAL);
  const herr_t closed = H5Fclose(id_);
  id_ = -1;
  require(flushed >= 0 && closed >= 0, path_, ": writing the file failed (disk full?)");
}

bool File::has_dataset(const std::string& name) const {
  auto lock = lib_lock();
  return object_kind(id_, name) == H5I_DATASET;
}

bool File::has_group(const std::string& name) const {
  auto lock = lib_lock();
  return object_kind(id_, name) == H5I_GROUP;
}

void File::create_group(const std::string& name) {
  auto lock = lib_lock();
  const H5I_type_t kind = object_kind(id_, name);
  if (kind == H5I_GROUP) return;
  require(kind == H5I_BADID, path_, ": cannot create group ", quoted(name),
          ": another object has that name");
  Id lcpl = plist(H5Pcreate(H5P_LINK_CREATE));
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  Id gcpl = plist(H5Pcreate(H5P_GROUP_CREATE));
  H5Pset_obj_track_times(gcpl.get(), 0);
  Id g(H5Gcreate2(id_, name.c_str(), lcpl.get(), gcpl.get(), H5P_DEFAULT), H5Gclose);
  require(g.ok(), path_, ": cannot create group ", quoted(name));
}

void File::check_count(const std::string& name, const Shape& shape, std::size_t n) const {
  require(numel(shape) == static_cast<std::int64_t>(n), path_, ": dataset ", quoted(name),
          ": shape ", shape_text(shape), " holds ", numel(shape), " elements but ", n,
          " were given");
}

void File::write_raw(const std::string& name, const Shape& shape, Type mem, const void* data,
                     Type file_type) {
  auto lock = lib_lock();
  require(object_kind(id_, name) == H5I_BADID, path_, ": dataset ", quoted(name),
          " already exists");
  for (auto d : shape)
    require(d >= 0, path_, ": dataset ", quoted(name), ": negative dimension in ",
            shape_text(shape));
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  Id sp = space(shape.empty() ? H5Screate(H5S_SCALAR)
                              : H5Screate_simple(static_cast<int>(dims.size()), dims.data(),
                                                 nullptr));
  Id lcpl = plist(H5Pcreate(H5P_LINK_CREATE));
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  Id dcpl = plist(H5Pcreate(H5P_DATASET_CREATE));
  H5Pset_obj_track_times(dcpl.get(), 0);
  Id ds(H5Dcreate2(id_, name.c_str(), disk_type(file_type), sp.get(), lcpl.get(), dcpl.get(),
                   H5P_DEFAULT),
        H5Dclose);
  require(sp.ok() && ds.ok(), path_, ": cannot create dataset ", quoted(name));
  if (numel(shape) > 0)
    require(H5Dwrite(ds.get(), mem_type(mem), H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0, path_,
            ": writing dataset ", quoted(name), " failed");
}

Dataset File::create_extendible(const std::string& name, Type file_type, std::int64_t chunk) {
  auto lock = lib_lock();
  require(chunk > 0, path_, ": dataset ", quoted(name), ": chunk size must be positive");
  require(object_kind(id_, name) == H5I_BADID, path_, ": dataset ", quoted(name),
          " already exists");
  const hsize_t dims = 0, maxdims = H5S_UNLIMITED, chunk_dims = static_cast<hsize_t>(chunk);
  Id sp = space(H5Screate_simple(1, &dims, &maxdims));
  Id dcpl = plist(H5Pcreate(H5P_DATASET_CREATE));
  H5Pset_chunk(dcpl.get(), 1, &chunk_dims);
  H5Pset_obj_track_times(dcpl.get(), 0);
  Id lcpl = plist(H5Pcreate(H5P_LINK_CREATE));
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  const hid_t ds = H5Dcreate2(id_, name.c_str(), disk_type(file_type), sp.get(), lcpl.get(),
                              dcpl.get(), H5P_DEFAULT);
  require(ds >= 0, path_, ": cannot create dataset ", quoted(name));
  return Dataset(path_, name, ds);
}

Dataset File::dataset(const std::string& name, Access access) const {
  auto lock = lib_lock();
  require(object_kind(id_, name) == H5I_DATASET, path_, ": dataset ", quoted(name),
          " is missing");
  Id dapl = plist(H5Pcreate(H5P_DATASET_ACCESS));
  if (access == Access::Random)
    H5Pset_chunk_cache(dapl.get(), H5D_CHUNK_CACHE_NSLOTS_DEFAULT, 0, H5D_CHUNK_CACHE_W0_DEFAULT);
  const hid_t ds = H5Dopen2(id_, name.c_str(), dapl.get());
  require(ds >= 0, path_, ": cannot open dataset ", quoted(name));
  return Dataset(path_, name, ds);
}

Shape File::shape(const std::string& name) const { return dataset(name).shape(); }

Type File::file_type(const std::string& name) const { return dataset(name).file_type(); }

void File::read_raw(const std::string& name, Type mem, void* out, std::size_t capacity,
                    Shape* shape) const {
  auto lock = lib_lock();
  Dataset ds = dataset(name);
  const hid_t id = static_cast<hid_t>(ds.id_);
  Id t = dtype(H5Dget_type(id));
  require(numeric_class(t.get()), path_, ": dataset ", quoted(name), " is not numeric");
  Id sp = space(H5Dget_space(id));
  const Shape s = extent(sp.get());
  require(numel(s) == static_cast<std::int64_t>(capacity), path_, ": dataset ", quoted(name),
          " has shape ", shape_text(s), ", expected ", capacity, " elements");
  if (capacity > 0)
    require(H5Dread(id, mem_type(mem), H5S_ALL, H5S_ALL, H5P_DEFAULT, out) >= 0, path_,
            ": reading dataset ", quoted(name), " as ", type_name(mem), " failed");
  if (shape) *shape = s;
}

std::vector<std::string> File::list_datasets(const std::string& group) const {
  auto lock = lib_lock();
  require(object_kind(id_, group) == H5I_GROUP, path_, ": group ", quoted(group), " is missing");
  Id g(H5Gopen2(id_, group.c_str(), H5P_DEFAULT), H5Gclose);
  H5G_info_t info;
  require(g.ok() && H5Gget_info(g.get(), &info) >= 0, path_, ": cannot list group ",
          quoted(group));
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t len =
        H5Lget_name_by_idx(g.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (len < 0) continue;
    std::string name(static_cast<std::size_t>(len) + 1, '\0');
    H5Lget_name_by_idx(g.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(),
                       H5P_DEFAULT);
    name.resize(static_cast<std::size_t>(len));
    if (object_kind(g.get(), name) == H5I_DATASET) names.push_back(std::move(name));
  }
  return names;
}

// ---------------------------------------------------------- attributes ----

namespace {

Id open_object(hid_t file, const std::string& path, const std::string& object) {
  const std::string obj = object.empty() ? "/" : object;
  require(obj == "/" || object_kind(file, obj) != H5I_BADID, path, ": object ", quoted(obj),
          " is missing");
  Id o = Id(H5Oopen(file, obj.c_str(), H5P_DEFAULT), H5Oclose);
  require(o.ok(), path, ": cannot open object ", quoted(obj));
  return o;
}

// The open attribute plus its stored type and element count.
struct OpenAttr {
  Id attr;
  Id type;
  hssize_t count;
};

OpenAttr open_attr(hid_t file, const std::string& path, const std::string& attr,
                   const std::string& object) {
  Id o = open_object(file, path, object);
  require(H5Aexists(o.get(), attr.c_str()) > 0, path, ": ", attr_where(attr, object),
          " is missing");
  Id a(H5Aopen(o.get(), attr.c_str(), H5P_DEFAULT), H5Aclose);
  require(a.ok(), path, ": cannot open ", attr_where(attr, object));
  Id t = dtype(H5Aget_type(a.get()));
  Id sp = space(H5Aget_space(a.get()));
  return OpenAttr{std::move(a), std::move(t), H5Sget_simple_extent_npoints(sp.get())};
}

void write_attr(hid_t file, const std::string& path, const std::string& attr,
                const std::string& object, hid_t file_type, hid_t mem, const void* value) {
  Id o = open_object(file, path, object);
  if (H5Aexists(o.get(), attr.c_str()) > 0) H5Adelete(o.get(), attr.c_str());
  Id sp = space(H5Screate(H5S_SCALAR));
  Id a(H5Acreate2(o.get(), attr.c_str(), file_type, sp.get(), H5P_DEFAULT, H5P_DEFAULT),
       H5Aclose);
  require(a.ok() && H5Awrite(a.get(), mem, value) >= 0, path, ": cannot write ",
          attr_where(attr, object));
}

herr_t collect_attr_name(hid_t, const char* name, const H5A_info_t*, void* out) {
  static_cast<std::vector<std::string>*>(out)->emplace_back(name);
  return 0;
}

}  // namespace

bool File::has_attr(const std::string& attr, const std::string& object) const {
  auto lock = lib_lock();
  Id o = open_object(id_, path_, object);
  return H5Aexists(o.get(), attr.c_str()) > 0;
}

void File::write_attr_int(const std::string& attr, std::int64_t v, const std::string& object) {
  auto lock = lib_lock();
  write_attr(id_, path_, attr, object, H5T_STD_I64LE, H5T_NATIVE_INT64, &v);
}

void File::write_attr_double(const std::string& attr, double v, const std::string& object) {
  auto lock = lib_lock();
  write_attr(id_, path_, attr, object, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v);
}

void File::write_attr_string(const std::string& attr, const std::string& v,
                             const std::string& object) {
  auto lock = lib_lock();
  // Fixed-length, NUL-terminated UTF-8: readable by h5dump and h5py alike.
  Id t = dtype(H5Tcopy(H5T_C_S1));
  H5Tset_size(t.get(), v.size() + 1);
  H5Tset_strpad(t.get(), H5T_STR_NULLTERM);
  H5Tset_cset(t.get(), H5T_CSET_UTF8);
  write_attr(id_, path_, attr, object, t.get(), t.get(), v.c_str());
}

std::int64_t File::read_attr_int(const std::string& attr, const std::string& object) const {
  auto lock = lib_lock();
  OpenAttr a = open_attr(id_, path_, attr, object);
  const H5T_class_t cls = H5Tget_class(a.type.get());
  require(cls == H5T_INTEGER || cls == H5T_FLOAT, path_, ": ", attr_where(attr, object),
          " is not a number");
  require(a.count == 1, path_, ": ", attr_where(attr, object), " holds ", a.count,
          " values, expected one");
  if (cls == H5T_INTEGER) {
    std::int64_t v = 0;
    require(H5Aread(a.attr.get(), H5T_NATIVE_INT64, &v) >= 0, path_, ": cannot read ",
            attr_where(attr, object));
    return v;
  }
  double v = 0;
  require(H5Aread(a.attr.get(), H5T_NATIVE_DOUBLE, &v) >= 0, path_, ": cannot read ",
          attr_where(attr, object));
  require(std::isfinite(v) && v == std::trunc(v) && std::fabs(v) < 9.2e18, path_, ": ",
          attr_where(attr, object), " = ", number_text(v), " is not an integer");
  return static_cast<std::int64_t>(v);
}

double File::read_attr_double(const std::string& attr, const std::string& object) const {
  auto lock = lib_lock();
  OpenAttr a = open_attr(id_, path_, attr, object);
  require(numeric_class(a.type.get()), path_, ": ", attr_where(attr, object), " is not a number");
  require(a.count == 1, path_, ": ", attr_where(attr, object), " holds ", a.count,
          " values, expected one");
  double v = 0;
  require(H5Aread(a.attr.get(), H5T_NATIVE_DOUBLE, &v) >= 0, path_, ": cannot read ",
          attr_where(attr, object));
  return v;
}

std::string File::read_attr_string(const std::string& attr, const std::string& object) const {
  auto lock = lib_lock();
  OpenAttr a = open_attr(id_, path_, attr, object);
  require(H5Tget_class(a.type.get()) == H5T_STRING, path_, ": ", attr_where(attr, object),
          " is not a string");
  require(a.count == 1, path_, ": ", attr_where(attr, object), " holds ", a.count,
          " strings, expected one");
  if (H5Tis_variable_str(a.type.get()) > 0) {
    Id mem = dtype(H5Tcopy(H5T_C_S1));
    H5Tset_size(mem.get(), H5T_VARIABLE);
    H5Tset_cset(mem.get(), H5Tget_cset(a.type.get()));
    char* p = nullptr;
    require(H5Aread(a.attr.get(), mem.get(), &p) >= 0, path_, ": cannot read ",
            attr_where(attr, object));
    std::string s = p ? p : "";
    H5free_memory(p);
    return s;
  }
  std::string buf(H5Tget_size(a.type.get()), '\0');
  require(H5Aread(a.attr.get(), a.type.get(), buf.data()) >= 0, path_, ": cannot read ",
          attr_where(attr, object));
  const std::size_t nul = buf.find('\0');
  if (nul != std::string::npos) buf.resize(nul);
  if (H5Tget_strpad(a.type.get()) == H5T_STR_SPACEPAD) {
    const std::size_t end = buf.find_last_not_of(' ');
    buf.resize(end == std::string::npos ? 0 : end + 1);
  }
  return buf;
}

std::vector<std::string> File::list_attrs(const std::string& object) const {
  auto lock = lib_lock();
  Id o = open_object(id_, path_, object);
  std::vector<std::string> names;
  require(H5Aiterate2(o.get(), H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_attr_name, &names) >=
              0,
          path_, ": cannot list the attributes of ", quoted(object));
  return names;
}

std::string File::attr_as_text(const std::string& attr, const std::string& object) const {
  auto lock = lib_lock();
  H5T_class_t cls;
  hssize_t count;
  {
    OpenAttr a = open_attr(id_, path_, attr, object);
    cls = H5Tget_class(a.type.get());
    count = a.count;
  }
  if (count != 1) return std::to_string(count).append(" values");
  if (cls == H5T_STRING) return read_attr_string(attr, object);
  if (cls == H5T_INTEGER) return std::to_string(read_attr_int(attr, object));
  if (cls == H5T_FLOAT) return number_text(read_attr_double(attr, object));
  return "(unsupported type)";
}

// ------------------------------------------------------------- Dataset ----

Dataset::Dataset(Dataset&& o) noexcept
    : file_(std::move(o.file_)), name_(std::move(o.name_)), id_(o.id_) {
  o.id_ = -1;
}

Dataset& Dataset::operator=(Dataset&& o) noexcept {
  if (this != &o) {
    if (id_ >= 0) {
      auto lock = lib_lock();
      H5Dclose(id_);
    }
    file_ = std::move(o.file_);
    name_ = std::move(o.name_);
    id_ = o.id_;
    o.id_ = -1;
  }
  return *this;
}

Dataset::~Dataset() {
  if (id_ >= 0) {
    auto lock = lib_lock();
    H5Dclose(id_);
  }
}

std::string Dataset::where() const { return file_ + ": dataset " + quoted(name_); }

Shape Dataset::shape() const {
  auto lock = lib_lock();
  Id sp = space(H5Dget_space(id_));
  require(sp.ok(), where(), ": cannot read its shape");
  return extent(sp.get());
}

Type Dataset::file_type() const {
  auto lock = lib_lock();
  Id t = dtype(H5Dget_type(id_));
  require(t.ok(), where(), ": cannot read its type");
  return type_of_file(t.get(), where());
}

bool Dataset::holds_integers() const {
  auto lock = lib_lock();
  Id t = dtype(H5Dget_type(id_));
  require(t.ok(), where(), ": cannot read its type");
  return H5Tget_class(t.get()) == H5T_INTEGER;
}

std::uint64_t Dataset::storage_bytes() const {
  auto lock = lib_lock();
  return static_cast<std::uint64_t>(H5Dget_storage_size(id_));
}

void Dataset::read_range_raw(std::int64_t start, std::int64_t count, Type mem, void* out) const {
  auto lock = lib_lock();
  Id sp = space(H5Dget_space(id_));
  const Shape s = extent(sp.get());
  require(s.size() == 1, where(), " is not 1-D (shape ", shape_text(s), ")");
  require(start >= 0 && count >= 0 && start + count <= s[0], where(), ": range [", start, ", ",
          start + count, ") is outside its ", s[0], " elements");
  if (count == 0) return;
  const hsize_t off = static_cast<hsize_t>(start), n = static_cast<hsize_t>(count);
  H5Sselect_hyperslab(sp.get(), H5S_SELECT_SET, &off, nullptr, &n, nullptr);
  Id ms = space(H5Screate_simple(1, &n, nullptr));
  require(H5Dread(id_, mem_type(mem), ms.get(), sp.get(), H5P_DEFAULT, out) >= 0, where(),
          ": reading elements [", start, ", ", start + count, ") failed");
}

void Dataset::append_raw(std::int64_t count, Type mem, const void* data) {
  auto lock = lib_lock();
  if (count <= 0) return;
  Shape s;
  {
    Id sp = space(H5Dget_space(id_));
    s = extent(sp.get());
  }
  require(s.size() == 1, where(), " is not 1-D, cannot append");
  const hsize_t off = static_cast<hsize_t>(s[0]), n = static_cast<hsize_t>(count);
  const hsize_t new_size = off + n;
  require(H5Dset_extent(id_, &new_size) >= 0, where(), ": cannot grow it (not extendible?)");
  Id sp = space(H5Dget_space(id_));
  H5Sselect_hyperslab(sp.get(), H5S_SELECT_SET, &off, nullptr, &n, nullptr);
  Id ms = space(H5Screate_simple(1, &n, nullptr));
  require(H5Dwrite(id_, mem_type(mem), ms.get(), sp.get(), H5P_DEFAULT, data) >= 0, where(),
          ": appending ", count, " elements failed (disk full?)");
}

}  // namespace wiola::h5
