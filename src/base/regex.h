// Regular expressions Kafka compiles with RE2 (re2j): consumer-group subscriptions (KIP-848) and
// ListTransactions' TransactionalIdPattern (KIP-1152), compiled with std::regex's ECMAScript
// grammar, which agrees with RE2 on the syntax clients use, and matched against whole names.
#pragma once

#include <optional>
#include <regex>
#include <string>
#include <string_view>

namespace tarn {

// Compiles `pattern` as Kafka's RE2 would accept it; nullopt (and RE2's text for the common
// mistakes in *error) for one RE2 refuses.
std::optional<std::regex> compile_re2_regex(std::string_view pattern, std::string* error);

// RE2's Matcher.matches(): does the pattern match all of `text`? std::regex backtracks where
// RE2 is linear; a match too complex for it counts as no match instead of an exception.
bool regex_full_match(const std::regex& re, std::string_view text);

// std::regex backtracks, and recurses once per character: a pattern with a quantified group
// that holds a quantifier or an alternation ("(a*)*b", "(a|aa)*c") takes exponential time, k
// quantifiers side by side up to n^k steps, and a long text overflows the stack. For patterns
// a client sends against names a client chose (ListTransactions' TransactionalIdPattern), these
// bound the cost: no such nested group and at most regex_max_quantifiers quantifiers, matched
// against at most regex_max_text_bytes bytes (a longer text is no match).
inline constexpr int regex_max_quantifiers = 3;
inline constexpr size_t regex_max_text_bytes = 255;
bool regex_cost_is_bounded(std::string_view pattern);

}  // namespace tarn
