// Regular expressions as Kafka compiles them, with RE2 (Kafka uses re2j, RE2's Java port):
// consumer-group subscriptions (KIP-848) and ListTransactions' TransactionalIdPattern (KIP-1152),
// matched against whole names. RE2 runs in time linear in the text and never recurses per
// character, so a pattern a client sends cannot hang or crash the broker.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace re2 {
class RE2;
}

namespace tarn {

// A compiled pattern; copies share it (RE2 objects are immutable and thread-safe).
class re2_regex {
 public:
  explicit re2_regex(std::shared_ptr<const re2::RE2> re) : re_(std::move(re)) {}
  const re2::RE2& get() const { return *re_; }

 private:
  std::shared_ptr<const re2::RE2> re_;
};

// Compiles `pattern` as RE2; nullopt, with re2j's words for the reason in *error ("missing
// closing )", "invalid escape sequence", ...), for one RE2 refuses.
std::optional<re2_regex> compile_re2_regex(std::string_view pattern, std::string* error);

// RE2's Matcher.matches(): does the pattern match all of `text`?
bool regex_full_match(const re2_regex& re, std::string_view text);

}  // namespace tarn
