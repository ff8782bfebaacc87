// share_fetch_replay: the share consumer's ceiling (KIP-932). A proxy in front of a broker that
// answers ShareFetch and ShareAcknowledge itself, from a topic it read into memory at start, so
// the records a share consumer gets cost no broker work and its rate is its own.
//
//   share_fetch_replay --upstream H:U --topic T [--listen-port P] [--port-file F]
//                      [--max-record-locks N]
//
// At start it reads every partition of T from the broker (Metadata, then Fetch from offset 0 to
// the high watermark), batch by batch. Every request but those two goes to the broker, Metadata
// with the proxy's port for every broker (so ShareFetch comes here); the share group's own
// requests (FindCoordinator, ShareGroupHeartbeat) reach the broker's coordinator, which assigns
// the partitions as it always does. A ShareFetch is answered for every partition of the member's
// share session (kept here as the broker keeps it: epoch 0 opens it with the partitions named,
// later epochs add partitions and drop forgotten ones, -1 closes it): the next batches of the
// partition, as many as make MaxRecords (at least one), acquired by this member alone with one
// AcquiredRecords range (delivery count 1). Each share group has its own cursor per partition,
// shared by its members, so together they read the topic once, as they would from a broker.
// As on a broker, a group holds at most `--max-record-locks` acquired records of a partition
// (group.share.partition.max.record.locks, 2,000 on Kafka 4.4 and tarn): an acknowledgement
// (accept, release or reject, in a ShareFetch or a ShareAcknowledge; always successful here)
// releases its records' locks, and a ShareFetch that found every lock taken waits for a release.
// A ShareFetch finding nothing left waits its MaxWaitMs (at most 500 ms), as a broker's long poll
// does, and answers without records. On SIGTERM or SIGINT it prints its counts on one line and
// exits; SIGUSR1 prints the line and goes on.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "client/blocking_client.h"
#include "protocol/error_codes.h"
#include "protocol/headers.h"
#include "protocol/messages/fetch_request.h"
#include "protocol/messages/fetch_response.h"
#include "protocol/messages/metadata_request.h"
#include "protocol/messages/metadata_response.h"
#include "protocol/messages/response_header.h"
#include "protocol/messages/share_acknowledge_request.h"
#include "protocol/messages/share_acknowledge_response.h"
#include "protocol/messages/share_fetch_request.h"
#include "protocol/messages/share_fetch_response.h"
#include "proxy_io.h"
#include "record/record_batch.h"

namespace {

using namespace tarn::bench;
using namespace tarn::protocol;

constexpr int16_t share_fetch_key = 78;
constexpr int16_t share_acknowledge_key = 79;
constexpr int32_t lock_duration_ms = 30000;  // Kafka's group.share.record.lock.duration.ms

// One partition's log as the broker served it: its batches back to back, and where each is.
struct partition_log {
  struct batch {
    size_t begin = 0, end = 0;  // bytes in `bytes`
    int64_t first_offset = 0, last_offset = 0;
  };
  frame bytes;
  std::vector<batch> batches;
};

struct topic_log {
  uuid id;
  std::vector<partition_log> partitions;
  int64_t records = 0;
};

// Reads every partition of `topic` from the broker at `upstream` into memory.
tarn::result<topic_log, std::string> read_topic(const std::string& upstream,
                                                const std::string& topic) {
  using tarn::fail;
  auto connected = tarn::client::blocking_client::connect(upstream, std::chrono::seconds(30),
                                                          "share_fetch_replay");
  if (!connected) return fail(connected.error());
  auto& c = **connected;
  if (auto v = c.negotiate_versions(); !v) return fail(v.error());
  metadata_request m;
  m.topics.emplace().emplace_back().name = topic;
  m.allow_auto_topic_creation = false;
  std::vector<uint8_t> buffer;
  auto meta = tarn::client::call<metadata_response>(c, m, 12, buffer);
  if (!meta) return fail(meta.error());
  if (meta->topics.size() != 1 || meta->topics[0].error_code != 0)
    return fail("no topic " + topic + " on the broker");
  topic_log out;
  out.id = meta->topics[0].topic_id;
  int32_t partitions = 0;
  for (const auto& p : meta->topics[0].partitions)
    partitions = std::max(partitions, p.partition_index + 1);
  out.partitions.resize(static_cast<size_t>(partitions));
  for (int32_t p = 0; p < partitions; ++p) {
    partition_log& log = out.partitions[static_cast<size_t>(p)];
    int64_t offset = 0;
    while (true) {
      fetch_request f;
      f.max_wait_ms = 0;
      f.min_bytes = 0;
      f.max_bytes = 16 << 20;
      auto& t = f.topics.emplace_back();
      t.topic_id = out.id;
      auto& fp = t.partitions.emplace_back();
      fp.partition = p;
      fp.fetch_offset = offset;
      fp.partition_max_bytes = 16 << 20;
      auto answer = tarn::client::call<fetch_response>(c, f, 13, buffer);
      if (!answer) return fail(answer.error());
      if (answer->responses.size() != 1 || answer->responses[0].partitions.size() != 1)
        return fail("a Fetch answer without the partition");
      const auto& data = answer->responses[0].partitions[0];
      if (data.error_code != 0)
        return fail("Fetch of partition " + std::to_string(p) + ": error " +
                    std::to_string(data.error_code));
      const bytes_view records = data.records.value_or(bytes_view{});
      size_t at = 0;  // whole batches only: the answer may end inside one
      while (records.size() - at >= tarn::record::log_overhead) {
        tarn::record::record_batch_view head(records.subspan(at));
        if (!head.has_header()) break;
        const size_t size = tarn::record::log_overhead + static_cast<size_t>(head.batch_length());
        if (head.batch_length() <= 0 || size > records.size() - at) break;
        tarn::record::record_batch_view batch(records.subspan(at, size));
        const size_t begin = log.bytes.size();
        log.bytes.insert(log.bytes.end(), records.begin() + static_cast<std::ptrdiff_t>(at),
                         records.begin() + static_cast<std::ptrdiff_t>(at + size));
        log.batches.push_back({begin, log.bytes.size(), batch.base_offset(), batch.last_offset()});
        if (!batch.is_control()) out.records += batch.last_offset() - batch.base_offset() + 1;
        offset = batch.next_offset();
        at += size;
      }
      if (offset >= data.high_watermark) break;
      if (at == 0) return fail("a Fetch answer without a whole batch");
    }
  }
  return out;
}

// The share groups' cursors and the members' share sessions.
class share_state {
 public:
  share_state(const topic_log& topic, int64_t max_record_locks)
      : topic_(topic), max_record_locks_(max_record_locks) {}

  // The partitions of the member's session once `request` is applied (empty when it closes it),
  // each time starting one further along, so that a request whose MaxRecords the first
  // partitions fill does not leave the last ones waiting for ever.
  std::vector<int32_t> session(const share_fetch_request& request) {
    std::lock_guard lock(mutex_);
    const auto key = std::make_pair(std::string(request.group_id.value_or("")),
                                    std::string(request.member_id.value_or("")));
    if (request.share_session_epoch == -1) {
      sessions_.erase(key);
      return {};
    }
    auto& [partitions, turn] = sessions_[key];
    if (request.share_session_epoch == 0) partitions.clear();
    for (const auto& t : request.topics) {
      if (t.topic_id != topic_.id) continue;
      for (const auto& p : t.partitions) {
        if (p.partition_index < 0 ||
            static_cast<size_t>(p.partition_index) >= topic_.partitions.size())
          continue;
        if (std::find(partitions.begin(), partitions.end(), p.partition_index) == partitions.end())
          partitions.push_back(p.partition_index);
      }
    }
    for (const auto& f : request.forgotten_topics_data) {
      if (f.topic_id != topic_.id) continue;
      for (int32_t p : f.partitions) std::erase(partitions, p);
    }
    std::vector<int32_t> order(partitions);
    if (!order.empty()) {
      std::rotate(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(turn % order.size()),
                  order.end());
      ++turn;
    }
    return order;
  }

  // The next batches of `partition` for `group`: [first, last) batch indexes, at least one
  // batch and then as long as they stay within the records and bytes left to the request and
  // the group's free record locks; none while every lock is taken.
  std::pair<size_t, size_t> acquire(std::string_view group, int32_t partition, int64_t max_records,
                                    int64_t max_bytes) {
    const auto& log = topic_.partitions[static_cast<size_t>(partition)];
    std::lock_guard lock(mutex_);
    auto& g = group_state(group);
    size_t& next = g.cursors[static_cast<size_t>(partition)];
    int64_t& locked = g.locked[static_cast<size_t>(partition)];
    const size_t first = next;
    const int64_t free_locks = max_record_locks_ - locked;
    if (free_locks <= 0) return {first, first};
    max_records = std::min(max_records, free_locks);
    int64_t records = 0, bytes = 0;
    while (next < log.batches.size()) {
      const auto& b = log.batches[next];
      const int64_t more = b.last_offset - b.first_offset + 1;
      if (next > first && (records + more > max_records || bytes > max_bytes)) break;
      records += more;
      bytes += static_cast<int64_t>(b.end - b.begin);
      ++next;
    }
    locked += records;
    return {first, next};
  }

  // Releases the locks of `records` acknowledged records of `partition` and wakes the
  // ShareFetches waiting for one.
  void release(std::string_view group, int32_t partition, int64_t records) {
    if (partition < 0 || static_cast<size_t>(partition) >= topic_.partitions.size()) return;
    {
      std::lock_guard lock(mutex_);
      int64_t& locked = group_state(group).locked[static_cast<size_t>(partition)];
      locked = std::max<int64_t>(0, locked - records);
    }
    released_.notify_all();
  }

  // Waits until `deadline` or, while some partition of `partitions` has records the group has
  // not acquired, until one of those has a free lock (checked under the lock a release takes,
  // so a release between the failed acquisition and this wait is not missed).
  void wait_for_locks(std::string_view group, const std::vector<int32_t>& partitions,
                      std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    auto& g = group_state(group);
    auto left = [&](int32_t p) {
      return g.cursors[static_cast<size_t>(p)] <
             topic_.partitions[static_cast<size_t>(p)].batches.size();
    };
    if (std::none_of(partitions.begin(), partitions.end(), left)) {
      lock.unlock();
      std::this_thread::sleep_until(deadline);  // nothing left: a long poll for new records
      return;
    }
    released_.wait_until(lock, deadline, [&] {
      return std::any_of(partitions.begin(), partitions.end(), [&](int32_t p) {
        return left(p) && g.locked[static_cast<size_t>(p)] < max_record_locks_;
      });
    });
  }

 private:
  struct group {
    std::vector<size_t> cursors;  // per partition: the next batch to hand out
    std::vector<int64_t> locked;  // per partition: records acquired and not yet acknowledged
  };
  group& group_state(std::string_view name) {
    auto& g = groups_[std::string(name)];
    g.cursors.resize(topic_.partitions.size());
    g.locked.resize(topic_.partitions.size());
    return g;
  }

  const topic_log& topic_;
  const int64_t max_record_locks_;
  std::mutex mutex_;
  std::condition_variable released_;
  // (group, member) -> the session's partitions and the turn of the next request.
  std::map<std::pair<std::string, std::string>, std::pair<std::vector<int32_t>, size_t>> sessions_;
  std::map<std::string, group> groups_;
};

// The records an acknowledgement batch releases: every offset of the range but those renewed
// (type 4 keeps the lock).
int64_t released_records(const auto& batch) {
  const auto& types = batch.acknowledge_types;
  if (types.size() <= 1) {
    return !types.empty() && types[0] == 4 ? 0 : batch.last_offset - batch.first_offset + 1;
  }
  int64_t n = 0;
  for (int8_t t : types) n += t != 4;
  return n;
}

std::atomic<uint64_t> share_fetches{0}, records_out{0}, acknowledgements{0};

frame encode_response(int32_t correlation_id, int16_t api_key, int16_t version,
                      const auto& response) {
  frame out;
  writer w(out);
  response_header{correlation_id}.encode(w, response_header_version(api_key, version));
  response.encode(w, version);
  return out;
}

frame answer_share_fetch(const share_fetch_request& request, int32_t correlation_id,
                         int16_t version, const topic_log& topic, share_state& state) {
  share_fetches.fetch_add(1, std::memory_order_relaxed);
  const std::string_view group = request.group_id.value_or("");
  std::vector<int32_t> partitions = state.session(request);
  // Acknowledgements first, as a broker takes them (their locks are free for this fetch).
  // Partitions with acknowledgements are answered too (their acknowledge error), in or out of
  // the session.
  std::vector<int32_t> acked;
  for (const auto& t : request.topics) {
    if (t.topic_id != topic.id) continue;
    for (const auto& p : t.partitions) {
      if (p.acknowledgement_batches.empty()) continue;
      acknowledgements.fetch_add(1, std::memory_order_relaxed);
      acked.push_back(p.partition_index);
      for (const auto& b : p.acknowledgement_batches)
        state.release(group, p.partition_index, released_records(b));
    }
  }
  share_fetch_response response;
  response.acquisition_lock_timeout_ms = lock_duration_ms;
  auto& out = response.responses.emplace_back();
  out.topic_id = topic.id;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(std::clamp(request.max_wait_ms, 0, 500));
  bool any = false;
  while (true) {
    // MaxRecords and MaxBytes bound the whole answer, as on a broker (the first batch goes
    // whatever its size).
    out.partitions.clear();
    int64_t records_left = std::max(request.max_records, 1);
    int64_t bytes_left = request.max_bytes;
    for (int32_t p : partitions) {
      auto& data = out.partitions.emplace_back();
      data.partition_index = p;
      data.current_leader = {-1, -1};
      if (records_left <= 0 || bytes_left <= 0) continue;
      auto [first, last] = state.acquire(group, p, records_left, any ? bytes_left : INT64_MAX);
      if (first == last) continue;
      const auto& log = topic.partitions[static_cast<size_t>(p)];
      const int64_t n = log.batches[last - 1].last_offset - log.batches[first].first_offset + 1;
      records_left -= n;
      bytes_left -= static_cast<int64_t>(log.batches[last - 1].end - log.batches[first].begin);
      data.records = bytes_view(log.bytes.data() + log.batches[first].begin,
                                log.batches[last - 1].end - log.batches[first].begin);
      data.acquired_records.push_back(
          {log.batches[first].first_offset, log.batches[last - 1].last_offset, 1});
      records_out.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
      any = true;
    }
    // Nothing handed out: a broker's long poll waits for records or, when the group holds
    // every lock of the partitions with records left, for locks to be released.
    if (any || !acked.empty() || request.share_session_epoch == -1 ||
        std::chrono::steady_clock::now() >= deadline)
      break;
    state.wait_for_locks(group, partitions, deadline);
  }
  for (int32_t p : acked) {
    if (std::find(partitions.begin(), partitions.end(), p) != partitions.end()) continue;
    auto& data = out.partitions.emplace_back();
    data.partition_index = p;
    data.current_leader = {-1, -1};
  }
  if (out.partitions.empty()) response.responses.clear();
  return encode_response(correlation_id, share_fetch_key, version, response);
}

frame answer_share_acknowledge(const share_acknowledge_request& request, int32_t correlation_id,
                               int16_t version, share_state& state) {
  share_acknowledge_response response;
  response.acquisition_lock_timeout_ms = lock_duration_ms;
  for (const auto& t : request.topics) {
    auto& out = response.responses.emplace_back();
    out.topic_id = t.topic_id;
    for (const auto& p : t.partitions) {
      acknowledgements.fetch_add(1, std::memory_order_relaxed);
      for (const auto& b : p.acknowledgement_batches)
        state.release(request.group_id.value_or(""), p.partition_index, released_records(b));
      auto& data = out.partitions.emplace_back();
      data.partition_index = p.partition_index;
      data.current_leader = {-1, -1};
    }
  }
  return encode_response(correlation_id, share_acknowledge_key, version, response);
}

// The answer to a ShareFetch or ShareAcknowledge, or nullopt when it does not decode (the broker
// answers it then).
std::optional<frame> answer(const frame& request, const topic_log& topic, share_state& state) {
  reader r(bytes_view(request.data(), request.size()));
  auto header = decode_request_header(r);
  if (!header) return std::nullopt;
  const int16_t version = header->request_api_version;
  if (header->request_api_key == share_fetch_key) {
    auto decoded = share_fetch_request::decode(r, version);
    if (!decoded) return std::nullopt;
    return answer_share_fetch(*decoded, header->correlation_id, version, topic, state);
  }
  auto decoded = share_acknowledge_request::decode(r, version);
  if (!decoded) return std::nullopt;
  return answer_share_acknowledge(*decoded, header->correlation_id, version, state);
}

void serve_client(int client, const std::string& host, uint16_t port, uint16_t listen_port,
                  const topic_log& topic, share_state& state) {
  int upstream = connect_to(host, port);
  frame request, response;
  while (upstream >= 0 && read_frame(client, request)) {
    const int16_t api_key = static_cast<int16_t>((request[0] << 8) | request[1]);
    if (api_key == share_fetch_key || api_key == share_acknowledge_key) {
      if (auto mine = answer(request, topic, state)) {
        if (!write_frame(client, *mine, nullptr)) break;
        continue;
      }
    }
    if (!forward_upstream(client, upstream, request, response, listen_port)) break;
  }
  if (upstream >= 0) ::close(upstream);
  ::close(client);
}

void report() {
  std::printf(
      "share fetch replay: %llu ShareFetch answered, %llu records handed out, %llu "
      "partition acknowledgements\n",
      static_cast<unsigned long long>(share_fetches.load()),
      static_cast<unsigned long long>(records_out.load()),
      static_cast<unsigned long long>(acknowledgements.load()));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"share_fetch_replay: answers ShareFetch from memory (the share consumer's ceiling)"};
  uint16_t listen_port = 0;
  std::string upstream, port_file, topic_name;
  app.add_option("--listen-port", listen_port, "port to listen on, 127.0.0.1 (0: any free)");
  app.add_option("--upstream", upstream, "the broker, host:port")->required();
  app.add_option("--topic", topic_name, "the topic to hand out")->required();
  app.add_option("--port-file", port_file, "write the bound port here once listening");
  int64_t max_record_locks = 2000;
  app.add_option("--max-record-locks", max_record_locks,
                 "acquired records a group may hold on a partition "
                 "(group.share.partition.max.record.locks)");
  CLI11_PARSE(app, argc, argv);
  std::string host;
  uint16_t port = 0;
  if (!split_host_port(upstream, host, port)) {
    std::fprintf(stderr, "--upstream must be host:port\n");
    return 2;
  }
  auto topic = read_topic(upstream, topic_name);
  if (!topic) {
    std::fprintf(stderr, "share_fetch_replay: reading %s: %s\n", topic_name.c_str(),
                 topic.error().c_str());
    return 1;
  }
  std::printf("read %s: %zu partitions, %lld records\n", topic_name.c_str(),
              topic->partitions.size(), static_cast<long long>(topic->records));
  share_state state(*topic, max_record_locks);
  const int code = run_proxy(
      "share_fetch_replay", listen_port, port_file, upstream,
      [&](int client, uint16_t bound) { serve_client(client, host, port, bound, *topic, state); },
      report);
  std::_Exit(code);  // client threads may still block in read
}
