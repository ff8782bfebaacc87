// End-to-end tests of the producer over real loopback sockets against a small in-process broker
// that speaks ApiVersions, Metadata, InitProducerId and Produce with tarn's protocol codecs,
// checks sequences as Kafka does, and can inject errors. (Kafka itself is the oracle for the
// bytes; these tests pin down retries, recovery and timeouts, which Kafka cannot be made to
// trigger on demand.)
#include "tarn/producer.h"

#include <gtest/gtest.h>

#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "client/partitioner.h"
#include "client/producer_config.h"
#include "protocol/headers.h"
#include "protocol/messages.h"
#include "record/record_batch.h"

namespace tarn::client {
namespace {

using namespace std::chrono_literals;
namespace proto = tarn::protocol;

struct stored_batch {
  int64_t producer_id;
  int16_t epoch;
  int32_t base_sequence;
  int32_t count;
  int64_t base_offset;
};

class fake_broker {
 public:
  explicit fake_broker(std::map<std::string, int32_t> topics)
      : topics_(std::move(topics)), acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}) {
    accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~fake_broker() {
    io_.stop();
    thread_.join();
  }
  uint16_t port() const { return acceptor_.local_endpoint().port(); }
  std::string bootstrap() const { return "127.0.0.1:" + std::to_string(port()); }

  // Error codes answered, in order, to the next produced partitions instead of appending.
  void inject(std::vector<int16_t> errors) {
    std::lock_guard lock(mutex_);
    inject_.insert(inject_.end(), errors.begin(), errors.end());
  }
  void drop_produce(bool drop) { drop_produce_ = drop; }
  // Batches bigger than this are refused with MESSAGE_TOO_LARGE (a topic's max.message.bytes).
  void set_max_batch_bytes(size_t n) {
    std::lock_guard lock(mutex_);
    max_batch_bytes_ = n;
  }
  // Answers the next `n` Produce requests only once all `n` have arrived, in arrival order (a
  // broker slow to answer): the producer has them in flight together. With `max_wait`, answers
  // what has arrived once that much time has passed since the first.
  void gather_produce(int n, std::chrono::milliseconds max_wait = 0ms) {
    std::lock_guard lock(mutex_);
    gather_ = n;
    gather_max_wait_ = max_wait;
  }
  // Forgets every producer's state (as a broker whose log was truncated): the next batch of a
  // known producer id that does not start a new epoch gets UNKNOWN_PRODUCER_ID.
  void lose_producer_state() {
    std::lock_guard lock(mutex_);
    producers_.clear();
    lose_producer_state_ = true;
  }

  std::map<int32_t, std::vector<stored_batch>> batches(const std::string& topic) {
    std::lock_guard lock(mutex_);
    return log_[topic];
  }
  int metadata_requests() const { return metadata_requests_; }
  int init_producer_id_requests() const { return init_producer_id_requests_; }

 private:
  struct session : std::enable_shared_from_this<session> {
    session(fake_broker& b, asio::ip::tcp::socket s) : broker(b), socket(std::move(s)) {}
    fake_broker& broker;
    asio::ip::tcp::socket socket;
    uint8_t size[4];
    std::vector<uint8_t> body;

    void read() {
      auto self = shared_from_this();
      asio::async_read(socket, asio::buffer(size), [self](std::error_code ec, size_t) {
        if (ec) return;
        uint32_t n = uint32_t{self->size[0]} << 24 | uint32_t{self->size[1]} << 16 |
                     uint32_t{self->size[2]} << 8 | self->size[3];
        self->body.resize(n);
        asio::async_read(self->socket, asio::buffer(self->body),
                         [self](std::error_code ec, size_t) {
                           if (ec) return;
                           self->broker.handle(*self);
                           self->read();
                         });
      });
    }
  };

  void accept() {
    acceptor_.async_accept([this](std::error_code ec, asio::ip::tcp::socket s) {
      if (ec) return;
      std::make_shared<session>(*this, std::move(s))->read();
      accept();
    });
  }

  template <typename Body>
  void respond(session& s, int32_t correlation_id, int16_t version, const Body& body) {
    std::vector<uint8_t> out(4);
    proto::writer w(out);
    proto::response_header header;
    header.correlation_id = correlation_id;
    header.encode(w, proto::response_header_version(Body::api_key, version));
    body.encode(w, version);
    const auto n = static_cast<uint32_t>(out.size() - 4);
    for (int i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(n >> (24 - 8 * i));
    asio::write(s.socket, asio::buffer(out));
  }

  void handle(session& s) {
    proto::reader r(s.body);
    auto header = proto::decode_request_header(r);
    ASSERT_TRUE(header);
    const int16_t version = header->request_api_version;
    const int32_t correlation_id = header->correlation_id;
    switch (header->request_api_key) {
      case 18: {
        proto::api_versions_response response;
        for (auto [key, min, max] : std::vector<std::tuple<int16_t, int16_t, int16_t>>{
                 {0, 0, 12}, {3, 0, 12}, {18, 0, 3}, {22, 0, 5}}) {
          proto::api_versions_response::api_version v;
          v.api_key = key;
          v.min_version = min;
          v.max_version = max;
          response.api_keys.push_back(v);
        }
        return respond(s, correlation_id, version, response);
      }
      case 3: {
        ++metadata_requests_;
        auto request = proto::metadata_request::decode(r, version);
        ASSERT_TRUE(request);
        proto::metadata_response response;
        proto::metadata_response::metadata_response_broker broker;
        broker.node_id = 1;
        broker.host = "127.0.0.1";
        broker.port = port();
        response.brokers.push_back(broker);
        for (const auto& t : request->topics.value_or(
                 std::vector<proto::metadata_request::metadata_request_topic>{})) {
          proto::metadata_response::metadata_response_topic topic;
          topic.name = t.name;
          auto it = topics_.find(std::string(t.name.value_or("")));
          if (it == topics_.end()) {
            topic.error_code = 3;
          } else {
            for (int32_t p = 0; p < it->second; ++p) {
              proto::metadata_response::metadata_response_partition partition;
              partition.partition_index = p;
              partition.leader_id = 1;
              partition.leader_epoch = 0;
              partition.replica_nodes = {1};
              partition.isr_nodes = {1};
              topic.partitions.push_back(partition);
            }
          }
          response.topics.push_back(topic);
        }
        return respond(s, correlation_id, version, response);
      }
      case 22: {
        ++init_producer_id_requests_;
        proto::init_producer_id_response response;
        response.producer_id = next_producer_id_++;
        response.producer_epoch = 0;
        return respond(s, correlation_id, version, response);
      }
      case 0: {
        if (drop_produce_) return;
        std::vector<std::pair<std::shared_ptr<session>, std::vector<uint8_t>>> requests;
        {
          std::lock_guard lock(mutex_);
          if (gather_ > 0) {
            gathered_.emplace_back(s.shared_from_this(), s.body);
            if (gathered_.size() == 1 && gather_max_wait_ > 0ms) {
              gather_timer_.expires_after(gather_max_wait_);
              gather_timer_.async_wait([this](std::error_code ec) {
                if (!ec) answer_gathered();
              });
            }
            if (static_cast<int>(gathered_.size()) < gather_) return;
            gather_timer_.cancel();
            gather_ = 0;
            requests = std::move(gathered_);
            gathered_.clear();
          }
        }
        if (requests.empty()) return produce(s, s.body);
        for (auto& [session, body] : requests) produce(*session, body);
        return;
      }
      default:
        FAIL() << "unexpected api key " << header->request_api_key;
    }
  }

  // Answers the gathered Produce requests when gather_produce's max_wait ran out. Thread: io_.
  void answer_gathered() {
    std::vector<std::pair<std::shared_ptr<session>, std::vector<uint8_t>>> requests;
    {
      std::lock_guard lock(mutex_);
      gather_ = 0;
      requests = std::move(gathered_);
      gathered_.clear();
    }
    for (auto& [session, body] : requests) produce(*session, body);
  }

  // Answers one Produce request (`body`, with its header) on `s`.
  void produce(session& s, std::span<const uint8_t> body) {
    proto::reader r(body);
    auto header = proto::decode_request_header(r);
    ASSERT_TRUE(header);
    const int16_t version = header->request_api_version;
    auto request = proto::produce_request::decode(r, version);
    ASSERT_TRUE(request);
    proto::produce_response response;
    std::lock_guard lock(mutex_);
    for (const auto& t : request->topic_data) {
      proto::produce_response::topic_produce_response topic;
      topic.name = t.name;
      for (const auto& p : t.partition_data) {
        proto::produce_response::partition_produce_response partition;
        partition.index = p.index;
        partition.error_code =
            append(std::string(t.name), p.index, *p.records, partition.base_offset);
        topic.partition_responses.push_back(partition);
      }
      response.responses.push_back(topic);
    }
    if (request->acks == 0) return;
    respond(s, header->correlation_id, version, response);
  }

  // Appends like a leader: validates the batch, checks the idempotent sequence.
  int16_t append(const std::string& topic, int32_t partition, std::span<const uint8_t> bytes,
                 int64_t& base_offset) {
    if (!inject_.empty()) {
      const int16_t error = inject_.front();
      inject_.pop_front();
      base_offset = -1;
      return error;
    }
    record::record_batch_view batch(bytes);
    if (!record::validate_batch(batch, record::offset_rule::producer)) return 2;  // CORRUPT
    if (max_batch_bytes_ > 0 && bytes.size() > max_batch_bytes_) return 10;  // MESSAGE_TOO_LARGE
    auto& stored = log_[topic][partition];
    if (batch.producer_id() >= 0) {
      // Kafka's ProducerStateManager, reduced: per producer id, the epoch and the next sequence.
      const auto key = std::make_tuple(topic, partition, batch.producer_id());
      auto state = producers_.find(key);
      if (state == producers_.end()) {
        // Kafka accepts any sequence from a producer it has no state for
        // (ProducerAppendInfo.checkSequence with no current epoch).
        if (lose_producer_state_ && batch.base_sequence() != 0) return 59;
        state = producers_
                    .emplace(key, std::pair<int16_t, int32_t>{batch.producer_epoch(),
                                                              batch.base_sequence()})
                    .first;
      } else if (batch.producer_epoch() < state->second.first) {
        return 47;  // INVALID_PRODUCER_EPOCH
      } else if (batch.producer_epoch() > state->second.first) {
        if (batch.base_sequence() != 0) return 45;  // a new epoch starts at sequence 0
        state->second = {batch.producer_epoch(), 0};
      }
      auto& next = state->second.second;
      for (const auto& b : stored) {
        if (b.producer_id == batch.producer_id() && b.epoch == batch.producer_epoch() &&
            b.base_sequence == batch.base_sequence()) {
          base_offset = b.base_offset;  // a duplicate: answer the original's offset
          return 0;
        }
      }
      if (batch.base_sequence() != next) return 45;  // OUT_OF_ORDER_SEQUENCE_NUMBER
      next = batch.base_sequence() + batch.records_count();
    }
    int64_t end = stored.empty() ? 0 : stored.back().base_offset + stored.back().count;
    stored.push_back({batch.producer_id(), batch.producer_epoch(), batch.base_sequence(),
                      batch.records_count(), end});
    base_offset = end;
    return 0;
  }

  std::map<std::string, int32_t> topics_;
  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
  std::thread thread_;
  std::mutex mutex_;
  std::deque<int16_t> inject_;
  std::map<std::string, std::map<int32_t, std::vector<stored_batch>>> log_;
  // (topic, partition, producer id) -> (epoch, next sequence)
  std::map<std::tuple<std::string, int32_t, int64_t>, std::pair<int16_t, int32_t>> producers_;
  int gather_ = 0;
  std::chrono::milliseconds gather_max_wait_{0};
  asio::steady_timer gather_timer_{io_};
  std::vector<std::pair<std::shared_ptr<session>, std::vector<uint8_t>>> gathered_;
  size_t max_batch_bytes_ = 0;
  bool lose_producer_state_ = false;
  std::atomic<bool> drop_produce_{false};
  std::atomic<int> metadata_requests_{0};
  std::atomic<int> init_producer_id_requests_{0};
  int64_t next_producer_id_ = 1000;
};

std::unique_ptr<producer> make(const fake_broker& broker, std::vector<property> extra = {}) {
  std::vector<property> props = {{"bootstrap.servers", broker.bootstrap()},
                                 {"linger.ms", "1"},
                                 {"retry.backoff.ms", "10"},
                                 {"retry.backoff.max.ms", "20"}};
  props.insert(props.end(), extra.begin(), extra.end());
  auto p = producer::create(props);
  EXPECT_TRUE(p);
  return p ? std::move(*p) : nullptr;
}

// Every future succeeded, at offsets first_offset, first_offset + 1, ... in send order.
void expect_offsets_in_send_order(std::vector<std::future<delivery_result>>& futures,
                                  int64_t first_offset = 0) {
  for (size_t i = 0; i < futures.size(); ++i) {
    auto r = futures[i].get();
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->offset, first_offset + static_cast<int64_t>(i)) << "record " << i;
  }
}

// The stored batches carry `epoch` and contiguous sequences from 0; returns the records counted.
int32_t expect_contiguous_sequences(const std::vector<stored_batch>& batches, int16_t epoch = 0) {
  int32_t next = 0;
  for (const auto& b : batches) {
    EXPECT_EQ(b.epoch, epoch);
    EXPECT_EQ(b.base_sequence, next);
    next += b.count;
  }
  return next;
}

producer_record rec(std::string_view topic, std::optional<std::string_view> key,
                    std::string_view value) {
  producer_record r;
  r.topic = topic;
  r.key = key;
  r.value = value;
  return r;
}

TEST(producer, delivers_keyed_and_keyless_records_with_offsets) {
  fake_broker broker({{"t", 3}});
  auto p = make(broker);
  std::vector<std::string> keys;
  for (int i = 0; i < 50; ++i) keys.push_back("key-" + std::to_string(i));
  std::vector<std::future<delivery_result>> keyed, keyless;
  for (const auto& k : keys) keyed.push_back(p->send(rec("t", k, "v")));
  for (int i = 0; i < 50; ++i) keyless.push_back(p->send(rec("t", std::nullopt, "v")));
  p->flush();
  std::map<int32_t, std::set<int64_t>> offsets;
  for (size_t i = 0; i < keyed.size(); ++i) {
    auto r = keyed[i].get();
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->topic, "t");
    EXPECT_EQ(r->partition, partition_for_key(record::as_bytes(keys[i]), 3)) << keys[i];
    offsets[r->partition].insert(r->offset);
  }
  for (auto& f : keyless) {
    auto r = f.get();
    ASSERT_TRUE(r) << r.error().message;
    offsets[r->partition].insert(r->offset);
  }
  size_t total = 0;
  for (auto& [partition, set] : offsets) {
    EXPECT_EQ(*set.begin(), 0);
    EXPECT_EQ(*set.rbegin(), static_cast<int64_t>(set.size()) - 1) << "contiguous offsets";
    total += set.size();
  }
  EXPECT_EQ(total, 100u);
  // Idempotent by default: one producer id, sequences contiguous per partition.
  for (auto& [partition, batches] : broker.batches("t")) {
    int32_t next = 0;
    for (const auto& b : batches) {
      EXPECT_EQ(b.producer_id, 1000);
      EXPECT_EQ(b.base_sequence, next);
      next += b.count;
    }
  }
  EXPECT_EQ(broker.init_producer_id_requests(), 1);
  p->close();
}

// send() keeps the thread's last topic and its metadata (topic_hint): two producers used in turn
// from one thread, each to a topic "t" of its own cluster (3 and 5 partitions; each cache has had
// one update, so their versions are equal), must each partition by their own metadata, and so must
// a producer switching between two topics.
TEST(producer, producers_in_turn_on_one_thread_keep_their_own_metadata) {
  fake_broker three({{"t", 3}, {"u", 2}});
  fake_broker five({{"t", 5}});
  auto a = make(three, {{"metadata.max.age.ms", "600000"}});
  auto b = make(five, {{"metadata.max.age.ms", "600000"}});
  ASSERT_TRUE(a->send(rec("t", "warm", "v")).get());
  ASSERT_TRUE(b->send(rec("t", "warm", "v")).get());
  std::vector<std::pair<std::string, std::future<delivery_result>>> from_a, from_b, to_u;
  for (int i = 0; i < 40; ++i) {
    const std::string key = "key-" + std::to_string(i);
    from_a.emplace_back(key, a->send(rec("t", key, "v")));
    from_b.emplace_back(key, b->send(rec("t", key, "v")));
  }
  for (int i = 0; i < 40; ++i) {
    const std::string key = "key-" + std::to_string(i);
    from_a.emplace_back(key, a->send(rec("t", key, "v")));
    to_u.emplace_back(key, a->send(rec("u", key, "v")));
  }
  auto expect_partitions = [](auto& futures, int32_t partitions) {
    for (auto& [key, f] : futures) {
      auto r = f.get();
      ASSERT_TRUE(r) << r.error().message;
      EXPECT_EQ(r->partition, partition_for_key(record::as_bytes(key), partitions)) << key;
    }
  };
  expect_partitions(from_a, 3);
  expect_partitions(from_b, 5);
  expect_partitions(to_u, 2);
  a->close();
  b->close();
}

TEST(producer, callback_and_future_both_report) {
  fake_broker broker({{"t", 1}});
  auto p = make(broker);
  std::atomic<int64_t> seen{-2};
  auto f =
      p->send(rec("t", std::nullopt, "x"), [&](const record_metadata& m, const producer_error* e) {
        EXPECT_EQ(e, nullptr);
        seen = m.offset;
      });
  auto r = f.get();
  ASSERT_TRUE(r);
  EXPECT_EQ(seen.load(), r->offset);
  EXPECT_GT(r->timestamp_ms, 0);
}

TEST(producer, retriable_error_is_retried_after_a_metadata_refresh) {
  fake_broker broker({{"t", 1}});
  auto p = make(broker);
  ASSERT_TRUE(p->send(rec("t", std::nullopt, "warm-up")).get());
  const int before = broker.metadata_requests();
  broker.inject({6, 6});  // NOT_LEADER_OR_FOLLOWER twice
  auto r = p->send(rec("t", std::nullopt, "x")).get();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->offset, 1);
  // The error asks the sender for a metadata update (request_update), which it sends on its own
  // schedule: the retry can be answered first (seen under TSan), so wait for it, bounded.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (broker.metadata_requests() <= before && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GT(broker.metadata_requests(), before);
}

TEST(producer, non_retriable_error_fails_the_record) {
  fake_broker broker({{"t", 1}});
  auto p = make(broker, {{"enable.idempotence", "false"}});
  broker.inject({87});  // INVALID_RECORD
  auto r = p->send(rec("t", std::nullopt, "x")).get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, producer_errc::broker_error);
  EXPECT_EQ(r.error().kafka_error_code, 87);
  EXPECT_NE(r.error().message.find("t-0: INVALID_RECORD"), std::string::npos) << r.error().message;
}

TEST(producer, retries_zero_fails_a_retriable_error) {
  fake_broker broker({{"t", 1}});
  auto p = make(broker, {{"retries", "0"}});  // turns idempotence off (not set explicitly)
  broker.inject({6});
  auto r = p->send(rec("t", std::nullopt, "x")).get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kafka_error_code, 6);
  EXPECT_TRUE(r.error().retriable);
}

// KIP-360 as Java's idempotent producer: a real sequence gap bumps the epoch of the same
// producer id on the client (no InitProducerId) and restarts the partition at sequence 0.
TEST(producer, out_of_order_sequence_bumps_the_epoch) {
  fake_broker broker({{"t", 2}});
  auto p = make(broker);
  const int32_t partition = partition_for_key(record::as_bytes(std::string_view("k")), 2);
  const std::string other_key = [&] {
    for (int i = 0;; ++i) {
      std::string k = "o";  // (not "o" + ...: GCC 12 warns falsely there)
      k += std::to_string(i);
      if (partition_for_key(record::as_bytes(k), 2) != partition) return k;
    }
  }();
  ASSERT_TRUE(p->send(rec("t", "k", "a")).get());
  ASSERT_TRUE(p->send(rec("t", other_key, "o")).get());
  broker.inject({45});  // OUT_OF_ORDER_SEQUENCE_NUMBER for the next batch: a gap
  auto r = p->send(rec("t", "k", "b")).get();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->offset, 1);
  EXPECT_EQ(broker.init_producer_id_requests(), 1);
  auto batches = broker.batches("t")[partition];
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[1].producer_id, 1000);
  EXPECT_EQ(batches[1].epoch, 1);
  EXPECT_EQ(batches[1].base_sequence, 0);
  // The other partition was not affected: it moves to epoch 1 at sequence 0 with its next batch.
  ASSERT_TRUE(p->send(rec("t", other_key, "c")).get());
  ASSERT_TRUE(p->send(rec("t", "k", "d")).get());
  for (auto& [part, stored] : broker.batches("t")) {
    EXPECT_EQ(stored.back().epoch, 1) << part;
    EXPECT_EQ(stored.back().base_sequence, part == partition ? 1 : 0) << part;
  }
}

TEST(producer, unknown_producer_id_bumps_the_epoch) {
  fake_broker broker({{"t", 1}});
  auto p = make(broker);
  ASSERT_TRUE(p->send(rec("t", std::nullopt, "a")).get());
  ASSERT_TRUE(p->send(rec("t", std::nullopt, "b")).get());
  broker.lose_producer_state();  // the next batch (sequence 2) gets UNKNOWN_PRODUCER_ID
  auto r = p->send(rec("t", std::nullopt, "c")).get();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->offset, 2);
  EXPECT_EQ(broker.init_producer_id_requests(), 1);
  auto batches = broker.batches("t")[0];
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[2].producer_id, 1000);
  EXPECT_EQ(batches[2].epoch, 1);
  EXPECT_EQ(batches[2].base_sequence, 0);
}

// An earlier batch failing retriably makes the broker answer OUT_OF_ORDER_SEQUENCE_NUMBER to
// the batches behind it: those are retried in order, with no epoch bump.
TEST(producer, out_of_order_behind_a_retried_batch_does_not_bump) {
  fake_broker broker({{"t", 1}});
  auto p = make(broker, {{"batch.size", "100"}, {"linger.ms", "0"}});
  ASSERT_TRUE(p->send(rec("t", std::nullopt, "warm-up")).get());
  broker.inject({6});  // NOT_LEADER_OR_FOLLOWER for the next batch
  std::vector<std::future<delivery_result>> futures;
  const std::string value(80, 'v');  // one record per batch
  for (int i = 0; i < 5; ++i) futures.push_back(p->send(rec("t", std::nullopt, value)));
  p->flush();
  expect_offsets_in_send_order(futures, 1);
  expect_contiguous_sequences(broker.batches("t")[0]);
}

// Kafka accepts any sequence from a producer it has no state for in a partition. If a
// partition's first batch fails (NOT_LEADER_OR_FOLLOWER from a leader still creating the
// partition, as Kafka 4.4 answers right after CreateTopics) while the batches behind it are in
// flight, those are written first and the records land out of order. So the first batch goes
// alone: here the broker would answer only once five requests were in flight, but only one
// comes; it fails, is retried, and every record lands once, in send order, epoch 0.
TEST(producer, a_partitions_first_batch_goes_alone_so_nothing_overtakes_it) {
  fake_broker broker({{"t", 1}});
  auto p = make(broker, {{"batch.size", "100"},
                         {"linger.ms", "0"},
                         {"request.timeout.ms", "5000"},
                         {"delivery.timeout.ms", "10000"}});
  broker.gather_produce(5, 300ms);  // would hold five pipelined batches together
  broker.inject({6});               // NOT_LEADER_OR_FOLLOWER for the first partition answered
  std::vector<std::future<delivery_result>> futures;
  const std::string value(80, 'v');  // one record per batch
  for (int i = 0; i < 5; ++i) futures.push_back(p->send(rec("t", std::nullopt, value)));
  p->flush();
  expect_offsets_in_send_order(futures);
  EXPECT_EQ(broker.init_producer_id_requests(), 1);
  const auto stored = broker.batches("t")[0];
  ASSERT_EQ(stored.size(), 5u);
  expect_contiguous_sequences(stored);
}

// A batch of many records refused as too large is split (Java's splitAndReenqueue) until the
// parts fit; the records keep their order and their sequences stay contiguous. A single record
// too large fails with record_too_large, and the epoch bump that follows keeps the partition
// usable.
TEST(producer, message_too_large_splits_the_batch) {
  fake_broker broker({{"t", 1}});
  auto p = make(broker, {{"linger.ms", "100"}});
  broker.set_max_batch_bytes(700);
  std::vector<std::future<delivery_result>> futures;
  std::atomic<int> callbacks{0};
  for (int i = 0; i < 40; ++i) {
    futures.push_back(p->send(rec("t", std::nullopt, std::string(90, 'a' + i % 26)),
                              [&](const record_metadata&, const producer_error*) { ++callbacks; }));
  }
  p->flush();
  expect_offsets_in_send_order(futures);
  EXPECT_EQ(callbacks.load(), 40);
  auto batches = broker.batches("t")[0];
  EXPECT_GT(batches.size(), 5u);
  EXPECT_EQ(expect_contiguous_sequences(batches), 40);

  auto too_large = p->send(rec("t", std::nullopt, std::string(1000, 'x'))).get();
  ASSERT_FALSE(too_large);
  EXPECT_EQ(too_large.error().code, producer_errc::record_too_large);
  EXPECT_EQ(too_large.error().kafka_error_code, 10);
  EXPECT_NE(too_large.error().message.find("MESSAGE_TOO_LARGE"), std::string::npos);
  auto after = p->send(rec("t", std::nullopt, "small")).get();
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ(after->offset, 40);
  EXPECT_EQ(broker.batches("t")[0].back().epoch, 1);
  EXPECT_EQ(broker.batches("t")[0].back().base_sequence, 0);
}

TEST(producer, message_too_large_splits_without_idempotence_and_with_compression) {
  fake_broker broker({{"t", 1}});
  auto p = make(broker, {{"linger.ms", "100"},
                         {"enable.idempotence", "false"},
                         {"acks", "1"},
                         {"compression.type", "zstd"}});
  broker.set_max_batch_bytes(300);
  std::vector<std::future<delivery_result>> futures;
  for (int i = 0; i < 30; ++i) {
    std::string value;
    for (int j = 0; j < 40; ++j) value += static_cast<char>('a' + (i * 7 + j * 13) % 26);
    futures.push_back(p->send(rec("t", std::nullopt, value)));
  }
  p->flush();
  expect_offsets_in_send_order(futures);
  EXPECT_GT(broker.batches("t")[0].size(), 1u);
}

TEST(producer, unknown_topic_fails_after_max_block_ms) {
  fake_broker broker({{"t", 1}});
  auto p = make(broker, {{"max.block.ms", "200"}});
  auto r = p->send(rec("missing", std::nullopt, "x")).get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, producer_errc::unknown_topic);
  EXPECT_EQ(r.error().message, "Topic missing not present in metadata after 200 ms.");
}

TEST(producer, unanswered_requests_time_out_and_expire) {
  fake_broker broker({{"t", 1}});
  auto p = make(
      broker, {{"request.timeout.ms", "100"}, {"delivery.timeout.ms", "300"}, {"linger.ms", "0"}});
  // The warm-up puts metadata, the connection and the producer id in place, so that the timed
  // send below waits only for its unanswered Produce. Under these short timeouts one try can
  // expire on a loaded machine (a sanitizer build, a busy CI): it is tried again until one
  // succeeds.
  bool warm = false;
  for (const auto deadline = std::chrono::steady_clock::now() + 30s;
       !warm && std::chrono::steady_clock::now() < deadline;) {
    warm = p->send(rec("t", std::nullopt, "ok")).get().has_value();
  }
  ASSERT_TRUE(warm);
  broker.drop_produce(true);
  const auto start = std::chrono::steady_clock::now();
  auto r = p->send(rec("t", std::nullopt, "x")).get();
  ASSERT_FALSE(r);
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, 100ms);
  EXPECT_LT(waited, 5s);
  EXPECT_TRUE(r.error().code == producer_errc::delivery_timeout || r.error().kafka_error_code == 13)
      << r.error().message;
}

TEST(producer, acks_zero_reports_offset_minus_one) {
  fake_broker broker({{"t", 1}});
  auto p = make(broker, {{"acks", "0"}});
  auto r = p->send(rec("t", std::nullopt, "x")).get();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->offset, -1);
}

TEST(producer, close_with_zero_timeout_fails_what_is_left) {
  fake_broker broker({{"t", 1}});
  auto p = make(broker, {{"linger.ms", "10000"}});
  auto pending = p->send(rec("t", std::nullopt, "x"));  // lingers
  p->close(0ms);
  auto r = pending.get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, producer_errc::producer_closed);
  EXPECT_EQ(r.error().message, "Producer is closed forcefully.");
  auto after = p->send(rec("t", std::nullopt, "y")).get();
  ASSERT_FALSE(after);
  EXPECT_EQ(after.error().code, producer_errc::producer_closed);
}

TEST(producer, close_waits_for_lingering_records) {
  fake_broker broker({{"t", 1}});
  auto p = make(broker, {{"linger.ms", "10000"}});
  auto pending = p->send(rec("t", std::nullopt, "x"));
  p->close();  // closing makes every batch ready at once
  auto r = pending.get();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->offset, 0);
}

TEST(producer, sends_from_many_threads) {
  fake_broker broker({{"t", 4}});
  auto p = make(broker, {{"batch.size", "512"}});
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        std::string key = std::to_string(t * 1000 + i);
        auto sent = p->send_async(
            rec("t", i % 2 ? std::optional<std::string_view>(key) : std::nullopt, "value"),
            [&](const record_metadata&, const producer_error* e) {
              if (!e) ok.fetch_add(1);
            });
        EXPECT_TRUE(sent);
      }
    });
  }
  for (auto& t : threads) t.join();
  p->flush();
  EXPECT_EQ(ok.load(), 2000);
  size_t stored = 0;
  for (auto& [partition, batches] : broker.batches("t")) {
    for (const auto& b : batches) stored += static_cast<size_t>(b.count);
  }
  EXPECT_EQ(stored, 2000u);
}

}  // namespace
}  // namespace tarn::client
