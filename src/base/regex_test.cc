// compile_re2_regex and regex_full_match: RE2's refusals with re2j's words, whole-name matches,
// and patterns that make a backtracking engine run away.
#include "base/regex.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace tarn {
namespace {

TEST(re2_regex, compiles_the_common_syntax_and_refuses_what_re2_refuses) {
  std::string why;
  EXPECT_TRUE(compile_re2_regex("topic-[0-9]+|other\\.t", &why));
  EXPECT_TRUE(compile_re2_regex("(?i)Topic", &why));
  EXPECT_TRUE(compile_re2_regex("(?P<name>x)\\pN", &why));  // RE2 syntax std::regex lacked
  EXPECT_FALSE(compile_re2_regex("(a)\\1", &why));
  EXPECT_EQ(why, "invalid escape sequence");
  EXPECT_FALSE(compile_re2_regex("a(?!b)", &why));
  EXPECT_EQ(why, "invalid or unsupported Perl syntax");
  EXPECT_FALSE(compile_re2_regex("a(", &why));
  EXPECT_EQ(why, "missing closing )");
  EXPECT_FALSE(compile_re2_regex("[a-", &why));
  EXPECT_EQ(why, "missing closing ]");
  EXPECT_FALSE(compile_re2_regex("*a", &why));
  EXPECT_EQ(why, "missing argument to repetition operator");
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

TEST(re2_regex, patterns_that_backtrack_exponentially_match_in_linear_time) {
  // (a*)*b against a's and no b: 2^n steps for a backtracking engine (std::regex took minutes
  // or overflowed its stack on a topic name of 249 characters). Not a timing test: it would
  // simply never finish with a backtracking engine.
  const std::string name(100000, 'a');
  for (const char* pattern : {"(a*)*b", "(a|aa)+c", "((ab)+x)*", "(?:a?){50}a{50}"}) {
    auto re = compile_re2_regex(pattern, nullptr);
    ASSERT_TRUE(re) << pattern;
    EXPECT_FALSE(regex_full_match(*re, name)) << pattern;
  }
  auto re = compile_re2_regex("(a*)*", nullptr);
  ASSERT_TRUE(re);
  EXPECT_TRUE(regex_full_match(*re, name));
}

}  // namespace
}  // namespace tarn
