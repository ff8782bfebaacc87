// The broker registration's value under brokers/<id> (cluster_membership.h), without etcd:
// what is written reads back, and values that are not a registration are refused.
#include "cluster/cluster_membership.h"

#include <gtest/gtest.h>

namespace tarn::cluster {
namespace {

TEST(broker_registration, round_trips_with_and_without_rack) {
  broker_registration r;
  r.node_id = 3;
  r.incarnation_id = "Zm9vYmFyYmF6cXV4MTIzNA";
  r.listeners = {{"PLAINTEXT", "127.0.0.1", 9094}, {"SSL", "broker3.example", 9095}};
  r.rack = "rack-b";
  auto back = decode_broker_registration(encode_broker_registration(r));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, r);
  ASSERT_NE(back->endpoint("SSL"), nullptr);
  EXPECT_EQ(back->endpoint("SSL")->port, 9095);
  EXPECT_EQ(back->endpoint("SASL_SSL"), nullptr);

  r.rack.reset();
  back = decode_broker_registration(encode_broker_registration(r));
  ASSERT_TRUE(back.has_value());
  EXPECT_FALSE(back->rack.has_value());
}

TEST(broker_registration, carries_a_controlled_shutdown_only_while_set) {
  broker_registration r;
  r.node_id = 2;
  r.incarnation_id = "x";
  // Without the flag the value is what it was before the field existed.
  EXPECT_EQ(encode_broker_registration(r).find("in_controlled_shutdown"), std::string::npos);
  r.in_controlled_shutdown = true;
  auto back = decode_broker_registration(encode_broker_registration(r));
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(back->in_controlled_shutdown);
  EXPECT_EQ(*back, r);
  EXPECT_FALSE(
      decode_broker_registration(
          R"({"node_id":1,"incarnation_id":"x","listeners":[],"in_controlled_shutdown":1})")
          .has_value());
}

TEST(broker_registration, refuses_what_is_not_one) {
  for (
      const char* text : {
          "",
          "[]",
          "not json",
          R"({"node_id":1})",
          R"({"node_id":-1,"incarnation_id":"x","listeners":[]})",
          R"({"node_id":1,"incarnation_id":"x","listeners":[{"name":"P","host":"h"}]})",
          R"({"node_id":1,"incarnation_id":"x","listeners":[{"name":"P","host":"h","port":70000}]})",
          R"({"node_id":1,"incarnation_id":"x","listeners":[],"rack":5})",
          R"({"node_id":"1","incarnation_id":"x","listeners":[]})",
      }) {
    EXPECT_FALSE(decode_broker_registration(text).has_value()) << text;
  }
  EXPECT_TRUE(decode_broker_registration(R"({"node_id":1,"incarnation_id":"x","listeners":[]})")
                  .has_value());
}

TEST(etcd_connect, host_port_becomes_a_url) {
  EXPECT_EQ(etcd_endpoint_urls({"127.0.0.1:2379", "http://10.0.0.2:2379"}),
            (std::vector<std::string>{"http://127.0.0.1:2379", "http://10.0.0.2:2379"}));
}

}  // namespace
}  // namespace tarn::cluster
