// Uuid's text forms and random ids, as Kafka's org.apache.kafka.common.Uuid makes them.
#include "base/uuid.h"

#include <gtest/gtest.h>

#include <string>

namespace tarn {
namespace {

TEST(Uuid, StringsMatchKafka) {
  // Uuid(0, 1) is Kafka's ONE_UUID "AAAAAAAAAAAAAAAAAAAAAQ"; the others check the alphabet.
  EXPECT_EQ((uuid{0, 1}.to_string()), "AAAAAAAAAAAAAAAAAAAAAQ");
  EXPECT_EQ((uuid{~0ull, ~0ull}.to_string()), "_____________________w");
  uuid u{0x0123456789abcdefull, 0xfedcba9876543210ull};
  EXPECT_EQ(u.to_string(), "ASNFZ4mrze_-3LqYdlQyEA");
  EXPECT_EQ(uuid::parse(u.to_string()), u);
  EXPECT_FALSE(uuid::parse("too-short"));
  EXPECT_FALSE(uuid::parse("ASNFZ4mrze_-3LqYdlQyE*"));
  for (int i = 0; i < 200; ++i) {
    uuid r = uuid::random();
    std::string s = r.to_string();
    EXPECT_EQ(s.size(), 22u);
    EXPECT_NE(s.front(), '-');
    EXPECT_EQ((r.most_significant_bits >> 12) & 0xf, 4u);  // version 4
    EXPECT_EQ(r.least_significant_bits >> 62, 2u);         // IETF variant
    EXPECT_EQ(uuid::parse(s), r);
  }
}

}  // namespace
}  // namespace tarn
