// SslPrincipalMapper's rule syntax (Kafka 4.4): rules separated by commas, each DEFAULT or
// RULE:<pattern>/<replacement>/ optionally followed by L (lower case) or U (upper case). Inside
// pattern and replacement a backslash escapes the next character (so "\/" is a slash).
#include "security/ssl_principal_mapper.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace tarn::security {

namespace {

std::string_view trim_spaces(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Reads up to the next unescaped '/', keeping escapes as written (Java's regex and replacement
// syntax give them their meaning); false when there is no such slash.
bool read_part(std::string_view text, size_t& pos, std::string& out) {
  while (pos < text.size()) {
    char c = text[pos];
    if (c == '\\' && pos + 1 < text.size()) {
      out += c;
      out += text[pos + 1];
      pos += 2;
      continue;
    }
    if (c == '/') {
      ++pos;
      return true;
    }
    out += c;
    ++pos;
  }
  return false;
}

// Java's replacement string: $n is group n, \x is x. std::regex's format: $n, and $$ for '$'.
std::string java_replacement_to_ecma(const std::string& java) {
  std::string out;
  for (size_t i = 0; i < java.size(); ++i) {
    if (java[i] == '\\' && i + 1 < java.size()) {
      if (java[i + 1] == '$') {
        out += "$$";
      } else {
        out += java[i + 1];
      }
      ++i;
    } else {
      out += java[i];
    }
  }
  return out;
}

// "\/" in a pattern means a slash; ECMAScript accepts "\/" too, so patterns pass unchanged.

}  // namespace

result<ssl_principal_mapper, std::string> ssl_principal_mapper::parse(const std::string& text) {
  ssl_principal_mapper m;
  std::string_view rest = trim_spaces(text);
  size_t pos = 0;
  auto invalid = [&](std::string_view what) {
    return fail(fmt::format(
        "Invalid value {} for configuration ssl.principal.mapping.rules: Invalid rule: {}", text,
        what));
  };
  while (pos < rest.size()) {
    while (pos < rest.size() && std::isspace(static_cast<unsigned char>(rest[pos]))) ++pos;
    const size_t start = pos;
    rule r;
    if (rest.substr(pos).starts_with("DEFAULT")) {
      r.is_default = true;
      pos += 7;
    } else if (rest.substr(pos).starts_with("RULE:")) {
      pos += 5;
      std::string pattern;
      std::string replacement;
      if (!read_part(rest, pos, pattern) || !read_part(rest, pos, replacement)) {
        return invalid(rest.substr(start));
      }
      if (pos < rest.size() && (rest[pos] == 'L' || rest[pos] == 'U')) {
        r.to_lower = rest[pos] == 'L';
        r.to_upper = rest[pos] == 'U';
        ++pos;
      }
      try {
        r.pattern = std::regex(pattern, std::regex::ECMAScript);
      } catch (const std::regex_error&) {
        return invalid(rest.substr(start));
      }
      r.replacement = java_replacement_to_ecma(replacement);
    } else {
      size_t comma = rest.find(',', pos);
      return invalid(trim_spaces(
          rest.substr(start, comma == std::string_view::npos ? rest.npos : comma - start)));
    }
    while (pos < rest.size() && std::isspace(static_cast<unsigned char>(rest[pos]))) ++pos;
    if (pos < rest.size()) {
      if (rest[pos] != ',') return invalid(rest.substr(start));
      ++pos;
    }
    m.rules_.push_back(std::move(r));
  }
  return m;
}

std::optional<std::string> ssl_principal_mapper::name_for(const std::string& dn) const {
  for (const auto& r : rules_) {
    if (r.is_default) return dn;
    std::smatch match;
    if (!std::regex_match(dn, match, r.pattern)) continue;
    std::string out = std::regex_replace(dn, r.pattern, r.replacement);
    if (r.to_lower) {
      std::transform(out.begin(), out.end(), out.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    } else if (r.to_upper) {
      std::transform(out.begin(), out.end(), out.begin(),
                     [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    }
    return out;
  }
  return std::nullopt;
}

}  // namespace tarn::security
