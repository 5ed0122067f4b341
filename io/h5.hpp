#pragma once
// A thin RAII layer over the HDF5 C API. It keeps hdf5.h out of every other
// header (wiola_io links HDF5 privately), turns HDF5's printed error stack off,
// and throws wiola::Error with messages that name the file, the object and the
// problem ("x.h5: dataset 'tokens' is missing").
//
// Object names may contain a group path ("grad/layers.0.attn.q_proj.weight");
// dots in names are ordinary characters in HDF5. Writing a dataset creates the
// groups on its path. Attributes live on "/" (the root) or on a dataset.
//
// The serial HDF5 library is not thread-safe; every call into it from this
// layer holds one process-wide lock, so concurrent use through h5:: is safe.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wiola::h5 {

// Element types in memory and in files.
enum class Type : std::uint8_t { F32, F64, I32, U16, U32, U64, I64, U8 };

std::string_view type_name(Type t);
std::size_t type_size(Type t);
bool is_integer(Type t);

template <class T> struct type_of;
template <> struct type_of<float> { static constexpr Type value = Type::F32; };
template <> struct type_of<double> { static constexpr Type value = Type::F64; };
template <> struct type_of<std::int32_t> { static constexpr Type value = Type::I32; };
template <> struct type_of<std::uint16_t> { static constexpr Type value = Type::U16; };
template <> struct type_of<std::uint32_t> { static constexpr Type value = Type::U32; };
template <> struct type_of<std::uint64_t> { static constexpr Type value = Type::U64; };
template <> struct type_of<std::int64_t> { static constexpr Type value = Type::I64; };
template <> struct type_of<std::uint8_t> { static constexpr Type value = Type::U8; };

using Shape = std::vector<std::int64_t>;  // {} is a scalar
std::string shape_text(const Shape& s);   // "[3, 4]"
std::int64_t numel(const Shape& s);

// How a dataset will be read. Random: no chunk cache, so a small hyperslab of
// an unfiltered chunked dataset is read straight from disk instead of pulling
// its whole chunk into the cache (windows are read in shuffled order).
enum class Access : std::uint8_t { Default, Random };

class Dataset;

class File {
 public:
  static File create(const std::string& path);     // truncates an existing file
  static File open_read(const std::string& path);  // read-only
  static File open_rw(const std::string& path);    // read-write, must exist

  File() = default;
  File(File&& o) noexcept;
  File& operator=(File&& o) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File();

  const std::string& path() const { return path_; }
  bool is_open() const { return id_ >= 0; }
  // Flushes and closes, throwing on failure (the destructor swallows errors).
  void close();

  // --- datasets -----------------------------------------------------------
  bool has_dataset(const std::string& name) const;
  // Writes a new dataset of `shape` from `data` (memory type `mem`), stored as
  // `file_type` (HDF5 converts). Fails if the object already exists.
  void write_raw(const std::string& name, const Shape& shape, Type mem, const void* data,
                 Type file_type);
  template <class T>
  void write(const std::string& name, const Shape& shape, std::span<const T> data) {
    write(name, shape, data, type_of<T>::value);
  }
  template <class T>
  void write(const std::string& name, const Shape& shape, std::span<const T> data,
             Type file_type) {
    check_count(name, shape, data.size());
    write_raw(name, shape, type_of<T>::value, data.data(), file_type);
  }
  template <class T>
  void write_scalar(const std::string& name, T value) {
    write_raw(name, {}, type_of<T>::value, &value, type_of<T>::value);
  }

  // Creates an empty 1-D dataset that grows by Dataset::append, chunked by
  // `chunk` elements, without compression.
  Dataset create_extendible(const std::string& name, Type file_type, std::int64_t chunk);
  Dataset dataset(const std::string& name, Access access = Access::Default) const;

  Shape shape(const std::string& name) const;
  Type file_type(const std::string& name) const;
  // Reads the whole dataset converted to T; `shape` receives its dimensions.
  template <class T>
  std::vector<T> read(const std::string& name, Shape* shape = nullptr) const;
  template <class T>
  T read_scalar(const std::string& name) const;

  // Names of the datasets directly under `group`, in name order.
  std::vector<std::string> list_datasets(const std::string& group = "/") const;
  void create_group(const std::string& name);  // with missing parents; no-op if it exists
  bool has_group(const std::string& name) const;

  // --- attributes on `object` ("/" = root, else a dataset or group) ---------
  bool has_attr(const std::string& attr, const std::string& object = "/") const;
  void write_attr_int(const std::string& attr, std::int64_t v, const std::string& object = "/");
  void write_attr_double(const std::string& attr, double v, const std::string& object = "/");
  void write_attr_string(const std::string& attr, const std::string& v,
                         const std::string& object = "/");
  // Integers stored as floats are accepted only when integral; numbers are
  // not strings and strings are not numbers.
  std::int64_t read_attr_int(const std::string& attr, const std::string& object = "/") const;
  double read_attr_double(const std::string& attr, const std::string& object = "/") const;
  std::string read_attr_string(const std::string& attr, const std::string& object = "/") const;
  std::vector<std::string> list_attrs(const std::string& object = "/") const;
  // Any scalar attribute as text (numbers printed in full precision).
  std::string attr_as_text(const std::string& attr, const std::string& object = "/") const;

 private:
  File(std::string path, std::int64_t id) : path_(std::move(path)), id_(id) {}
  void check_count(const std::string& name, const Shape& shape, std::size_t n) const;
  void read_raw(const std::string& name, Type mem, void* out, std::size_t capacity,
                Shape* shape) const;
  std::string path_;
  std::int64_t id_ = -1;  // hid_t
};

// An open dataset: repeated hyperslab reads and appends without reopening.
class Dataset {
 public:
  Dataset() = default;
  Dataset(Dataset&& o) noexcept;
  Dataset& operator=(Dataset&& o) noexcept;
  Dataset(const Dataset&) = delete;
  Dataset& operator=(const Dataset&) = delete;
  ~Dataset();

  const std::string& name() const { return name_; }
  Shape shape() const;
  Type file_type() const;       // throws on types outside h5::Type
  bool holds_integers() const;  // any integer width or sign
  // Bytes the file holds for the data (HDF5's storage size: whole chunks for
  // a chunked dataset, nothing for chunks never written).
  std::uint64_t storage_bytes() const;
  // Reads elements [start, start + count) of a 1-D dataset into `out`.
  void read_range_raw(std::int64_t start, std::int64_t count, Type mem, void* out) const;
  template <class T>
  void read_range(std::int64_t start, std::int64_t count, T* out) const {
    read_range_raw(start, count, type_of<T>::value, out);
  }
  // Appends to an extendible 1-D dataset.
  void append_raw(std::int64_t count, Type mem, const void* data);
  template <class T>
  void append(std::span<const T> data) {
    append_raw(static_cast<std::int64_t>(data.size()), type_of<T>::value, data.data());
  }

 private:
  friend class File;
  Dataset(std::string file, std::string name, std::int64_t id)
      : file_(std::move(file)), name_(std::move(name)), id_(id) {}
  std::string where() const;
  std::string file_;
  std::string name_;
  std::int64_t id_ = -1;  // hid_t
};

template <class T>
std::vector<T> File::read(const std::string& name, Shape* shape) const {
  Shape s = this->shape(name);
  std::vector<T> out(static_cast<std::size_t>(numel(s)));
  read_raw(name, type_of<T>::value, out.data(), out.size(), nullptr);
  if (shape) *shape = std::move(s);
  return out;
}

template <class T>
T File::read_scalar(const std::string& name) const {
  T v{};
  read_raw(name, type_of<T>::value, &v, 1, nullptr);
  return v;
}

}  // namespace wiola::h5
