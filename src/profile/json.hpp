#pragma once
// A small JSON value: enough to write the profiler's records and traces and
// to read them back (projection input, tests). Strict RFC 8259 parsing;
// objects keep their insertion order. Numbers are doubles.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wiola::profile {

class Json {
 public:
  enum class Type { Null, Bool, Number, String, Array, Object };
  using Array = std::vector<Json>;

  Json() = default;  // null
  Json(std::nullptr_t) {}
  Json(bool b) : type_(Type::Bool), bool_(b) {}
  Json(double v) : type_(Type::Number), num_(v) {}
  Json(int v) : Json(double(v)) {}
  Json(long v) : Json(double(v)) {}
  Json(long long v) : Json(double(v)) {}
  Json(unsigned long v) : Json(double(v)) {}
  Json(unsigned long long v) : Json(double(v)) {}
  Json(const char* s) : type_(Type::String), str_(s) {}
  Json(std::string s) : type_(Type::String), str_(std::move(s)) {}
  Json(std::string_view s) : type_(Type::String), str_(s) {}
  static Json array(Array items = {});
  static Json object();

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::Null; }
  bool is_number() const { return type_ == Type::Number; }
  bool is_string() const { return type_ == Type::String; }
  bool is_array() const { return type_ == Type::Array; }
  bool is_object() const { return type_ == Type::Object; }

  // Typed access; throws wiola::Error naming the expected type.
  bool as_bool() const;
  double as_number() const;
  std::int64_t as_int() const;  // a number with no fractional part
  const std::string& as_string() const;
  const Array& items() const;  // array elements
  // Object members in insertion order: key(i), value(i) for i < size().
  const std::string& key(std::size_t i) const;
  const Json& value(std::size_t i) const;

  // Object access: `at` throws when the key is missing, `find` returns null.
  const Json& at(std::string_view key) const;
  const Json* find(std::string_view key) const;
  // Appends (object) or sets an existing key; returns *this for chaining.
  Json& set(std::string key, Json value);
  // Appends to an array.
  Json& push(Json value);
  std::size_t size() const;  // array or object

  // Serialises. indent < 0: one line; otherwise pretty-printed with that many spaces.
  std::string dump(int indent = -1) const;
  void dump_to(std::string& out, int indent = -1, int depth = 0) const;

  // Throws wiola::Error("JSON: ... at line L column C") on malformed input.
  static Json parse(std::string_view text);

 private:
  Type type_ = Type::Null;
  bool bool_ = false;
  double num_ = 0;
  std::string str_;
  Array items_;                    // array elements, or object values
  std::vector<std::string> keys_;  // object keys, parallel to items_
};

// Appends `s` as a quoted JSON string.
void append_json_string(std::string& out, std::string_view s);
// Shortest round-tripping text of a finite number; non-finite numbers become null.
void append_json_number(std::string& out, double v);

// Reads a whole file (throws naming the path when it cannot).
std::string read_text_file(const std::string& path);
// Writes a whole file (throws naming the path when it cannot).
void write_text_file(const std::string& path, const std::string& text);

}  // namespace wiola::profile
