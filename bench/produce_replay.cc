// produce_replay: the broker's ingest ceiling. It builds a few v2 record batches once, before the
// clock starts, and then replays them as Produce requests over one TCP connection, so the client
// spends almost nothing per byte and the broker (or the machine) is what the figure measures.
//
//   produce_replay --bootstrap-server H:P --topic T [--bytes B] [--batch-bytes S]
//                  [--record-size R] [--acks A] [--partitions N] [--in-flight K]
//                  [--distinct-batches D] [--compression-type C] [--connections C]
//                  [--create-topic] [--timeout-ms MS]
//
// The batches: in codec C (none by default), no producer id (-1, no idempotence, so any broker
// accepts repeats), records of R bytes (1 KiB) with random A-Z values and no key, as
// kafka-producer-perf-test sends them, as many as fit in S bytes (1 MiB, the producer's batch.size
// rule; compressed, at the producer's first estimate of the ratio, 1.0, which random letters keep).
// Request i carries batch i mod D to partition i mod N, one batch per request; at most K requests
// (5, as max.in.flight.requests.per.connection) are outstanding. ApiVersions comes first and
// Produce uses the highest version both sides speak (up to 12, as tarn's producer). One request per
// partition is sent before timing, retried while the partition is not ready yet; after that,
// any non-zero error code in a response is a failure. The run ends when B bytes of record
// batches are acknowledged (acks=0: written to the socket).
//
// With --connections C (1), C connections replay at once, each on its own thread (so the client's
// socket copies spread over cores as the broker's do), each B/C bytes; connection c sends to the
// partitions p with p mod C = c (to partition c mod N when N < C). The figures are the sum over
// the connections, timed from their common start to the last one's end: the broker's ingest when
// several event loops share it (scripts/bench's scaling section).
//
// Output: kafka-producer-perf-test's summary line (records, records/s, MB/s of record values,
// and latency from a request's send to its response), then a line of key=value figures with the
// batch bytes and elapsed time.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <asio.hpp>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <latch>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"
#include "client/wire.h"
#include "protocol/error_codes.h"
#include "protocol/messages/api_versions_request.h"
#include "protocol/messages/api_versions_response.h"
#include "protocol/messages/create_topics_request.h"
#include "protocol/messages/create_topics_response.h"
#include "protocol/messages/produce_request.h"
#include "protocol/messages/produce_response.h"
#include "record/batch_builder.h"
#include "record/compression.h"

namespace {

using namespace tarn;
using asio::ip::tcp;
using steady = std::chrono::steady_clock;
using frame = std::vector<uint8_t>;

constexpr std::string_view client_id = "produce_replay";
constexpr size_t max_response_bytes = 64 << 20;
// In a request frame: the 4-byte size, api_key, api_version, then the correlation id.
constexpr size_t correlation_id_offset = 8;

struct options {
  std::string bootstrap_server;
  std::string topic;
  int64_t bytes = int64_t{1} << 30;
  int64_t batch_bytes = 1 << 20;
  int record_size = 1024;
  int acks = 1;
  int partitions = 1;
  int in_flight = 5;
  int distinct_batches = 4;
  int connections = 1;
  record::compression_type compression = record::compression_type::none;
  bool create_topic = false;
  int64_t timeout_ms = 300'000;
};

std::string error_text(int16_t code) {
  const auto* info = protocol::find_error(code);
  return std::to_string(code) + (info ? " " + std::string(info->name) : std::string());
}

// One plain connection with blocking-style helpers for the setup requests; the timed phase
// drives the same socket asynchronously (replay below).
class broker_link {
 public:
  broker_link(asio::io_context& io, steady::time_point deadline)
      : io_(io), socket_(io), deadline_(deadline) {}

  result<void, std::string> connect(const std::string& bootstrap) {
    const auto colon = bootstrap.rfind(':');
    if (colon == std::string::npos) return fail("--bootstrap-server must be host:port");
    tcp::resolver resolver(io_);
    std::error_code ec;
    auto endpoints = resolver.resolve(bootstrap.substr(0, colon), bootstrap.substr(colon + 1), ec);
    if (ec) return fail("cannot resolve " + bootstrap + ": " + ec.message());
    asio::connect(socket_, endpoints, ec);
    if (ec) return fail("cannot connect to " + bootstrap + ": " + ec.message());
    socket_.set_option(tcp::no_delay(true), ec);
    return {};
  }

  tcp::socket& socket() { return socket_; }
  steady::time_point deadline() const { return deadline_; }

  // Sends one request and waits for its response (the bytes after the size prefix).
  result<frame, std::string> round_trip(const frame& request) {
    bool answered = false;
    std::string error;
    frame response;
    asio::async_write(socket_, asio::buffer(request), [&](std::error_code ec, size_t) {
      if (ec && error.empty()) error = "send failed: " + ec.message();
    });
    read_response([&](const std::string& why, frame body) {
      answered = true;
      if (error.empty()) error = why;
      response = std::move(body);
    });
    io_.restart();
    io_.run_until(deadline_);
    if (!answered) return fail(std::string("timed out"));
    if (!error.empty()) return fail(error);
    return response;
  }

  // Reads one response frame and calls done(error, bytes after the size); error is empty on
  // success. (Not a result<>: GCC 12 warns of a maybe-uninitialized variant through asio.)
  template <typename Done>
  void read_response(Done done) {
    auto size = std::make_shared<std::array<uint8_t, 4>>();
    asio::async_read(socket_, asio::buffer(*size), [this, size, done](std::error_code ec, size_t) {
      if (ec) return done("connection lost: " + ec.message(), frame());
      const uint32_t n = uint32_t{(*size)[0]} << 24 | uint32_t{(*size)[1]} << 16 |
                         uint32_t{(*size)[2]} << 8 | uint32_t{(*size)[3]};
      if (n < 4 || n > max_response_bytes) {
        return done("bad response size " + std::to_string(n), frame());
      }
      auto body = std::make_shared<frame>(n);
      asio::async_read(socket_, asio::buffer(*body), [body, done](std::error_code ec, size_t) {
        if (ec) return done("connection lost: " + ec.message(), frame());
        done(std::string(), std::move(*body));
      });
    });
  }

 private:
  asio::io_context& io_;
  tcp::socket socket_;
  steady::time_point deadline_;
};

// The broker's version range of every API it answered in ApiVersions, by api key.
using version_table = std::vector<std::pair<int16_t, int16_t>>;

result<version_table, std::string> api_versions(broker_link& link) {
  int16_t version = client::api_versions_versions.max_version;
  for (;;) {
    protocol::api_versions_request request;
    request.client_software_name = "tarn-produce-replay";
    request.client_software_version = "0.1.0";
    auto response = link.round_trip(client::frame_request(request, version, 1, client_id));
    if (!response) return fail("ApiVersions: " + response.error());
    auto body = client::decode_response<protocol::api_versions_response>(*response, version);
    if (!body) return fail("ApiVersions: " + body.error());
    if (body->error_code == static_cast<int16_t>(protocol::error_code::unsupported_version) &&
        version > 0) {
      version = 0;  // the broker answered v0 with its own range; v0 has no fields to disagree on
      continue;
    }
    if (body->error_code != 0) return fail("ApiVersions: error " + error_text(body->error_code));
    version_table table(128, {-1, -1});
    for (const auto& api : body->api_keys) {
      if (api.api_key >= 0 && api.api_key < 128)
        table[api.api_key] = {api.min_version, api.max_version};
    }
    return table;
  }
}

int16_t choose(const version_table& table, client::api_range ours) {
  const auto [low, high] = table[ours.api_key];
  return low < 0 ? -1 : client::negotiate_version(ours, low, high);
}

result<void, std::string> create_topic(broker_link& link, const version_table& table,
                                       const options& o) {
  const int16_t version = choose(table, {19, 2, 7});
  if (version < 0) return fail(std::string("the broker shares no CreateTopics version (2-7)"));
  protocol::create_topics_request request;
  request.timeout_ms = 30'000;
  auto& topic = request.topics.emplace_back();
  topic.name = o.topic;
  topic.num_partitions = o.partitions;
  topic.replication_factor = 1;
  auto response = link.round_trip(client::frame_request(request, version, 2, client_id));
  if (!response) return fail("CreateTopics: " + response.error());
  auto body = client::decode_response<protocol::create_topics_response>(*response, version);
  if (!body) return fail("CreateTopics: " + body.error());
  for (const auto& t : body->topics) {
    if (t.error_code != 0 &&
        t.error_code != static_cast<int16_t>(protocol::error_code::topic_already_exists)) {
      return fail("CreateTopics " + o.topic + ": error " + error_text(t.error_code) + " " +
                  std::string(t.error_message.value_or("")));
    }
  }
  return {};
}

// The distinct batches, built with the producer's own batch builder.
struct batch {
  std::vector<uint8_t> bytes;
  int32_t records = 0;
};

result<std::vector<batch>, std::string> build_batches(const options& o) {
  std::mt19937_64 rng(20261129);
  std::uniform_int_distribution<int> letter('A', 'Z');
  std::string value(static_cast<size_t>(o.record_size), 'A');
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  std::vector<batch> out;
  for (int i = 0; i < o.distinct_batches; ++i) {
    record::batch_builder builder(
        {.batch_size = static_cast<size_t>(o.batch_bytes), .compression = o.compression});
    for (;;) {
      for (auto& c : value) c = static_cast<char>(letter(rng));
      const auto appended = builder.try_append(now_ms, std::nullopt, record::as_bytes(value));
      if (appended == record::append_result::batch_full) break;
      if (appended != record::append_result::appended) return fail(std::string("record too large"));
    }
    batch b;
    b.records = builder.record_count();
    auto built = builder.build();
    if (!built) return fail("building a batch failed: " + built.error().message);
    b.bytes = std::move(*built);
    out.push_back(std::move(b));
  }
  return out;
}

// A framed Produce request of one batch to one partition; its correlation id is patched per send.
struct request_template {
  frame bytes;
  size_t batch_index = 0;
  int32_t partition = 0;
};

void set_correlation_id(frame& f, int32_t id) {
  const auto v = static_cast<uint32_t>(id);
  for (int i = 0; i < 4; ++i)
    f[correlation_id_offset + i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}

// The first error in a Produce response, or none. Checks that every partition sent is answered.
result<void, std::string> check_produce_response(std::span<const uint8_t> response, int16_t version,
                                                 const options& o, int32_t partition) {
  auto body = client::decode_response<protocol::produce_response>(response, version);
  if (!body) return fail("Produce: " + body.error());
  bool answered = false;
  for (const auto& t : body->responses) {
    for (const auto& p : t.partition_responses) {
      if (p.error_code != 0) {
        return fail("Produce to " + o.topic + "-" + std::to_string(p.index) + ": error " +
                    error_text(p.error_code) + " " + std::string(p.error_message.value_or("")));
      }
      answered = answered || (t.name == o.topic && p.index == partition);
    }
  }
  if (!answered)
    return fail("Produce response without a result for partition " + std::to_string(partition));
  return {};
}

// Before timing: one request per partition, retried while the broker says the partition is not
// ready (a topic just created may not have its leader yet).
result<void, std::string> warm_up(broker_link& link, std::vector<request_template>& templates,
                                  size_t partitions, int16_t version, const options& o,
                                  int32_t& correlation_id) {
  for (size_t p = 0; p < partitions; ++p) {
    auto& t = templates[p % templates.size()];
    // The broker's last answer, so that a deadline reached while a retry is on the wire still
    // says why the run failed (on a loaded machine the last retry's answer may come too late).
    std::string last_refusal;
    for (;;) {
      set_correlation_id(t.bytes, ++correlation_id);
      if (o.acks == 0) {
        std::error_code ec;
        asio::write(link.socket(), asio::buffer(t.bytes), ec);
        if (ec) return fail("send failed: " + ec.message());
        break;
      }
      auto response = link.round_trip(t.bytes);
      if (!response) {
        if (last_refusal.empty()) return fail("warm-up Produce: " + response.error());
        return fail("warm-up Produce: " + response.error() + "; " + last_refusal);
      }
      auto checked = check_produce_response(*response, version, o, t.partition);
      if (checked) break;
      auto body = client::decode_response<protocol::produce_response>(*response, version);
      if (!body) return fail(checked.error());
      bool retriable = true;
      for (const auto& tp : body->responses) {
        for (const auto& pp : tp.partition_responses) {
          retriable = retriable && (pp.error_code == 0 ||
                                    protocol::is_retriable(protocol::error_code{pp.error_code}));
        }
      }
      if (!retriable) return fail(checked.error());
      last_refusal = checked.error();
      const auto retry_at = steady::now() + std::chrono::milliseconds(100);
      if (retry_at >= link.deadline()) return fail("timed out; " + checked.error());
      std::this_thread::sleep_for(retry_at - steady::now());
    }
  }
  return {};
}

// The timed phase: writes requests back to back while fewer than in_flight are unanswered, reads
// responses as they come.
class replay {
 public:
  replay(broker_link& link, std::vector<request_template>& templates,
         const std::vector<batch>& batches, int16_t version, const options& o,
         int32_t first_correlation_id)
      : link_(link),
        templates_(templates),
        batches_(batches),
        version_(version),
        o_(o),
        next_correlation_id_(first_correlation_id) {}

  struct totals {
    int64_t requests = 0;
    int64_t records = 0;
    int64_t batch_bytes = 0;
    double seconds = 0;
    steady::time_point start, end;
    std::vector<double> latency_ms;
  };

  result<totals, std::string> run(asio::io_context& io) {
    start_ = steady::now();
    if (o_.acks != 0) read_next();
    pump();
    io.restart();
    io.run_until(link_.deadline());
    if (!error_.empty()) return fail(error_);
    if (!finished()) return fail(std::string("timed out"));
    totals_.seconds = std::chrono::duration<double>(end_ - start_).count();
    totals_.start = start_;
    totals_.end = end_;
    return std::move(totals_);
  }

 private:
  struct outstanding {
    int32_t correlation_id;
    size_t template_index;
    steady::time_point sent_at;
  };

  bool finished() const { return sent_bytes_ >= o_.bytes && in_flight_.empty() && !writing_; }

  void pump() {
    if (writing_ || !error_.empty() || sent_bytes_ >= o_.bytes) return;
    if (static_cast<int>(in_flight_.size()) >= o_.in_flight) return;
    const size_t index = static_cast<size_t>(next_request_++) % templates_.size();
    auto& t = templates_[index];
    const int32_t id = next_correlation_id_++;
    set_correlation_id(t.bytes, id);
    writing_ = true;
    sent_bytes_ += static_cast<int64_t>(batches_[t.batch_index].bytes.size());
    const auto sent_at = steady::now();
    asio::async_write(link_.socket(), asio::buffer(t.bytes),
                      [this, id, index, sent_at](std::error_code ec, size_t) {
                        writing_ = false;
                        if (ec) return stop("send failed: " + ec.message());
                        if (o_.acks == 0) {
                          count(index, sent_at);
                        } else {
                          in_flight_.push_back({id, index, sent_at});
                        }
                        if (finished()) return done();
                        pump();
                      });
  }

  void read_next() {
    link_.read_response([this](const std::string& why, frame response) {
      if (!error_.empty() || finished()) return;
      if (!why.empty()) return stop(why);
      auto id = client::peek_correlation_id(response);
      if (!id) return stop(id.error());
      if (in_flight_.empty() || *id != in_flight_.front().correlation_id) {
        return stop("response with unexpected correlation id " + std::to_string(*id));
      }
      const auto sent = in_flight_.front();
      in_flight_.pop_front();
      auto checked =
          check_produce_response(response, version_, o_, templates_[sent.template_index].partition);
      if (!checked) return stop(checked.error());
      count(sent.template_index, sent.sent_at);
      if (finished()) return done();
      read_next();
      pump();
    });
  }

  void count(size_t template_index, steady::time_point sent_at) {
    const auto& b = batches_[templates_[template_index].batch_index];
    ++totals_.requests;
    totals_.records += b.records;
    totals_.batch_bytes += static_cast<int64_t>(b.bytes.size());
    totals_.latency_ms.push_back(
        std::chrono::duration<double, std::milli>(steady::now() - sent_at).count());
  }

  void done() {
    end_ = steady::now();
    std::error_code ignored;
    link_.socket().cancel(ignored);  // the read of a response that will not come
  }

  void stop(std::string why) {
    error_ = std::move(why);
    std::error_code ignored;
    link_.socket().close(ignored);
  }

  broker_link& link_;
  std::vector<request_template>& templates_;
  const std::vector<batch>& batches_;
  int16_t version_;
  const options& o_;
  int32_t next_correlation_id_;
  int64_t next_request_ = 0;
  int64_t sent_bytes_ = 0;
  bool writing_ = false;
  std::deque<outstanding> in_flight_;
  std::string error_;
  steady::time_point start_;
  steady::time_point end_;
  totals totals_;
};

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  return sorted[std::min(sorted.size() - 1, static_cast<size_t>(p * sorted.size()))];
}

// One connection of the run: its socket, its partitions' request templates and its replay.
struct connection_run {
  asio::io_context io;
  std::unique_ptr<broker_link> link;
  std::vector<request_template> templates;
  size_t partitions = 0;  // templates[0, partitions) cover each of its partitions once
  options o;              // the run's, with this connection's share of the bytes
  int32_t correlation_id = 10;
};

// The partitions connection c of `connections` sends to.
std::vector<int32_t> partitions_of(int c, const options& o) {
  std::vector<int32_t> out;
  for (int p = c; p < o.partitions; p += o.connections) out.push_back(p);
  if (out.empty()) out.push_back(c % o.partitions);
  return out;
}

std::vector<request_template> make_templates(const std::vector<batch>& batches,
                                             const std::vector<int32_t>& partitions,
                                             int16_t version, const options& o) {
  std::vector<request_template> templates;
  const size_t count = std::max(static_cast<size_t>(o.distinct_batches), partitions.size());
  for (size_t k = 0; k < count; ++k) {
    request_template t;
    t.batch_index = k % batches.size();
    t.partition = partitions[k % partitions.size()];
    protocol::produce_request request;
    request.acks = static_cast<int16_t>(o.acks);
    request.timeout_ms = 30'000;
    auto& topic = request.topic_data.emplace_back();
    topic.name = o.topic;
    auto& partition = topic.partition_data.emplace_back();
    partition.index = t.partition;
    partition.records = record::bytes_view(batches[t.batch_index].bytes);
    t.bytes = client::frame_request(request, version, 0, client_id);
    templates.push_back(std::move(t));
  }
  return templates;
}

int run(const options& o) {
  const auto deadline = steady::now() + std::chrono::milliseconds(o.timeout_ms);
  auto failed = [](const std::string& why) {
    std::fprintf(stderr, "produce_replay: %s\n", why.c_str());
    return 1;
  };
  auto batches = build_batches(o);
  if (!batches) return failed(batches.error());

  std::vector<std::unique_ptr<connection_run>> conns;
  int16_t version = -1;
  for (int c = 0; c < o.connections; ++c) {
    auto conn = std::make_unique<connection_run>();
    conn->o = o;
    conn->o.bytes = std::max<int64_t>(1, o.bytes / o.connections);
    conn->link = std::make_unique<broker_link>(conn->io, deadline);
    if (auto r = conn->link->connect(o.bootstrap_server); !r) return failed(r.error());
    auto table = api_versions(*conn->link);
    if (!table) return failed(table.error());
    if (c == 0) {
      version = choose(*table, client::produce_versions);
      if (version < 0) return failed("the broker shares no Produce version (3-12)");
      if (o.create_topic) {
        if (auto r = create_topic(*conn->link, *table, o); !r) return failed(r.error());
      }
    }
    const auto partitions = partitions_of(c, o);
    conn->partitions = partitions.size();
    conn->templates = make_templates(*batches, partitions, version, o);
    if (auto w = warm_up(*conn->link, conn->templates, conn->partitions, version, o,
                         conn->correlation_id);
        !w) {
      return failed(w.error());
    }
    conns.push_back(std::move(conn));
  }

  // The timed phase: one thread a connection, released together.
  std::vector<result<replay::totals, std::string>> results(conns.size(),
                                                           fail(std::string("did not run")));
  {
    std::latch go(static_cast<std::ptrdiff_t>(conns.size()));
    std::vector<std::thread> threads;
    for (size_t c = 0; c < conns.size(); ++c) {
      threads.emplace_back([&, c] {
        auto& conn = *conns[c];
        replay r(*conn.link, conn.templates, *batches, version, conn.o, conn.correlation_id + 1);
        go.arrive_and_wait();
        results[c] = r.run(conn.io);
      });
    }
    for (auto& t : threads) t.join();
  }
  auto totals = std::move(results[0]);
  if (!totals) return failed(totals.error());
  for (size_t c = 1; c < results.size(); ++c) {
    if (!results[c]) return failed("connection " + std::to_string(c) + ": " + results[c].error());
    const auto& more = *results[c];
    totals->requests += more.requests;
    totals->records += more.records;
    totals->batch_bytes += more.batch_bytes;
    totals->start = std::min(totals->start, more.start);
    totals->end = std::max(totals->end, more.end);
    totals->latency_ms.insert(totals->latency_ms.end(), more.latency_ms.begin(),
                              more.latency_ms.end());
  }
  totals->seconds = std::chrono::duration<double>(totals->end - totals->start).count();

  auto& lat = totals->latency_ms;
  std::sort(lat.begin(), lat.end());
  double sum = 0;
  for (double v : lat) sum += v;
  const double secs = totals->seconds;
  const double value_mib = static_cast<double>(totals->records) * o.record_size / (1 << 20);
  std::printf("%" PRId64
              " records sent, %f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max "
              "latency, %.2f ms 50th, %.2f ms 95th, %.2f ms 99th, %.2f ms 99.9th.\n",
              totals->records, static_cast<double>(totals->records) / secs, value_mib / secs,
              lat.empty() ? 0.0 : sum / static_cast<double>(lat.size()),
              lat.empty() ? 0.0 : lat.back(), percentile(lat, 0.5), percentile(lat, 0.95),
              percentile(lat, 0.99), percentile(lat, 0.999));
  std::printf("batch_bytes=%" PRId64 " requests=%" PRId64
              " elapsed_s=%.6f batch_mib_s=%.2f records_per_batch=%d produce_version=%d "
              "acks=%d partitions=%d in_flight=%d compression_type=%s connections=%d\n",
              totals->batch_bytes, totals->requests, secs,
              static_cast<double>(totals->batch_bytes) / (1 << 20) / secs, (*batches)[0].records,
              version, o.acks, o.partitions, o.in_flight,
              std::string(record::compression_name(o.compression)).c_str(), o.connections);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  CLI::App app{"Replays prebuilt record batches as Produce requests: the broker's ingest ceiling"};
  app.add_option("--bootstrap-server", o.bootstrap_server, "host:port")->required();
  app.add_option("--topic", o.topic)->required();
  app.add_option("--bytes", o.bytes, "record batch bytes to have acknowledged")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 50));
  app.add_option("--batch-bytes", o.batch_bytes, "batch.size of each batch")
      ->check(CLI::Range(int64_t{128}, int64_t{64} << 20));
  app.add_option("--record-size", o.record_size)->check(CLI::Range(1, 16 << 20));
  app.add_option("--acks", o.acks)->check(CLI::IsMember({-1, 0, 1}));
  app.add_option("--partitions", o.partitions)->check(CLI::Range(1, 10000));
  app.add_option("--in-flight", o.in_flight)->check(CLI::Range(1, 1000));
  app.add_option("--distinct-batches", o.distinct_batches)->check(CLI::Range(1, 64));
  app.add_option("--connections", o.connections, "connections replaying at once, a thread each")
      ->check(CLI::Range(1, 256));
  app.add_option_function<std::string>(
      "--compression-type",
      [&o](const std::string& name) {
        if (!record::parse_compression_name(name, o.compression)) {
          throw CLI::ValidationError("--compression-type", "not a compression.type: " + name);
        }
      },
      "none (default), gzip, snappy, lz4 or zstd");
  app.add_flag("--create-topic", o.create_topic, "create the topic (already existing is fine)");
  app.add_option("--timeout-ms", o.timeout_ms)->check(CLI::Range(int64_t{1}, int64_t{86'400'000}));
  CLI11_PARSE(app, argc, argv);
  return run(o);
}
