// A small tokenizer for JAAS entries: words, quoted strings (with \" and \\ escapes), '=' and
// ';', as Java's StreamTokenizer splits them for Kafka's JaasConfig.
#include "security/jaas_config.h"

#include <fmt/format.h>

#include <cctype>

namespace tarn::security {

namespace {

struct token {
  enum kind { word, quoted, symbol, end } type = end;
  std::string text;
};

class tokenizer {
 public:
  explicit tokenizer(std::string_view s) : s_(s) {}

  token next() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (pos_ >= s_.size()) return {};
    const char c = s_[pos_];
    if (c == '=' || c == ';') {
      ++pos_;
      return {token::symbol, std::string(1, c)};
    }
    if (c == '"' || c == '\'') {
      ++pos_;
      std::string out;
      while (pos_ < s_.size() && s_[pos_] != c) {
        if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;
        out += s_[pos_++];
      }
      ++pos_;  // the closing quote (or the end)
      return {token::quoted, std::move(out)};
    }
    std::string out;
    while (pos_ < s_.size() && !std::isspace(static_cast<unsigned char>(s_[pos_])) &&
           s_[pos_] != '=' && s_[pos_] != ';' && s_[pos_] != '"') {
      out += s_[pos_++];
    }
    return {token::word, std::move(out)};
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

result<std::vector<jaas_login_module>, std::string> parse_jaas_config(std::string_view text) {
  std::vector<jaas_login_module> out;
  tokenizer t(text);
  token tok = t.next();
  while (tok.type != token::end) {
    if (tok.type != token::word) {
      return fail(fmt::format("Login module not specified in JAAS config"));
    }
    jaas_login_module m;
    m.class_name = tok.text;
    token flag = t.next();
    if (flag.type != token::word) {
      return fail(std::string("Login module control flag not specified in JAAS config"));
    }
    std::string lower;
    for (char c : flag.text)
      lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower != "required" && lower != "requisite" && lower != "sufficient" &&
        lower != "optional") {
      return fail(fmt::format("Invalid login module control flag '{}' in JAAS config", flag.text));
    }
    m.control_flag = lower;
    for (tok = t.next(); !(tok.type == token::symbol && tok.text == ";"); tok = t.next()) {
      if (tok.type == token::end) {
        return fail(std::string("Expected ';' at the end of the JAAS config entry"));
      }
      if (tok.type != token::word) {
        return fail(fmt::format("Unexpected '{}' in JAAS config", tok.text));
      }
      const std::string key = tok.text;
      token eq = t.next();
      if (!(eq.type == token::symbol && eq.text == "=")) {
        return fail(fmt::format("Value not specified for key '{}' in JAAS config", key));
      }
      token value = t.next();
      if (value.type != token::word && value.type != token::quoted) {
        return fail(fmt::format("Value not specified for key '{}' in JAAS config", key));
      }
      m.options[key] = value.text;
    }
    out.push_back(std::move(m));
    tok = t.next();
  }
  if (out.empty()) return fail(std::string("JAAS config entry not terminated by semi-colon"));
  return out;
}

}  // namespace tarn::security
