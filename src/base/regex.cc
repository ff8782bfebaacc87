// Kafka's RE2 regular expressions over std::regex (see regex.h).
#include "base/regex.h"

#include <vector>

namespace tarn {

// Kafka uses RE2 (re2j) and a full match of the name (a topic's, a transactional id's); tarn
// uses std::regex's ECMAScript grammar with std::regex_match. They agree on the syntax clients
// use (literals, ., *, +, ?, {n,m}, classes, groups, alternation, anchors, \d \w \s).
// tarn refuses what RE2 refuses and ECMAScript would take (lookaround, backreferences: RE2's
// "invalid or unsupported Perl syntax", "invalid escape sequence") and accepts a leading (?i)
// as RE2 does. Still different: RE2's other flags and (?P<name>) groups, \pN classes and
// [[:alpha:]] inside classes are refused here, and std::regex backtracks where RE2 is linear
// (topic names are at most 249 characters, which bounds it; a match that still exhausts
// std::regex is no match, regex_full_match). Error texts follow RE2's for the common mistakes.
std::optional<std::regex> compile_re2_regex(std::string_view pattern, std::string* error) {
  auto refuse = [&](std::string_view why) -> std::optional<std::regex> {
    if (error) *error = why;
    return std::nullopt;
  };
  auto flags = std::regex::ECMAScript;
  if (pattern.starts_with("(?i)")) {
    flags |= std::regex::icase;
    pattern.remove_prefix(4);
  }
  for (size_t i = 0; i + 1 < pattern.size(); ++i) {
    if (pattern[i] == '\\') {
      if (pattern[i + 1] >= '1' && pattern[i + 1] <= '9') return refuse("invalid escape sequence");
      ++i;
    } else if (pattern.substr(i, 3) == "(?=" || pattern.substr(i, 3) == "(?!" ||
               pattern.substr(i, 3) == "(?<") {
      return refuse("invalid or unsupported Perl syntax");
    }
  }
  try {
    return std::regex(pattern.begin(), pattern.end(), flags);
  } catch (const std::regex_error& e) {
    switch (e.code()) {
      case std::regex_constants::error_paren:
        return refuse("missing closing )");
      case std::regex_constants::error_brack:
        return refuse("missing closing ]");
      case std::regex_constants::error_badrepeat:
        return refuse("missing argument to repetition operator");
      case std::regex_constants::error_escape:
        return refuse("invalid escape sequence");
      case std::regex_constants::error_range:
        return refuse("invalid character class range");
      case std::regex_constants::error_brace:
      case std::regex_constants::error_badbrace:
        return refuse("invalid repeat count");
      default:
        return refuse(e.what());
    }
  }
}

bool regex_full_match(const std::regex& re, std::string_view text) {
  try {  // std::regex reports a match it gives up on as an exception
    return std::regex_match(text.begin(), text.end(), re);
  } catch (const std::regex_error&) {  // error_complexity, error_stack
    return false;
  }
}

bool regex_cost_is_bounded(std::string_view pattern) {
  // For each open group: does its body hold a quantifier or an alternation?
  std::vector<bool> open_groups;
  bool last_group_risky = false;  // the group just closed, if the previous token closed one
  bool after_group = false;
  int quantifiers = 0;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    const bool closes = c == ')';
    bool quantifier = false;
    if (c == '\\') {
      ++i;  // the escaped character is an atom
    } else if (c == '[') {
      // A class is one atom: skip to its closing ']' (a leading ']' or '^]' is a member).
      size_t j = i + 1;
      if (j < pattern.size() && pattern[j] == '^') ++j;
      if (j < pattern.size() && pattern[j] == ']') ++j;
      while (j < pattern.size() && pattern[j] != ']') j += pattern[j] == '\\' ? 2 : 1;
      i = j;
    } else if (c == '(') {
      open_groups.push_back(false);
      if (i + 1 < pattern.size() && pattern[i + 1] == '?') ++i;  // (?: (?i) are not quantifiers
    } else if (closes) {
      last_group_risky = !open_groups.empty() && open_groups.back();
      if (!open_groups.empty()) open_groups.pop_back();
      if (last_group_risky && !open_groups.empty()) open_groups.back() = true;
    } else if (c == '|') {
      if (!open_groups.empty()) open_groups.back() = true;
    } else if (c == '*' || c == '+' || c == '?' || c == '{') {
      quantifier = true;
      if (c == '{') {
        while (i < pattern.size() && pattern[i] != '}') ++i;
      }
      if (i + 1 < pattern.size() && pattern[i + 1] == '?') ++i;  // lazy: the same quantifier
      if (after_group && last_group_risky) return false;
      if (++quantifiers > regex_max_quantifiers) return false;
      if (!open_groups.empty()) open_groups.back() = true;
    }
    after_group = closes;
    if (quantifier) after_group = false;
  }
  return true;
}

}  // namespace tarn
