// Waiting for appends no answer reports: with acks=0 a producer is done once its bytes are
// written, before the broker has read them, so a test that reads back, or stops the broker,
// first polls ListOffsets LATEST until the log end reaches the count sent. Works against tarn and
// Kafka alike (ListOffsets v7, which both serve).
#pragma once

#include <fmt/format.h>

#include <string>
#include <thread>
#include <vector>

#include "kafka_client.h"
#include "protocol/messages/list_offsets_request.h"
#include "protocol/messages/list_offsets_response.h"
#include "test_util.h"

namespace tarn::test {

// The latest offset (the next one to be written) of topic-partition, or -1 without an answer or
// with an error.
inline int64_t latest_offset(uint16_t port, const std::string& topic, int32_t partition = 0) {
  auto c = tools::kafka_client::connect(fmt::format("127.0.0.1:{}", port), 10s);
  if (!c) return -1;
  protocol::list_offsets_request req;
  req.replica_id = -1;
  auto& t = req.topics.emplace_back();
  t.name = topic;
  auto& p = t.partitions.emplace_back();
  p.partition_index = partition;
  p.timestamp = -1;  // LATEST
  std::vector<uint8_t> buffer;
  auto r = tools::call<protocol::list_offsets_response>(**c, req, 7, buffer);
  if (!r || r->topics.size() != 1 || r->topics[0].partitions.size() != 1) return -1;
  const auto& answer = r->topics[0].partitions[0];
  return answer.error_code == 0 ? answer.offset : -1;
}

// Polls latest_offset until it reaches `offset` or `timeout` passes; returns the last one seen.
inline int64_t wait_for_latest_offset(uint16_t port, const std::string& topic, int32_t partition,
                                      int64_t offset,
                                      std::chrono::milliseconds timeout = event_timeout) {
  const auto deadline = clock_type::now() + timeout;
  int64_t latest = latest_offset(port, topic, partition);
  while (latest < offset && clock_type::now() < deadline) {
    std::this_thread::sleep_for(20ms);
    latest = latest_offset(port, topic, partition);
  }
  return latest;
}

}  // namespace tarn::test
