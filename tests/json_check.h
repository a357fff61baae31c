// A strict little JSON reader for the tests (RFC 8259 values; no extensions): what the export
// writes must parse here, so ui.perfetto.dev can read it. Throws std::runtime_error with the
// byte offset of the first error.
#pragma once

#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace flashsim::test {

struct Json {
  enum class Kind { Null, Bool, Number, String, Array, Object } kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Json> array;
  std::map<std::string, Json> object;

  const Json& at(const std::string& key) const {
    auto it = object.find(key);
    if (kind != Kind::Object || it == object.end()) throw std::runtime_error("no key '" + key + "'");
    return it->second;
  }
  bool has(const std::string& key) const { return kind == Kind::Object && object.count(key) > 0; }
};

class JsonReader {
 public:
  explicit JsonReader(const std::string& text) : s_(text) {}
  Json document() {
    Json v = value();
    space();
    if (i_ != s_.size()) fail("text after the value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("JSON error at byte " + std::to_string(i_) + ": " + what);
  }
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool take(char c) {
    space();
    if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
    return false;
  }
  void expect(char c) {
    if (!take(c)) fail(std::string("expected '") + c + "'");
  }
  void word(const char* w) {
    for (const char* p = w; *p; ++p, ++i_)
      if (i_ >= s_.size() || s_[i_] != *p) fail(std::string("expected ") + w);
  }
  std::string str() {
    expect('"');
    std::string out;
    while (true) {
      if (i_ >= s_.size()) fail("unterminated string");
      char c = s_[i_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) fail("unterminated escape");
      char e = s_[i_++];
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
          if (i_ + 4 > s_.size()) fail("short \\u escape");
          for (int k = 0; k < 4; ++k)
            if (!std::isxdigit(static_cast<unsigned char>(s_[i_ + static_cast<std::size_t>(k)]))) fail("bad \\u escape");
          unsigned code = static_cast<unsigned>(std::strtoul(s_.substr(i_, 4).c_str(), nullptr, 16));
          i_ += 4;
          out += code < 0x80 ? static_cast<char>(code) : '?';  // the export writes ASCII only
          break;
        }
        default: fail("bad escape");
      }
    }
  }
  Json value() {
    space();
    if (i_ >= s_.size()) fail("expected a value");
    Json v;
    char c = s_[i_];
    if (c == '{') {
      ++i_;
      v.kind = Json::Kind::Object;
      if (take('}')) return v;
      do {
        space();
        std::string key = str();
        expect(':');
        if (!v.object.emplace(key, value()).second) fail("duplicate key '" + key + "'");
      } while (take(','));
      expect('}');
    } else if (c == '[') {
      ++i_;
      v.kind = Json::Kind::Array;
      if (take(']')) return v;
      do v.array.push_back(value());
      while (take(','));
      expect(']');
    } else if (c == '"') {
      v.kind = Json::Kind::String;
      v.string = str();
    } else if (c == 't' || c == 'f') {
      v.kind = Json::Kind::Bool;
      v.boolean = c == 't';
      word(v.boolean ? "true" : "false");
    } else if (c == 'n') {
      word("null");
    } else {
      // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
      std::size_t start = i_;
      auto digits = [&] {
        std::size_t d = i_;
        while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
        if (i_ == d) fail("expected a digit");
      };
      if (s_[i_] == '-') ++i_;
      if (i_ < s_.size() && s_[i_] == '0') ++i_;
      else digits();
      if (i_ < s_.size() && s_[i_] == '.') ++i_, digits();
      if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
        ++i_;
        if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
        digits();
      }
      v.kind = Json::Kind::Number;
      v.number = std::strtod(s_.substr(start, i_ - start).c_str(), nullptr);
    }
    return v;
  }

  const std::string& s_;
  std::size_t i_ = 0;
};

inline Json parse_json(const std::string& text) { return JsonReader(text).document(); }

// RFC 4180 CSV: fields split at commas, "quoted" fields may hold commas and doubled quotes.
inline std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    any = true;
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') field += '"', ++i;
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') {
      if (!field.empty()) throw std::runtime_error("CSV: a quote inside an unquoted field");
      quoted = true;
    } else if (c == ',') {
      row.push_back(field);
      field.clear();
    } else if (c == '\n') {
      row.push_back(field);
      rows.push_back(row);
      row.clear();
      field.clear();
      any = false;
    } else {
      field += c;
    }
  }
  if (quoted) throw std::runtime_error("CSV: unterminated quoted field");
  if (any) throw std::runtime_error("CSV: the last line has no newline");
  return rows;
}

}  // namespace flashsim::test
