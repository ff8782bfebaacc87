// Java .properties parsing against java.util.Properties.load's rules.
#include "broker/properties.h"

#include <gtest/gtest.h>

namespace tarn::broker {
namespace {

properties parse_ok(std::string_view text) {
  auto r = parse_properties(text);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error());
  return r ? *r : properties{};
}

TEST(properties, separators_comments_and_blank_lines) {
  auto p = parse_ok(
      "# comment\n"
      "! also a comment\n"
      "\n"
      "   \t\n"
      "a=1\n"
      "b : 2\n"
      "c 3\n"
      "  d=  spaced value  \n"
      "e\n"
      "f=\n");
  properties want = {{"a", "1"}, {"b", "2"}, {"c", "3"}, {"d", "spaced value  "},
                     {"e", ""},  {"f", ""}};
  EXPECT_EQ(p, want);
}

TEST(properties, escapes_in_keys_and_values) {
  auto p = parse_ok("key\\=with\\:seps\\ x=v\\tw\\nx\\\\y\\u0041\\u00e9\\q\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].first, "key=with:seps x");
  EXPECT_EQ(p[0].second, "v\tw\nx\\yA\xC3\xA9q");
}

TEST(properties, continuation_lines) {
  auto p = parse_ok("listeners=PLAINTEXT://a:1,\\\n    PLAINTEXT2://b:2\nnext=x\\\\\nlast=y\\");
  properties want = {
      {"listeners", "PLAINTEXT://a:1,PLAINTEXT2://b:2"}, {"next", "x\\"}, {"last", "y"}};
  EXPECT_EQ(p, want);
}

TEST(properties, comment_lines_do_not_continue) {
  auto p = parse_ok("# comment \\\na=1\n");
  properties want = {{"a", "1"}};
  EXPECT_EQ(p, want);
}

TEST(properties, line_endings_cr_and_crlf) {
  auto p = parse_ok("a=1\r\nb=2\rc=3");
  properties want = {{"a", "1"}, {"b", "2"}, {"c", "3"}};
  EXPECT_EQ(p, want);
}

TEST(properties, later_duplicate_kept_in_order) {
  auto p = parse_ok("a=1\na=2\n");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[1].second, "2");
}

TEST(properties, malformed_unicode_escape_names_the_line) {
  auto r = parse_properties("a=1\nb=\\u12G4\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().find("line 2"), std::string::npos) << r.error();
  EXPECT_FALSE(parse_properties("b=\\u12").has_value());
}

TEST(properties, missing_file_names_the_path) {
  auto r = load_properties_file("/nonexistent/tarn/server.properties");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().find("/nonexistent/tarn/server.properties"), std::string::npos);
}

}  // namespace
}  // namespace tarn::broker
