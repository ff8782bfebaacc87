// DescribeQuorum (issue 22) end to end, against `tarn serve` and Apache Kafka 4.4.0 (a single-node
// KRaft broker+controller from scripts/kafka-ref, when java and its jars are there):
//   - Kafka's kafka-metadata-quorum.sh (MetadataQuorumCommand) `describe --status` and
//     `describe --replication [--human-readable]` print the same lines, the values that must
//     differ (cluster id, epoch, offsets, timestamps, the voter's endpoint) normalised;
//   - hand-built requests at every version, the error branches included (a wrong topic, a
//     wrong partition, two partitions, two topics, none), answered the same field by field;
//   - tarn only: the high watermark is the metadata log's end offset, grows with each change and
//     survives a restart.
// GCC 12's -Wrestrict misfires on std::string operator+ with literals (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

#include <gtest/gtest.h>

#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "kafka_client.h"
#include "kafka_ref_broker.h"
#include "protocol/messages/describe_quorum_request.h"
#include "protocol/messages/describe_quorum_response.h"
#include "test_util.h"

namespace tarn::test {
namespace {

std::string opt(const std::optional<std::string_view>& s) {
  return s ? "'" + std::string(*s) + "'" : "null";
}

std::string bootstrap(uint16_t port) { return "127.0.0.1:" + std::to_string(port); }

class describe_quorum : public ::testing::Test {
 protected:
  void SetUp() override {
    tarn_ = std::make_unique<broker_process>();
    ASSERT_NE(tarn_->port(), 0) << tarn_->output();
  }
  void TearDown() override {
    if (tarn_) tarn_->stop();
  }

  // The reference broker's port, or 0 (then the test checks tarn alone and says so).
  uint16_t kafka_port() {
#ifdef TARN_SANITIZED_BUILD
    return 0;
#else
    if (kafka_libs().empty()) return 0;
    EXPECT_EQ(kafka_test_name_error(), "");  // else the comparison would be skipped unseen
    if (!kafka_broker::instance().start().empty()) return 0;
    return kafka_broker::instance().port();
#endif
  }

  std::unique_ptr<broker_process> tarn_;
};

std::string tool(const std::string& args) {
  auto [rc, out] = run_command("timeout 120 " + std::string(TARN_SOURCE_DIR) +
                               "/scripts/kafka-ref tool " + args + " 2>&1");
  return "[rc " + std::to_string(rc) + "] " + out + "\n";
}

TEST_F(describe_quorum, kafka_metadata_quorum_prints_what_it_prints_against_kafka) {
  if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
  auto run = [&](uint16_t port) {
    const std::string command =
        "org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-server " + bootstrap(port);
    std::string out;
    out += tool(command + " describe --status");
    out += tool(command + " describe --replication");
    out += tool(command + " describe --replication --human-readable");
    out += tool(command + " describe --status --human-readable");
    out += tool(command + " describe");
    // What must differ: the cluster id, the epoch (Kafka's grows each restart), the offsets
    // (Kafka's log counts records and its controller appends a no-op every 500 ms), the
    // timestamps, and the voter's endpoint (Kafka's CONTROLLER listener, tarn's own listener).
    out = std::regex_replace(out, std::regex("(ClusterId: +)[A-Za-z0-9_-]{22}"), "$1<id>");
    out = std::regex_replace(out, std::regex("(LeaderEpoch: +)[0-9]+"), "$1<epoch>");
    out = std::regex_replace(out, std::regex("(HighWatermark: +)[0-9]+"), "$1<hw>");
    out = std::regex_replace(out, std::regex("\"endpoints\": \\[\"[A-Z_]+://[0-9.]+:[0-9]+\"\\]"),
                             "\"endpoints\": [<endpoint>]");
    // The replication table's row: node, directory id, LEO, lag, the two times, status (the
    // columns padded to the width of their longest cell).
    out = std::regex_replace(
        out,
        std::regex(
            "\n1 +\tAAAAAAAAAAAAAAAAAAAAAA\t[0-9]+ *\t0 *\t([0-9]+|[0-9]+ ms ago) *\t([0-9]+|"
            "[0-9]+ ms ago) *\tLeader\t"),
        "\n1 AAAAAAAAAAAAAAAAAAAAAA <leo> 0 <time> <time> Leader");
    return out;
  };
  const std::string tarn_out = run(tarn_->port());
  EXPECT_NE(tarn_out.find("LeaderId:               1\n"), std::string::npos) << tarn_out;
  EXPECT_NE(tarn_out.find("<leo> 0 <time> <time> Leader"), std::string::npos) << tarn_out;
  const uint16_t kafka = kafka_port();
  if (kafka == 0) GTEST_SKIP() << "no Kafka 4.4.0 to compare with; tarn printed:\n" << tarn_out;
  EXPECT_EQ(tarn_out, run(kafka));
}

// One DescribeQuorum answer, field by field; what must differ between the brokers (epoch,
// offsets, times, listener names and ports) as relations that hold on both.
std::string print(const protocol::describe_quorum_response& r, int16_t v) {
  std::ostringstream out;
  out << "error " << r.error_code << " " << opt(r.error_message) << " topics " << r.topics.size();
  for (const auto& t : r.topics) {
    out << " [" << t.topic_name;
    for (const auto& p : t.partitions) {
      out << " {" << p.partition_index << " error " << p.error_code << " " << opt(p.error_message)
          << " leader " << p.leader_id << " epoch>0 " << (p.leader_epoch > 0) << " hw>0 "
          << (p.high_watermark > 0) << " voters";
      for (const auto& s : p.current_voters) {
        out << " (" << s.replica_id << " dir " << (s.replica_directory_id == protocol::uuid{})
            << " leo>=hw " << (s.log_end_offset >= p.high_watermark);
        if (v >= 1) {
          out << " fetch>0 " << (s.last_fetch_timestamp > 0) << " caught-up=fetch "
              << (s.last_caught_up_timestamp == s.last_fetch_timestamp);
        }
        out << ")";
      }
      out << " observers " << p.observers.size() << "}";
    }
    out << "]";
  }
  if (v >= 2) {
    out << " nodes";
    for (const auto& n : r.nodes) {
      out << " (" << n.node_id << " listeners " << n.listeners.size();
      for (const auto& l : n.listeners) out << " host " << l.host << " port>0 " << (l.port > 0);
      out << ")";
    }
  }
  return out.str();
}

std::string hand_built_answers(uint16_t port) {
  auto connected = tools::kafka_client::connect(bootstrap(port));
  EXPECT_TRUE(connected.has_value());
  if (!connected) return "no connection";
  tools::kafka_client& c = **connected;
  std::ostringstream out;
  std::vector<uint8_t> buf;
  // A change, so that the metadata log is not empty on a new tarn either (Kafka's never is: its
  // bootstrap records). Already there on the shared Kafka after a first run: no matter.
  run_command(std::string("timeout 60 ") + TARN_BINARY + " topics --bootstrap-server " +
              bootstrap(port) + " --create --topic quorum-hand --partitions 1");
  using topic = protocol::describe_quorum_request::topic_data;
  const std::vector<std::pair<std::string, std::vector<topic>>> cases = {
      {"the metadata partition", {{"__cluster_metadata", {{0}}}}},
      {"another topic", {{"__consumer_offsets", {{0}}}}},
      {"partition 1", {{"__cluster_metadata", {{1}}}}},
      {"partition 0 twice", {{"__cluster_metadata", {{0}, {0}}}}},
      {"no partitions", {{"__cluster_metadata", {}}}},
      {"two topics", {{"__cluster_metadata", {{0}}}, {"other", {{3}, {-1}}}}},
      {"no topics", {}},
  };
  for (int16_t v = 0; v <= 2; ++v) {
    for (const auto& [what, topics] : cases) {
      protocol::describe_quorum_request req;
      req.topics = topics;
      auto r = tools::call<protocol::describe_quorum_response>(c, req, v, buf);
      out << "DescribeQuorum v" << v << " " << what << ": ";
      if (!r) {
        out << r.error() << "\n";
        continue;
      }
      out << print(*r, v) << "\n";
    }
  }
  return out.str();
}

TEST_F(describe_quorum, hand_built_requests_answered_the_same_against_kafka) {
  const std::string tarn_out = hand_built_answers(tarn_->port());
  // ErrorMessage is "" without an error (Kafka's default for a nullable string without one).
  EXPECT_NE(tarn_out.find("DescribeQuorum v2 the metadata partition: error 0 '' topics 1 "
                          "[__cluster_metadata {0 error 0 '' leader 1 epoch>0 1 hw>0 1 voters "
                          "(1 dir 1 leo>=hw 1 fetch>0 1 caught-up=fetch 1) observers 0}] nodes "
                          "(1 listeners 1 host 127.0.0.1 port>0 1)"),
            std::string::npos)
      << tarn_out;
  const uint16_t kafka = kafka_port();
  if (kafka == 0) GTEST_SKIP() << "no Kafka 4.4.0 to compare with; tarn answered:\n" << tarn_out;
  EXPECT_EQ(tarn_out, hand_built_answers(kafka));
}

int64_t high_watermark(uint16_t port) {
  auto connected = tools::kafka_client::connect(bootstrap(port));
  if (!connected) return -1;
  std::vector<uint8_t> buf;
  protocol::describe_quorum_request req;
  req.topics.push_back({"__cluster_metadata", {{0}}});
  auto r = tools::call<protocol::describe_quorum_response>(**connected, req, 2, buf);
  if (!r || r->topics.empty() || r->topics[0].partitions.empty()) return -1;
  const auto& p = r->topics[0].partitions[0];
  if (p.current_voters.size() != 1 || p.current_voters[0].log_end_offset != p.high_watermark) {
    return -1;
  }
  return p.high_watermark;
}

TEST_F(describe_quorum, high_watermark_is_the_metadata_log_end_and_survives_a_restart) {
  const int64_t before = high_watermark(tarn_->port());
  ASSERT_GE(before, 0);  // 0 in a new log directory: nothing changed yet
  auto [rc, out] =
      run_command(std::string("timeout 60 ") + TARN_BINARY + " topics --bootstrap-server " +
                  bootstrap(tarn_->port()) + " --create --topic quorum-a --partitions 3");
  ASSERT_EQ(rc, 0) << out;
  const int64_t after = high_watermark(tarn_->port());
  EXPECT_EQ(after, before + 1) << "one topic is one change";
  // The first process owns the data directory (its temp dir): kept until the second stopped.
  auto first = std::move(tarn_);
  first->stop();
  tarn_ = std::make_unique<broker_process>(std::vector<std::string>{}, first->data_dir());
  ASSERT_NE(tarn_->port(), 0) << tarn_->output();
  EXPECT_EQ(high_watermark(tarn_->port()), after);
  tarn_->stop();
  tarn_.reset();
}

}  // namespace
}  // namespace tarn::test
