// Handler registry: lookup and what ApiVersions advertises.
#include <gtest/gtest.h>

#include "broker/handler.h"

namespace tarn::broker {
namespace {

asio::awaitable<handler_outcome> nothing(request_context&) { co_return no_response{}; }

TEST(handler_registry, advertises_what_is_registered_by_key) {
  handler_registry r;
  r.register_handler(18, 0, 4, nothing);
  r.register_handler(3, 0, 12, nothing);
  r.register_handler(0, 3, 12, nothing);
  auto ranges = r.advertised();
  ASSERT_EQ(ranges.size(), 3u);
  EXPECT_EQ(ranges[0].api_key, 0);
  EXPECT_EQ(ranges[0].min_version, 0) << "Produce is advertised from v0 (KAFKA-18659)";
  EXPECT_EQ(ranges[0].max_version, 12);
  EXPECT_EQ(ranges[1].api_key, 3);
  EXPECT_EQ(ranges[1].min_version, 0);
  EXPECT_EQ(ranges[2].api_key, 18);
  EXPECT_EQ(ranges[2].max_version, 4);

  ASSERT_NE(r.find(0), nullptr);
  EXPECT_EQ(r.find(0)->min_version, 3) << "the handler still serves only v3+";
  EXPECT_EQ(r.find(1), nullptr);
  EXPECT_EQ(r.find(-1), nullptr);
  EXPECT_EQ(r.find(1000), nullptr);
}

TEST(handler_registry, all_handlers_include_api_versions) {
  handler_registry r;
  register_all_handlers(r);
  const handler_entry* e = r.find(18);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->min_version, 0);
  EXPECT_EQ(e->max_version, 5);
}

}  // namespace
}  // namespace tarn::broker
