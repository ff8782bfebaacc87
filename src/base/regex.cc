// Kafka's RE2 regular expressions (see regex.h), compiled by RE2 itself.
#include "base/regex.h"

#include <re2/re2.h>

namespace tarn {

namespace {

// re2j's texts for the errors clients make (Kafka puts them in INVALID_REGULAR_EXPRESSION's
// message); RE2's own text, which also names the offending part, for the rest.
std::string error_text(const re2::RE2& re) {
  switch (re.error_code()) {
    case re2::RE2::ErrorMissingParen:
      return "missing closing )";
    case re2::RE2::ErrorUnexpectedParen:
      return "unexpected )";
    case re2::RE2::ErrorMissingBracket:
      return "missing closing ]";
    case re2::RE2::ErrorRepeatArgument:
      return "missing argument to repetition operator";
    case re2::RE2::ErrorBadEscape:
      return "invalid escape sequence";
    case re2::RE2::ErrorBadCharRange:
      return "invalid character class range";
    case re2::RE2::ErrorRepeatSize:
      return "invalid repeat count";
    case re2::RE2::ErrorRepeatOp:
      return "bad repetition operator";
    case re2::RE2::ErrorBadPerlOp:
      return "invalid or unsupported Perl syntax";
    case re2::RE2::ErrorBadNamedCapture:
      return "invalid named capture group";
    default:
      return re.error();
  }
}

}  // namespace

std::optional<re2_regex> compile_re2_regex(std::string_view pattern, std::string* error) {
  re2::RE2::Options options;
  options.set_log_errors(false);  // a client's bad pattern is an answer, not a log line
  auto re =
      std::make_shared<const re2::RE2>(re2::StringPiece(pattern.data(), pattern.size()), options);
  if (!re->ok()) {
    if (error) *error = error_text(*re);
    return std::nullopt;
  }
  return re2_regex(std::move(re));
}

bool regex_full_match(const re2_regex& re, std::string_view text) {
  return re2::RE2::FullMatch(re2::StringPiece(text.data(), text.size()), re.get());
}

}  // namespace tarn
