#include "profile/json.hpp"

#include <charconv>
#include <cstdio>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace wiola::profile {

Json Json::array(Array items) {
  Json j;
  j.type_ = Type::Array;
  j.items_ = std::move(items);
  return j;
}

Json Json::object() {
  Json j;
  j.type_ = Type::Object;
  return j;
}

namespace {
const char* type_name(Json::Type t) {
  switch (t) {
    case Json::Type::Null: return "null";
    case Json::Type::Bool: return "a boolean";
    case Json::Type::Number: return "a number";
    case Json::Type::String: return "a string";
    case Json::Type::Array: return "an array";
    case Json::Type::Object: return "an object";
  }
  return "?";
}
}  // namespace

bool Json::as_bool() const {
  require(type_ == Type::Bool, "JSON: expected a boolean, found ", type_name(type_));
  return bool_;
}

double Json::as_number() const {
  require(type_ == Type::Number, "JSON: expected a number, found ", type_name(type_));
  return num_;
}

std::int64_t Json::as_int() const {
  const double v = as_number();
  require(std::floor(v) == v && std::fabs(v) < 9.007199254740992e15, "JSON: expected an integer, found ", v);
  return static_cast<std::int64_t>(v);
}

const std::string& Json::as_string() const {
  require(type_ == Type::String, "JSON: expected a string, found ", type_name(type_));
  return str_;
}

const Json::Array& Json::items() const {
  require(type_ == Type::Array, "JSON: expected an array, found ", type_name(type_));
  return items_;
}

const std::string& Json::key(std::size_t i) const {
  require(type_ == Type::Object && i < keys_.size(), "JSON: no object member ", i);
  return keys_[i];
}

const Json& Json::value(std::size_t i) const {
  require(type_ == Type::Object && i < keys_.size(), "JSON: no object member ", i);
  return items_[i];
}

const Json* Json::find(std::string_view k) const {
  if (type_ != Type::Object) return nullptr;
  for (std::size_t i = 0; i < keys_.size(); ++i)
    if (keys_[i] == k) return &items_[i];
  return nullptr;
}

const Json& Json::at(std::string_view k) const {
  require(type_ == Type::Object, "JSON: expected an object with key '", k, "', found ",
          type_name(type_));
  const Json* v = find(k);
  require(v != nullptr, "JSON: missing key '", k, "'");
  return *v;
}

Json& Json::set(std::string k, Json v) {
  require(type_ == Type::Object, "JSON: set('", k, "') on ", type_name(type_));
  for (std::size_t i = 0; i < keys_.size(); ++i)
    if (keys_[i] == k) {
      items_[i] = std::move(v);
      return *this;
    }
  keys_.push_back(std::move(k));
  items_.push_back(std::move(v));
  return *this;
}

Json& Json::push(Json v) {
  require(type_ == Type::Array, "JSON: push on ", type_name(type_));
  items_.push_back(std::move(v));
  return *this;
}

std::size_t Json::size() const {
  return (type_ == Type::Array || type_ == Type::Object) ? items_.size() : 0;
}

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

void append_json_number(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void Json::dump_to(std::string& out, int indent, int depth) const {
  auto newline = [&](int d) {
    if (indent < 0) return;
    out += '\n';
    out.append(std::size_t(indent) * std::size_t(d), ' ');
  };
  switch (type_) {
    case Type::Null: out += "null"; break;
    case Type::Bool: out += bool_ ? "true" : "false"; break;
    case Type::Number: append_json_number(out, num_); break;
    case Type::String: append_json_string(out, str_); break;
    case Type::Array:
    case Type::Object: {
      const bool obj = type_ == Type::Object;
      out += obj ? '{' : '[';
      if (items_.empty()) {
        out += obj ? '}' : ']';
        break;
      }
      // Arrays of scalars stay on one line even when pretty-printing.
      bool flat = !obj;
      for (const Json& v : items_)
        if (v.is_array() || v.is_object()) flat = false;
      for (std::size_t i = 0; i < items_.size(); ++i) {
        if (i) out += flat && indent >= 0 ? ", " : ",";
        if (!flat) newline(depth + 1);
        if (obj) {
          append_json_string(out, keys_[i]);
          out += indent >= 0 ? ": " : ":";
        }
        items_[i].dump_to(out, indent, depth + 1);
      }
      if (!flat) newline(depth);
      out += obj ? '}' : ']';
      break;
    }
  }
}

std::string Json::dump(int indent) const {
  std::string out;
  dump_to(out, indent, 0);
  return out;
}

namespace {

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  Json document() {
    Json v = value(0);
    skip_ws();
    if (pos_ != s_.size()) error("unexpected text after the value");
    return v;
  }

 private:
  [[noreturn]] void error(const std::string& what) const {
    int line = 1, col = 1;
    for (std::size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    fail("JSON: ", what, " at line ", line, " column ", col);
  }

  void skip_ws() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }

  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Json value(int depth) {
    if (depth > 256) error("nesting deeper than 256");
    skip_ws();
    if (pos_ >= s_.size()) error("unexpected end of input");
    const char c = s_[pos_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return Json(string());
    if (literal("true")) return Json(true);
    if (literal("false")) return Json(false);
    if (literal("null")) return Json();
    if (c == '-' || (c >= '0' && c <= '9')) return Json(number());
    error(std::string("unexpected character '") + c + "'");
  }

  Json object(int depth) {
    ++pos_;  // '{'
    Json obj = Json::object();
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return obj;
    }
    for (;;) {
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != '"') error("expected a string key");
      std::string k = string();
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != ':') error("expected ':'");
      ++pos_;
      obj.set(std::move(k), value(depth + 1));
      skip_ws();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == '}') {
        ++pos_;
        return obj;
      }
      error("expected ',' or '}'");
    }
  }

  Json array(int depth) {
    ++pos_;  // '['
    Json arr = Json::array();
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return arr;
    }
    for (;;) {
      arr.push(value(depth + 1));
      skip_ws();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        return arr;
      }
      error("expected ',' or ']'");
    }
  }

  unsigned hex4() {
    if (pos_ + 4 > s_.size()) error("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= unsigned(c - '0');
      else if (c >= 'a' && c <= 'f') v |= unsigned(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= unsigned(c - 'A' + 10);
      else error("bad hex digit in \\u escape");
    }
    return v;
  }

  static void put_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }

  std::string string() {
    ++pos_;  // opening quote
    std::string out;
    for (;;) {
      if (pos_ >= s_.size()) error("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) error("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) error("unterminated escape");
      const char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {
            if (!(literal("\\u"))) error("unpaired surrogate");
            const unsigned lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) error("bad low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            error("unpaired surrogate");
          }
          put_utf8(out, cp);
          break;
        }
        default: error(std::string("bad escape '\\") + e + "'");
      }
    }
  }

  double number() {
    const std::size_t start = pos_;
    auto digits = [&]() {
      const std::size_t d0 = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      return pos_ - d0;
    };
    if (s_[pos_] == '-') ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '0') {
      ++pos_;
    } else if (digits() == 0) {
      error("bad number");
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (digits() == 0) error("bad number: no digits after '.'");
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (digits() == 0) error("bad number: no exponent digits");
    }
    double v = 0;
    const auto r = std::from_chars(s_.data() + start, s_.data() + pos_, v);
    if (r.ec != std::errc()) error("number out of range");
    return v;
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

}  // namespace

Json Json::parse(std::string_view text) { return Parser(text).document(); }

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  require(in.good(), "cannot read '", path, "'");
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  require(out.good(), "cannot write '", path, "'");
  out << text;
  out.flush();
  require(out.good(), "error while writing '", path, "'");
}

}  // namespace wiola::profile
