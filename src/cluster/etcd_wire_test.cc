// etcd's JSON gateway messages without a server: requests as etcd 3.4 reads them, and answers
// recorded from a real etcd 3.4.23 (the fixtures below), malformed answers refused as values.
#include "cluster/etcd_wire.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tarn::cluster::etcd {
namespace {

using json = nlohmann::json;

TEST(EtcdWire, PrefixEndIncrementsTheLastByteBelowFf) {
  EXPECT_EQ(prefix_end("/tarn/"), "/tarn0");
  EXPECT_EQ(prefix_end(std::string("a\xff", 2)), "b");
  EXPECT_EQ(prefix_end(std::string("\xff\xff", 2)), std::string(1, '\0'));
  EXPECT_EQ(prefix_end(""), std::string(1, '\0'));
}

TEST(EtcdWire, RequestsCarryBase64KeysAndDecimalInt64s) {
  auto range = json::parse(encode_range("/tarn/a", prefix_end("/tarn/a"), 7, 10));
  EXPECT_EQ(range["key"], "L3Rhcm4vYQ==");
  EXPECT_EQ(range["range_end"], "L3Rhcm4vYg==");
  EXPECT_EQ(range["revision"], "7");
  EXPECT_EQ(range["limit"], "10");

  auto put = json::parse(encode_put("k", std::string("\0\x01", 2), 42));
  EXPECT_EQ(put["key"], "aw==");
  EXPECT_EQ(put["value"], "AAE=");
  EXPECT_EQ(put["lease"], "42");
  EXPECT_FALSE(json::parse(encode_put("k", "v"))["lease"].is_string());

  EXPECT_EQ(json::parse(encode_lease_grant(10))["TTL"], "10");
  EXPECT_EQ(json::parse(encode_lease_id(2324035839722842887))["ID"], "2324035839722842887");

  auto watch = json::parse(encode_watch_create("/p/", prefix_end("/p/"), 5, true));
  EXPECT_EQ(watch["create_request"]["key"], "L3Av");
  EXPECT_EQ(watch["create_request"]["start_revision"], "5");
  EXPECT_EQ(watch["create_request"]["progress_notify"], true);
}

TEST(EtcdWire, TransactionComparesTheTargetsField) {
  txn_request t;
  t.compares.push_back(
      {"a", compare::target_kind::mod_revision, compare::result_kind::equal, 9, {}});
  t.compares.push_back(
      {"b", compare::target_kind::create_revision, compare::result_kind::equal, 0, {}});
  t.compares.push_back({"c", compare::target_kind::value, compare::result_kind::not_equal, 0, "x"});
  t.success.push_back(request_op::put("a", "v", 3));
  t.success.push_back(request_op::delete_range("b"));
  t.failure.push_back(request_op::range("a"));
  auto j = json::parse(encode_txn(t));
  ASSERT_EQ(j["compare"].size(), 3u);
  EXPECT_EQ(j["compare"][0]["target"], "MOD");
  EXPECT_EQ(j["compare"][0]["mod_revision"], "9");
  EXPECT_EQ(j["compare"][0]["result"], "EQUAL");
  EXPECT_EQ(j["compare"][1]["target"], "CREATE");
  EXPECT_EQ(j["compare"][1]["create_revision"], "0");
  EXPECT_EQ(j["compare"][2]["target"], "VALUE");
  EXPECT_EQ(j["compare"][2]["value"], "eA==");
  EXPECT_EQ(j["compare"][2]["result"], "NOT_EQUAL");
  EXPECT_EQ(j["success"][0]["request_put"]["lease"], "3");
  EXPECT_EQ(j["success"][1]["request_delete_range"]["key"], "Yg==");
  EXPECT_EQ(j["failure"][0]["request_range"]["key"], "YQ==");
}

TEST(EtcdWire, RecordedAnswersDecode) {
  auto range = decode_range(
      R"({"header":{"cluster_id":"324952591200643719","member_id":"3319814642761637952","revision":"4","raft_term":"2"},"kvs":[{"key":"L3Rhcm4vYQ==","create_revision":"2","mod_revision":"4","version":"3","value":"aGVsbG8="}],"count":"1"})");
  ASSERT_TRUE(range) << range.error().message;
  EXPECT_EQ(range->revision, 4);
  EXPECT_EQ(range->count, 1);
  ASSERT_EQ(range->kvs.size(), 1u);
  EXPECT_EQ(range->kvs[0].key, "/tarn/a");
  EXPECT_EQ(range->kvs[0].value, "hello");
  EXPECT_EQ(range->kvs[0].create_revision, 2);
  EXPECT_EQ(range->kvs[0].mod_revision, 4);
  EXPECT_EQ(range->kvs[0].version, 3);

  auto empty = decode_range(R"({"header":{"revision":"9"}})");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->kvs.empty());
  EXPECT_EQ(empty->count, 0);

  auto put = decode_revision(R"({"header":{"cluster_id":"1","revision":"2","raft_term":"2"}})");
  ASSERT_TRUE(put);
  EXPECT_EQ(*put, 2);

  auto won = decode_txn(
      R"({"header":{"revision":"6"},"succeeded":true,"responses":[{"response_put":{"header":{"revision":"6"}}}]})");
  ASSERT_TRUE(won);
  EXPECT_TRUE(won->succeeded);
  EXPECT_EQ(won->revision, 6);
  ASSERT_EQ(won->responses.size(), 1u);
  EXPECT_EQ(won->responses[0].op, request_op::kind::put);

  // A failed comparison: "succeeded" left out (proto3's default), the failure branch's range.
  auto lost = decode_txn(
      R"({"header":{"revision":"6"},"responses":[{"response_range":{"header":{"revision":"6"},"kvs":[{"key":"YQ==","create_revision":"6","mod_revision":"6","version":"1","value":"Yg=="}],"count":"1"}}]})");
  ASSERT_TRUE(lost);
  EXPECT_FALSE(lost->succeeded);
  ASSERT_EQ(lost->responses.size(), 1u);
  ASSERT_EQ(lost->responses[0].kvs.size(), 1u);
  EXPECT_EQ(lost->responses[0].kvs[0].value, "b");

  auto grant =
      decode_lease_grant(R"({"header":{"revision":"2"},"ID":"2324035839722842887","TTL":"5"})");
  ASSERT_TRUE(grant);
  EXPECT_EQ(grant->id, 2324035839722842887);
  EXPECT_EQ(grant->ttl_s, 5);

  auto alive =
      decode_lease_keep_alive(R"({"result":{"header":{"revision":"4"},"ID":"7","TTL":"5"}})");
  ASSERT_TRUE(alive);
  EXPECT_EQ(*alive, 5);
  // A lease that is gone: the keepalive answers without a TTL.
  auto gone = decode_lease_keep_alive(R"({"result":{"header":{"revision":"4"},"ID":"999"}})");
  ASSERT_TRUE(gone);
  EXPECT_EQ(*gone, 0);
}

TEST(EtcdWire, GatewayErrorsBecomeEtcdErrors) {
  auto e = decode_lease_revoke(
      R"({"error":"etcdserver: requested lease not found","message":"etcdserver: requested lease not found","code":5})");
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, etcd_error::not_found);
  EXPECT_EQ(e.error().message, "etcdserver: requested lease not found");

  auto bad = decode_revision(
      R"({"error":"illegal base64 data at input byte 0","message":"illegal base64 data at input byte 0","code":3})");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, etcd_error::invalid_argument);
}

TEST(EtcdWire, WatchMessagesDecode) {
  auto created = decode_watch(
      R"({"result":{"header":{"cluster_id":"3","revision":"3","raft_term":"2"},"created":true}})");
  ASSERT_TRUE(created);
  EXPECT_TRUE(created->created);
  EXPECT_EQ(created->revision, 3);
  EXPECT_TRUE(created->events.empty());

  auto events = decode_watch(
      R"({"result":{"header":{"revision":"5"},"events":[{"kv":{"key":"L3Rhcm4vYQ==","create_revision":"2","mod_revision":"4","version":"3","value":"aGVsbG8="}},{"type":"DELETE","kv":{"key":"L3Rhcm4vYQ==","mod_revision":"5"}}]}})");
  ASSERT_TRUE(events);
  ASSERT_EQ(events->events.size(), 2u);
  EXPECT_EQ(events->events[0].type, watch_event::kind::put);
  EXPECT_EQ(events->events[0].kv.value, "hello");
  EXPECT_EQ(events->events[1].type, watch_event::kind::delete_key);
  EXPECT_EQ(events->events[1].kv.mod_revision, 5);
  EXPECT_EQ(events->events[1].kv.version, 0);

  auto compacted = decode_watch(
      R"({"result":{"header":{"revision":"6"},"canceled":true,"compact_revision":"3"}})");
  ASSERT_TRUE(compacted);
  EXPECT_TRUE(compacted->canceled);
  EXPECT_EQ(compacted->compact_revision, 3);

  auto error = decode_watch(R"({"error":{"grpc_code":14,"http_code":503,"message":"x"}})");
  ASSERT_FALSE(error);
  EXPECT_EQ(error.error().code, etcd_error::unavailable);
}

TEST(EtcdWire, MalformedAnswersAreErrorsNotExceptions) {
  const char* bodies[] = {
      "",
      "not json",
      "[1,2]",
      R"({"header":{"revision":"x"}})",
      R"({"header":{"revision":"12abc"}})",
      R"({"header":"oops"})",
      R"({"kvs":{"key":"YQ=="}})",
      R"({"kvs":[{"key":"not base64!"}]})",
      R"({"kvs":[{"key":"YQ=","value":"YQ=="}]})",
      R"({"kvs":[{"key":7}]})",
      R"({"count":"99999999999999999999999"})",
      R"({"more":"yes"})",
      "{\"header\":{\"revision\":\"1\"},\"kvs\":[{\"key\":\"YQ==\"",
  };
  for (const char* body : bodies) {
    auto r = decode_range(body);
    ASSERT_FALSE(r) << body;
    EXPECT_EQ(r.error().code, etcd_error::internal) << body;
  }
  EXPECT_FALSE(decode_txn(R"({"responses":[{"response_unknown":{}}]})"));
  EXPECT_FALSE(decode_txn(R"({"responses":{}})"));
  EXPECT_FALSE(decode_txn(R"({"succeeded":1})"));
  EXPECT_FALSE(decode_lease_grant(R"({"TTL":"5"})"));  // no ID
  EXPECT_FALSE(decode_lease_keep_alive(R"({"ID":"5"})"));
  EXPECT_FALSE(decode_watch(R"({"result":{"events":[{"type":"MOVE","kv":{}}]}})"));
  EXPECT_FALSE(decode_watch(R"({"result":{"events":[{"type":"PUT"}]}})"));
  EXPECT_FALSE(decode_watch(R"({"result":{"events":"x"}})"));
  EXPECT_FALSE(decode_watch("{\"result\":"));
}

}  // namespace
}  // namespace tarn::cluster::etcd
