// Handler registry: lookup and what ApiVersions advertises.
#include <gtest/gtest.h>

#include "broker/handler.h"
#include "protocol/messages/consumer_group_describe_request.h"
#include "protocol/messages/consumer_group_heartbeat_request.h"
#include "protocol/messages/delete_groups_request.h"
#include "protocol/messages/describe_groups_request.h"
#include "protocol/messages/describe_producers_request.h"
#include "protocol/messages/describe_transactions_request.h"
#include "protocol/messages/heartbeat_request.h"
#include "protocol/messages/join_group_request.h"
#include "protocol/messages/leave_group_request.h"
#include "protocol/messages/list_groups_request.h"
#include "protocol/messages/list_transactions_request.h"
#include "protocol/messages/offset_commit_request.h"
#include "protocol/messages/offset_delete_request.h"
#include "protocol/messages/offset_fetch_request.h"
#include "protocol/messages/sync_group_request.h"
#include "protocol/messages/write_txn_markers_request.h"

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

template <class Request>
void expect_schema_versions(const handler_registry& r) {
  const handler_entry* e = r.find(Request::api_key);
  ASSERT_NE(e, nullptr) << Request::kafka_name;
  EXPECT_EQ(e->min_version, Request::min_version) << Request::kafka_name;
  EXPECT_EQ(e->max_version, Request::max_version) << Request::kafka_name;
}

TEST(handler_registry, group_apis_are_served_at_their_schemas_versions) {
  handler_registry r;
  register_all_handlers(r);
  expect_schema_versions<protocol::offset_commit_request>(r);
  expect_schema_versions<protocol::offset_fetch_request>(r);
  expect_schema_versions<protocol::join_group_request>(r);
  expect_schema_versions<protocol::heartbeat_request>(r);
  expect_schema_versions<protocol::leave_group_request>(r);
  expect_schema_versions<protocol::sync_group_request>(r);
  expect_schema_versions<protocol::describe_groups_request>(r);
  expect_schema_versions<protocol::list_groups_request>(r);
  expect_schema_versions<protocol::delete_groups_request>(r);
  expect_schema_versions<protocol::offset_delete_request>(r);
  expect_schema_versions<protocol::consumer_group_heartbeat_request>(r);
  expect_schema_versions<protocol::consumer_group_describe_request>(r);
}

// Kafka 4.4 serves every version these schemas parse (WriteTxnMarkers from v1: v0 is gone).
TEST(handler_registry, transaction_admin_apis_are_served_at_their_schemas_versions) {
  handler_registry r;
  register_all_handlers(r);
  expect_schema_versions<protocol::write_txn_markers_request>(r);
  expect_schema_versions<protocol::describe_producers_request>(r);
  expect_schema_versions<protocol::describe_transactions_request>(r);
  expect_schema_versions<protocol::list_transactions_request>(r);
  EXPECT_EQ(r.find(27)->min_version, 1);
  EXPECT_EQ(r.find(66)->max_version, 2);
}

}  // namespace
}  // namespace tarn::broker
