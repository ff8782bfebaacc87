// Hand-built Produce, CreateTopics and Fetch round trips for the overload, full-disk and
// durability tests: one-record batches built with record::batch_builder, requests encoded with
// the generated protocol messages, batches read back through Fetch v12 and compared byte for
// byte (everything but the base offset and partition leader epoch the broker assigns).
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "kafka_client.h"
#include "protocol/messages/create_topics_request.h"
#include "protocol/messages/create_topics_response.h"
#include "protocol/messages/fetch_request.h"
#include "protocol/messages/fetch_response.h"
#include "protocol/messages/produce_request.h"
#include "protocol/messages/produce_response.h"
#include "protocol/reader.h"
#include "protocol/writer.h"
#include "record/batch_builder.h"
#include "test_util.h"

namespace tarn::test {

// One batch of one record whose value is `value` (uncompressed, no producer id).
inline std::vector<uint8_t> value_batch(std::string_view value) {
  record::batch_builder_config config;
  config.batch_size = 64 << 20;
  record::batch_builder b(config);
  b.try_append(1'700'000'000'000, std::nullopt, record::as_bytes(value));
  return *b.build();
}

// One batch of one transactional record `value` of producer `pid` at `epoch`, sequence `seq`.
inline std::vector<uint8_t> transactional_batch(int64_t pid, int16_t epoch, int32_t seq,
                                                std::string_view value) {
  record::batch_builder_config config;
  config.producer_id = pid;
  config.producer_epoch = epoch;
  config.base_sequence = seq;
  config.transactional = true;
  record::batch_builder b(config);
  b.try_append(1'700'000'000'000, std::nullopt, record::as_bytes(value));
  return *b.build();
}

// A Produce request (acks=all) of `batch` to topic-partition for transactional id `id`. It holds
// views of `id`, `topic` and `batch`, which must outlive it.
inline protocol::produce_request transactional_produce(const std::string& id,
                                                       const std::string& topic, int32_t partition,
                                                       std::span<const uint8_t> batch,
                                                       int32_t timeout_ms) {
  protocol::produce_request req;
  req.transactional_id = std::string_view(id);
  req.acks = -1;
  req.timeout_ms = timeout_ms;
  auto& t = req.topic_data.emplace_back();
  t.name = topic;
  auto& p = t.partition_data.emplace_back();
  p.index = partition;
  p.records = batch;
  return req;
}

// A Produce v9 request frame (size prefix included) of `batch` to topic-partition.
inline std::vector<uint8_t> produce_frame(int32_t correlation_id, const std::string& topic,
                                          int32_t partition, std::span<const uint8_t> batch,
                                          int16_t acks = -1, int32_t timeout_ms = 30000) {
  protocol::produce_request req;
  req.acks = acks;
  req.timeout_ms = timeout_ms;
  auto& t = req.topic_data.emplace_back();
  t.name = topic;
  auto& p = t.partition_data.emplace_back();
  p.index = partition;
  p.records = batch;
  std::vector<uint8_t> body;
  protocol::writer w(body);
  req.encode(w, 9);
  return request_frame(0, 9, correlation_id, body, true);
}

struct produce_answer {
  int32_t correlation_id = -1;
  int16_t error_code = -100;  // -100: no answer, -101: undecodable
  int64_t base_offset = -1;
};

// Decodes a Produce v9 response frame (as raw_client::read_frame returns it).
inline produce_answer decode_produce(const std::optional<std::vector<uint8_t>>& frame) {
  produce_answer a;
  if (!frame || frame->size() < 5) return a;
  a.correlation_id = get_int32(*frame, 0);
  protocol::reader r(std::span<const uint8_t>(*frame).subspan(5));
  auto decoded = protocol::produce_response::decode(r, 9);
  if (!decoded) {
    a.error_code = -101;
    return a;
  }
  const auto& pr = decoded->responses.at(0).partition_responses.at(0);
  a.error_code = pr.error_code;
  a.base_offset = pr.base_offset;
  return a;
}

inline produce_answer produce_one(raw_client& c, int32_t correlation_id, const std::string& topic,
                                  int32_t partition, std::span<const uint8_t> batch) {
  if (!c.send_bytes(produce_frame(correlation_id, topic, partition, batch))) return {};
  return decode_produce(c.read_frame(30s));
}

// CreateTopics v7; returns the topic's error code (-100 when there was no answer).
inline int16_t create_topic(uint16_t port, const std::string& name, int32_t partitions,
                            std::vector<std::pair<std::string, std::string>> configs = {},
                            int16_t replication_factor = 1) {
  protocol::create_topics_request req;
  req.timeout_ms = 30000;
  auto& t = req.topics.emplace_back();
  t.name = name;
  t.num_partitions = partitions;
  t.replication_factor = replication_factor;
  for (auto& [k, v] : configs) {
    auto& c = t.configs.emplace_back();
    c.name = k;
    c.value = v;
  }
  std::vector<uint8_t> body;
  protocol::writer w(body);
  req.encode(w, 7);
  raw_client c(port);
  if (!c.send_request(19, 7, 1, body, true)) return -100;
  auto frame = c.read_frame(30s);
  if (!frame) return -100;
  protocol::reader r(std::span<const uint8_t>(*frame).subspan(5));
  auto decoded = protocol::create_topics_response::decode(r, 7);
  if (!decoded) return -101;
  return decoded->topics.at(0).error_code;
}

// A Fetch v12 request frame for one partition from `offset`.
inline std::vector<uint8_t> fetch_frame(int32_t correlation_id, const std::string& topic,
                                        int32_t partition, int64_t offset, int32_t max_wait_ms,
                                        int32_t min_bytes,
                                        std::optional<std::string> client_id = "tarn-test") {
  protocol::fetch_request req;
  req.max_wait_ms = max_wait_ms;
  req.min_bytes = min_bytes;
  req.max_bytes = 50 << 20;
  req.session_epoch = -1;
  auto& t = req.topics.emplace_back();
  t.topic = topic;
  auto& p = t.partitions.emplace_back();
  p.partition = partition;
  p.fetch_offset = offset;
  p.partition_max_bytes = 50 << 20;
  std::vector<uint8_t> body;
  protocol::writer w(body);
  req.encode(w, 12);
  return request_frame(1, 12, correlation_id, body, true, std::move(client_id));
}

struct fetch_answer {
  int16_t error_code = -100;
  int64_t high_watermark = -1;
  std::vector<uint8_t> records;
};

inline fetch_answer decode_fetch(const std::optional<std::vector<uint8_t>>& frame) {
  fetch_answer a;
  if (!frame || frame->size() < 5) return a;
  protocol::reader r(std::span<const uint8_t>(*frame).subspan(5));
  auto decoded = protocol::fetch_response::decode(r, 12);
  if (!decoded) {
    a.error_code = -101;
    return a;
  }
  const auto& p = decoded->responses.at(0).partitions.at(0);
  a.error_code = p.error_code;
  a.high_watermark = p.high_watermark;
  if (p.records) a.records.assign(p.records->begin(), p.records->end());
  return a;
}

// Every batch of a partition, keyed by base offset, read with Fetch until the high watermark.
// Fails the test on an error or a batch that does not follow the previous one.
inline std::map<int64_t, std::vector<uint8_t>> fetch_all(uint16_t port, const std::string& topic,
                                                         int32_t partition) {
  std::map<int64_t, std::vector<uint8_t>> out;
  raw_client c(port);
  int64_t offset = 0;
  for (int32_t round = 0;; ++round) {
    EXPECT_TRUE(c.send_bytes(fetch_frame(round, topic, partition, offset, 0, 0)));
    fetch_answer a = decode_fetch(c.read_frame(30s));
    EXPECT_EQ(a.error_code, 0) << topic << "-" << partition << " at " << offset;
    if (a.error_code != 0 || a.records.empty()) break;
    size_t pos = 0;
    while (pos + 12 <= a.records.size()) {
      std::span<const uint8_t> rest(a.records.data() + pos, a.records.size() - pos);
      int64_t base = (int64_t{get_int32(rest, 0)} << 32) | uint32_t(get_int32(rest, 4));
      size_t size = 12 + static_cast<size_t>(get_int32(rest, 8));
      if (size > rest.size()) break;  // a partial batch at the end of a fetch: fetch it again
      EXPECT_EQ(base, offset) << "batches of " << topic << "-" << partition << " not contiguous";
      if (base != offset) return out;
      out[base].assign(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(size));
      // One record per batch in these tests; last offset delta at byte 23.
      offset = base + 1 + get_int32(rest, 23);
      pos += size;
    }
    if (offset >= a.high_watermark) break;
  }
  return out;
}

// Whether a stored batch is the batch the client sent: all bytes equal except base offset
// (0-7) and partition leader epoch (12-15), which the broker assigns. The CRC covers the rest.
inline bool same_batch(std::span<const uint8_t> stored, std::span<const uint8_t> sent) {
  if (stored.size() != sent.size() || stored.size() < 17) return false;
  return std::equal(stored.begin() + 8, stored.begin() + 12, sent.begin() + 8) &&
         std::equal(stored.begin() + 16, stored.end(), sent.begin() + 16);
}

}  // namespace tarn::test
