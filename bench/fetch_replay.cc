// fetch_replay: the consumer's ceiling. A proxy in front of a broker that forwards every request
// and remembers each Fetch answer by what decides it; a Fetch it has seen before is answered
// from memory with one writev and no broker work at all. A consumer that reads a partition twice
// through it reads the second time from a "broker" that costs only the kernel's copy into the
// socket, so its rate is what the consumer and this machine allow, whatever the broker behind.
//
//   fetch_replay --listen-port P --upstream H:U [--port-file F]
//
// Fetch sessions (KIP-227; Java's and tarn's consumers use them, librdkafka 2.0 does not): the
// proxy keeps the sessions itself (fetch_replay_sessions.h). Every Fetch becomes the full
// sessionless request it stands for, which goes upstream on a miss; the answer is remembered
// under the key of that request (topic, partition, fetch offset and max bytes of each
// partition, the request's max bytes and isolation level) and sent with the session id the
// client holds. Only answers with records and no error are remembered: an empty answer (a
// long poll at the end of the log) or an error goes upstream every time, as it would to a
// broker.
//
// One thread per client connection, each with its own upstream connection; requests are
// forwarded one at a time (a client that pipelines waits for each answer in turn, which the
// consumers measured here never do: one Fetch in flight per broker). Metadata responses are
// decoded and re-encoded with every broker's port set to the proxy's, so a client bootstrapped
// at the proxy stays on it (one broker, on the same host). On SIGTERM or SIGINT it prints the
// cache's hits and misses and the sessions' counts on one line and exits; SIGUSR1 prints the
// line and goes on.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fetch_replay_sessions.h"
#include "protocol/headers.h"
#include "protocol/messages/fetch_request.h"
#include "protocol/messages/fetch_response.h"
#include "protocol/messages/response_header.h"
#include "protocol/reader.h"
#include "protocol/writer.h"
#include "proxy_io.h"

namespace {

using namespace tarn::bench;

std::atomic<uint64_t> hits{0}, misses{0};

// A remembered Fetch answer: the upstream's frame and where its session id is (0: none, v6 and
// below).
struct cached_answer {
  frame bytes;
  size_t session_id_at = 0;
};

class response_cache {
 public:
  std::shared_ptr<const cached_answer> find(const std::string& key) {
    std::lock_guard lock(mutex_);
    auto it = responses_.find(key);
    return it == responses_.end() ? nullptr : it->second;
  }
  size_t size() {
    std::lock_guard lock(mutex_);
    return responses_.size();
  }
  void put(std::string key, cached_answer answer) {
    std::lock_guard lock(mutex_);
    responses_.emplace(std::move(key), std::make_shared<const cached_answer>(std::move(answer)));
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const cached_answer>> responses_;
};

// Where the session id sits in a FetchResponse body of `version` (0 below v7, which has none).
// Found by encoding two responses that differ only in it with the generated codec and comparing,
// so the layout is the codec's and not restated here; it is the same in every response of the
// version, since only fixed-width fields come before it.
size_t session_id_in_body(int16_t version) {
  using tarn::protocol::fetch_response;
  if (version < 7 || version > fetch_response::max_version) return 0;
  fetch_response a, b;
  b.session_id = -1;
  frame ea, eb;
  tarn::protocol::writer wa(ea), wb(eb);
  a.encode(wa, version);
  b.encode(wb, version);
  return static_cast<size_t>(std::mismatch(ea.begin(), ea.end(), eb.begin()).first - ea.begin());
}

// Where the session id sits in a Fetch response frame (after its size), or 0 when the frame does
// not decode or the version has none. Its answer is worth remembering when it decodes with no
// error anywhere and some partition has records.
size_t session_id_at(const frame& response, int16_t version, bool& worth_keeping) {
  using namespace tarn::protocol;
  worth_keeping = false;
  reader r(bytes_view(response.data(), response.size()));
  if (!response_header::decode(r, response_header_version(fetch_response::api_key, version)))
    return 0;
  const size_t body = r.position();
  auto decoded = fetch_response::decode(r, version);
  if (!decoded) return 0;
  bool records = false, errors = decoded->error_code != 0;
  for (const auto& t : decoded->responses) {
    for (const auto& p : t.partitions) {
      errors = errors || p.error_code != 0;
      records = records || (p.records && !p.records->empty());
    }
  }
  worth_keeping = records && !errors;
  const size_t in_body = session_id_in_body(version);
  return in_body ? body + in_body : 0;
}

fetch_sessions sessions;

// One client connection's Fetch: answered from memory, with a session error, or through the
// upstream (and remembered). False when either connection broke.
bool serve_fetch(int client, int upstream, const frame& request, frame& response,
                 response_cache& cache) {
  using namespace tarn::protocol;
  const int16_t version = static_cast<int16_t>((request[2] << 8) | request[3]);
  const uint8_t* correlation_id = request.data() + 4;
  reader r(bytes_view(request.data(), request.size()));
  auto header = decode_request_header(r);
  const size_t body = r.position();
  std::optional<fetch_request> decoded;
  if (header) {
    if (auto d = fetch_request::decode(r, version)) decoded = std::move(*d);
  }
  if (!decoded) {  // not ours to judge: the broker answers it
    misses.fetch_add(1, std::memory_order_relaxed);
    return write_frame(upstream, request, nullptr) && read_frame(upstream, response) &&
           write_frame(client, response, nullptr);
  }
  const fetch_plan plan = sessions.plan(*decoded, version);
  if (plan.error_code != 0) {
    frame answer;
    writer w(answer);
    response_header{header->correlation_id}.encode(w, response_header_version(1, version));
    fetch_response error;
    error.error_code = plan.error_code;
    error.encode(w, version);
    return write_frame(client, answer, nullptr);
  }
  std::string key = answer_key(*decoded, plan, version);
  if (auto hit = cache.find(key)) {
    hits.fetch_add(1, std::memory_order_relaxed);
    return write_frame(client, hit->bytes, correlation_id, hit->session_id_at,
                       plan.response_session_id);
  }
  misses.fetch_add(1, std::memory_order_relaxed);
  frame forwarded(request.begin(), request.begin() + static_cast<std::ptrdiff_t>(body));
  writer w(forwarded);
  upstream_request(*decoded, plan).encode(w, version);
  if (!write_frame(upstream, forwarded, nullptr) || !read_frame(upstream, response)) return false;
  bool keep = false;
  const size_t at = session_id_at(response, version, keep);
  // Kept before the client has it: whoever the client tells next (a test counting the cache)
  // finds it counted. A copy, in the first pass only.
  if (keep) cache.put(std::move(key), cached_answer{response, at});
  return write_frame(client, response, nullptr, at, plan.response_session_id);
}

void serve_client(int client, const std::string& host, uint16_t port, uint16_t listen_port,
                  response_cache& cache) {
  int upstream = connect_to(host, port);
  frame request, response;
  while (upstream >= 0 && read_frame(client, request)) {
    const int16_t api_key = static_cast<int16_t>((request[0] << 8) | request[1]);
    if (api_key == 1) {  // Fetch
      if (!serve_fetch(client, upstream, request, response, cache)) break;
      continue;
    }
    if (!forward_upstream(client, upstream, request, response, listen_port)) break;
  }
  if (upstream >= 0) ::close(upstream);
  ::close(client);
}

// One line: the cache's hits, misses and answers kept, and the sessions' counts (SIGUSR1 prints
// it on the way, the exit at the end).
void report(response_cache& cache) {
  const auto counts = sessions.stats();
  std::printf(
      "fetch cache: %llu hits, %llu misses, %zu answers kept; fetch sessions: %llu created, "
      "%llu incremental fetches, %llu sessionless, %llu session errors\n",
      static_cast<unsigned long long>(hits.load()), static_cast<unsigned long long>(misses.load()),
      cache.size(), static_cast<unsigned long long>(counts.created),
      static_cast<unsigned long long>(counts.incremental),
      static_cast<unsigned long long>(counts.sessionless),
      static_cast<unsigned long long>(counts.errors));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "fetch_replay: answers repeated Fetch requests from memory (the consumer's ceiling)"};
  uint16_t listen_port = 0;
  std::string upstream, port_file;
  app.add_option("--listen-port", listen_port, "port to listen on, 127.0.0.1 (0: any free)");
  app.add_option("--upstream", upstream, "the broker, host:port")->required();
  app.add_option("--port-file", port_file, "write the bound port here once listening");
  CLI11_PARSE(app, argc, argv);
  std::string host;
  uint16_t port = 0;
  if (!split_host_port(upstream, host, port)) {
    std::fprintf(stderr, "--upstream must be host:port\n");
    return 2;
  }
  response_cache cache;
  const int code = run_proxy(
      "fetch_replay", listen_port, port_file, upstream,
      [&](int client, uint16_t bound) { serve_client(client, host, port, bound, cache); },
      [&] { report(cache); });
  std::_Exit(code);  // client threads may still block in read
}
