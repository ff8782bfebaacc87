// AlterClientQuotas validation and DescribeClientQuotas filters, with Kafka 4.4's error codes and
// messages (ClientQuotaControlManager, ClientQuotasImage).
#include "quota/client_quota_store.h"

#include <gtest/gtest.h>

namespace tarn::quota {
namespace {

quota_entity client(const char* id) { return {{{client_id_entity_type, std::string(id)}}}; }
quota_entity user_client(std::optional<std::string> u, std::optional<std::string> c) {
  return {{{user_entity_type, u}, {client_id_entity_type, c}}};
}

std::vector<std::pair<quota_entity, quota_error>> alter(client_quota_store& s,
                                                        std::vector<quota_alteration> a) {
  std::vector<quota_record> records;
  auto r = s.alter(a, records);
  for (const auto& rec : records) s.apply(rec);
  return r;
}

TEST(client_quota_store, sets_changes_and_removes_values) {
  client_quota_store s;
  auto r = alter(s, {{client("c1"), {{producer_byte_rate, 1024}, {consumer_byte_rate, 2048}}}});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].second.code, 0);
  EXPECT_EQ(s.get(client("c1"), producer_byte_rate), 1024);
  std::vector<quota_record> records;
  // An unchanged value is no record; a removal of an unset key neither.
  s.alter({{client("c1"), {{producer_byte_rate, 1024}, {request_percentage, std::nullopt}}}},
          records);
  EXPECT_TRUE(records.empty());
  alter(s,
        {{client("c1"), {{producer_byte_rate, std::nullopt}, {consumer_byte_rate, std::nullopt}}}});
  EXPECT_TRUE(s.all().empty()) << "an entity without values is gone";
}

TEST(client_quota_store, rejects_what_kafka_rejects_with_its_messages) {
  client_quota_store s;
  auto check = [&](quota_alteration a, int16_t code, const std::string& message) {
    std::vector<quota_record> records;
    auto r = s.alter({a}, records);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].second.code, code) << message;
    EXPECT_EQ(r[0].second.message, message);
    EXPECT_TRUE(records.empty());
  };
  check({client("c"), {{"producer_byte_rate", 0}}}, 42,
        "Quota producer_byte_rate must be greater than 0");
  check({client("c"), {{"producer_byte_rate", 1.5}}}, 42,
        "producer_byte_rate cannot be a fractional value.");
  check({client("c"), {{"bogus", 1}}}, 42, "Invalid configuration key bogus");
  check({client("c"), {{"connection_creation_rate", 1}}}, 42,
        "Invalid configuration key connection_creation_rate");
  check({{{{"group", std::string("g")}}}, {{"producer_byte_rate", 1}}}, 42,
        "Unhandled client quota entity type: group");
  check({{{{"user", std::string("")}}}, {{"producer_byte_rate", 1}}}, 42,
        "Empty user not supported");
  check({{}, {{"producer_byte_rate", 1}}}, 42, "Invalid empty client quota entity");
  check({{{{"ip", std::string("10.0.0.1")}, {"user", std::string("u")}}},
         {{"connection_creation_rate", 1}}},
        42,
        "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId");
  check({{{{"ip", std::string("not an ip")}}}, {{"connection_creation_rate", 1}}}, 42,
        "not an ip is not a valid IP or resolvable host.");
  check({{{{"ip", std::string("10.0.0.1")}}}, {{"connection_creation_rate", 3e9}}}, 42,
        "Proposed value for connection_creation_rate is too large for an INT.");
  check({client("c"), {{"producer_byte_rate", 1}, {"producer_byte_rate", 2}}}, 42,
        "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=c})");
}

TEST(client_quota_store, a_second_alteration_of_an_entity_is_ignored_after_the_first_applied) {
  client_quota_store s;
  auto r = alter(
      s, {{client("c"), {{producer_byte_rate, 10}}}, {client("c"), {{producer_byte_rate, 20}}}});
  ASSERT_EQ(r.size(), 1u) << "one answer per entity";
  EXPECT_EQ(r[0].second.code, 42);
  EXPECT_EQ(s.get(client("c"), producer_byte_rate), 10) << "as Kafka, the first one's change stays";
}

TEST(client_quota_store, describe_filters_as_kafka) {
  client_quota_store s;
  alter(s, {{client("c1"), {{producer_byte_rate, 1}}},
            {{{{client_id_entity_type, std::nullopt}}}, {{producer_byte_rate, 2}}},
            {user_client("u1", "c1"), {{consumer_byte_rate, 3}}},
            {{{{user_entity_type, std::nullopt}}}, {{request_percentage, 4.5}}},
            {{{{ip_entity_type, std::string("127.0.0.1")}}}, {{connection_creation_rate, 5}}}});
  auto count = [&](std::vector<quota_filter_component> f, bool strict) {
    std::vector<quota_described> out;
    auto e = s.describe(f, strict, out);
    EXPECT_FALSE(e) << (e ? e->message : "");
    return out.size();
  };
  EXPECT_EQ(count({}, false), 5u);
  EXPECT_EQ(count({}, true), 0u);
  EXPECT_EQ(count({{client_id_entity_type, 0, "c1"}}, false), 2u);  // c1 and u1/c1
  EXPECT_EQ(count({{client_id_entity_type, 0, "c1"}}, true), 1u);
  EXPECT_EQ(count({{client_id_entity_type, 1, std::nullopt}}, false), 1u);
  EXPECT_EQ(count({{client_id_entity_type, 2, std::nullopt}}, false), 3u);  // containsKey
  EXPECT_EQ(
      count({{user_entity_type, 2, std::nullopt}, {client_id_entity_type, 2, std::nullopt}}, true),
      1u);
  EXPECT_EQ(count({{ip_entity_type, 2, std::nullopt}}, false), 1u);

  std::vector<quota_described> out;
  auto bad = [&](std::vector<quota_filter_component> f, int16_t code, const std::string& m) {
    auto e = s.describe(f, false, out);
    ASSERT_TRUE(e.has_value()) << m;
    EXPECT_EQ(e->code, code);
    EXPECT_EQ(e->message, m);
  };
  bad({{"", 0, "x"}}, 42, "Invalid empty entity type.");
  bad({{"group", 0, "x"}}, 35, "Unsupported entity type group");
  bad({{"user", 0, std::nullopt}}, 42,
      "Request specified MATCH_TYPE_EXACT, but set match string to null.");
  bad({{"user", 1, "x"}}, 42,
      "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.");
  bad({{"user", 2, "x"}}, 42,
      "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.");
  bad({{"user", 7, std::nullopt}}, 42, "Unknown match type 7");
  bad({{"user", 2, std::nullopt}, {"user", 1, std::nullopt}}, 42,
      "Entity type user cannot appear more than once in the filter.");
  bad({{"ip", 2, std::nullopt}, {"user", 2, std::nullopt}}, 42,
      "Invalid entity filter component combination. IP filter component should not be used with "
      "user or clientId filter component.");
}

}  // namespace
}  // namespace tarn::quota
