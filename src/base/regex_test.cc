// compile_re2_regex and regex_full_match: RE2's refusals, whole-name matches, and a match too
// complex for std::regex.
#include "base/regex.h"

#include <gtest/gtest.h>

#include <string>

namespace tarn {
namespace {

TEST(re2_regex, compiles_the_common_syntax_and_refuses_what_re2_refuses) {
  std::string why;
  EXPECT_TRUE(compile_re2_regex("topic-[0-9]+|other\\.t", &why));
  EXPECT_TRUE(compile_re2_regex("(?i)Topic", &why));
  EXPECT_FALSE(compile_re2_regex("(a)\\1", &why));
  EXPECT_EQ(why, "invalid escape sequence");
  EXPECT_FALSE(compile_re2_regex("a(?!b)", &why));
  EXPECT_EQ(why, "invalid or unsupported Perl syntax");
  EXPECT_FALSE(compile_re2_regex("a(", &why));
  EXPECT_EQ(why, "missing closing )");
}

TEST(re2_regex, matches_whole_names_only) {
  auto re = compile_re2_regex("app-[0-9]", nullptr);
  ASSERT_TRUE(re);
  EXPECT_TRUE(regex_full_match(*re, "app-1"));
  EXPECT_FALSE(regex_full_match(*re, "app-12"));
  EXPECT_FALSE(regex_full_match(*re, "my-app-1"));
  auto icase = compile_re2_regex("(?i)app", nullptr);
  ASSERT_TRUE(icase);
  EXPECT_TRUE(regex_full_match(*icase, "APP"));
}

TEST(re2_regex, costs_are_bounded_for_patterns_clients_send) {
  EXPECT_TRUE(regex_cost_is_bounded("app-[0-9]+"));
  EXPECT_TRUE(regex_cost_is_bounded("txa-.*-prod-.*"));
  EXPECT_TRUE(regex_cost_is_bounded("(?i)(app|svc)-[a-z]{2,5}"));  // a group without a quantifier
  EXPECT_TRUE(regex_cost_is_bounded("[(*|]+x"));                   // a class is one atom
  EXPECT_TRUE(regex_cost_is_bounded("a\\*b\\(c"));                 // escaped, not syntax
  EXPECT_FALSE(regex_cost_is_bounded("(a*)*b"));                   // nested quantifiers
  EXPECT_FALSE(regex_cost_is_bounded("(a|aa)+c"));                 // a quantified alternation
  EXPECT_FALSE(regex_cost_is_bounded("((ab)+x)*"));                // nested deeper
  EXPECT_FALSE(regex_cost_is_bounded("(?:a?){5}"));
  EXPECT_FALSE(regex_cost_is_bounded("a*a*a*a*c"));  // more than regex_max_quantifiers
}

}  // namespace
}  // namespace tarn
