// Java .properties parsing (see properties.h). Follows java.util.Properties.load(Reader): a
// logical line is a natural line plus continuations; the key ends at the first unescaped '=',
// ':' or whitespace; \uXXXX escapes are written out as UTF-8.
#include "broker/properties.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "base/text.h"

namespace tarn::broker {

namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\f'; }

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Resolves the escapes of a key or value. Java treats `\x` for any other x as x.
result<std::string, std::string> unescape(std::string_view s, int line_number) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c != '\\' || i + 1 == s.size()) {
      out += c;
      continue;
    }
    c = s[++i];
    switch (c) {
      case 't':
        out += '\t';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 'f':
        out += '\f';
        break;
      case 'u': {
        uint32_t cp = 0;
        for (int k = 0; k < 4; ++k) {
          int h = i + 1 < s.size() ? hex_value(s[i + 1]) : -1;
          if (h < 0) {
            return fail(fmt::format("line {}: malformed \\uxxxx encoding", line_number));
          }
          cp = cp * 16 + static_cast<uint32_t>(h);
          ++i;
        }
        append_utf8(out, cp);
        break;
      }
      default:
        out += c;
    }
  }
  return out;
}

// True when the line ends in an odd number of backslashes, i.e. the last one is not escaped.
bool continues(std::string_view line) {
  size_t n = 0;
  while (n < line.size() && line[line.size() - 1 - n] == '\\') ++n;
  return n % 2 == 1;
}

}  // namespace

result<properties, std::string> parse_properties(std::string_view text) {
  // Natural lines, split on \n, \r or \r\n as Java's Properties.load does.
  const std::vector<std::string_view> lines = split_lines(text);

  properties out;
  for (size_t n = 0; n < lines.size(); ++n) {
    int line_number = static_cast<int>(n) + 1;
    std::string_view natural = lines[n];
    size_t first = 0;
    while (first < natural.size() && is_blank(natural[first])) ++first;
    natural.remove_prefix(first);
    if (natural.empty() || natural[0] == '#' || natural[0] == '!') continue;

    // Join continuation lines: drop the trailing backslash and the next line's leading blanks.
    std::string logical(natural);
    while (continues(logical) && n + 1 < lines.size()) {
      logical.pop_back();
      std::string_view next = lines[++n];
      size_t skip = 0;
      while (skip < next.size() && is_blank(next[skip])) ++skip;
      logical.append(next.substr(skip));
    }
    if (continues(logical)) logical.pop_back();  // a backslash on the last line of the file

    size_t key_end = 0;
    while (key_end < logical.size()) {
      char c = logical[key_end];
      if (c == '\\') {
        key_end += 2;
        continue;
      }
      if (c == '=' || c == ':' || is_blank(c)) break;
      ++key_end;
    }
    key_end = std::min(key_end, logical.size());
    size_t value_start = key_end;
    while (value_start < logical.size() && is_blank(logical[value_start])) ++value_start;
    if (value_start < logical.size() &&
        (logical[value_start] == '=' || logical[value_start] == ':')) {
      ++value_start;
      while (value_start < logical.size() && is_blank(logical[value_start])) ++value_start;
    }
    auto key = unescape(std::string_view(logical).substr(0, key_end), line_number);
    if (!key) return fail(key.error());
    auto value = unescape(std::string_view(logical).substr(value_start), line_number);
    if (!value) return fail(value.error());
    out.emplace_back(std::move(*key), std::move(*value));
  }
  return out;
}

result<properties, std::string> load_properties_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(fmt::format("cannot read configuration file {}", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto parsed = parse_properties(buffer.str());
  if (!parsed) return fail(fmt::format("{}: {}", path, parsed.error()));
  return parsed;
}

}  // namespace tarn::broker
