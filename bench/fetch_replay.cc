// fetch_replay: the consumer's ceiling. A proxy in front of a broker that forwards every request
// and remembers each Fetch response by its request; a Fetch it has seen before (the same bytes
// after the correlation id: client id, offsets, limits, isolation level) is answered from memory
// with one writev and no broker work at all. A consumer that reads a partition twice through it
// reads the second time from a "broker" that costs only the kernel's copy into the socket, so
// its rate is what the consumer and this machine allow, whatever the broker behind.
//
//   fetch_replay --listen-port P --upstream H:U [--port-file F]
//
// One thread per client connection, each with its own upstream connection; requests are
// forwarded one at a time (a client that pipelines waits for each answer in turn, which the
// consumers measured here never do: librdkafka keeps one Fetch in flight per broker). Metadata
// responses are decoded and re-encoded with every broker's port set to the proxy's, so a client
// bootstrapped at the proxy stays on it (one broker, on the same host). On SIGTERM or SIGINT it
// prints the cache's hits and misses and exits.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "protocol/headers.h"
#include "protocol/messages/metadata_response.h"
#include "protocol/reader.h"
#include "protocol/writer.h"

namespace {

using frame = std::vector<uint8_t>;

std::atomic<uint64_t> hits{0}, misses{0};

bool read_exact(int fd, uint8_t* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::read(fd, p, n);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool write_all(int fd, const iovec* iov_in, int count) {
  std::vector<iovec> iov(iov_in, iov_in + count);
  size_t i = 0;
  while (i < iov.size()) {
    ssize_t w = ::writev(fd, iov.data() + i, static_cast<int>(iov.size() - i));
    if (w <= 0) return false;
    size_t left = static_cast<size_t>(w);
    while (i < iov.size() && left >= iov[i].iov_len) left -= iov[i++].iov_len;
    if (i < iov.size()) {
      iov[i].iov_base = static_cast<uint8_t*>(iov[i].iov_base) + left;
      iov[i].iov_len -= left;
    }
  }
  return true;
}

// One frame: the 4-byte big-endian size, then the bytes (returned without the size).
bool read_frame(int fd, frame& out) {
  uint8_t size_bytes[4];
  if (!read_exact(fd, size_bytes, 4)) return false;
  const uint32_t size = (uint32_t{size_bytes[0]} << 24) | (uint32_t{size_bytes[1]} << 16) |
                        (uint32_t{size_bytes[2]} << 8) | size_bytes[3];
  if (size < 8 || size > (256u << 20)) return false;
  out.resize(size);
  return read_exact(fd, out.data(), size);
}

bool write_frame(int fd, const frame& f, const uint8_t* correlation_id) {
  uint8_t head[8];
  const uint32_t size = static_cast<uint32_t>(f.size());
  head[0] = static_cast<uint8_t>(size >> 24);
  head[1] = static_cast<uint8_t>(size >> 16);
  head[2] = static_cast<uint8_t>(size >> 8);
  head[3] = static_cast<uint8_t>(size);
  std::memcpy(head + 4, correlation_id ? correlation_id : f.data(), 4);
  iovec iov[2] = {{head, 8}, {const_cast<uint8_t*>(f.data()) + 4, f.size() - 4}};
  return write_all(fd, iov, 2);
}

class response_cache {
 public:
  std::shared_ptr<const frame> find(const std::string& key) {
    std::lock_guard lock(mutex_);
    auto it = responses_.find(key);
    return it == responses_.end() ? nullptr : it->second;
  }
  void put(std::string key, frame response) {
    std::lock_guard lock(mutex_);
    responses_.emplace(std::move(key), std::make_shared<const frame>(std::move(response)));
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const frame>> responses_;
};

int connect_to(const std::string& host, uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, host.c_str(), &a.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// A Metadata response (frame without its size) with every broker's port set to `port`; the frame
// unchanged when it does not decode or its header carries tagged fields.
frame with_brokers_at(const frame& response, int16_t version, uint16_t port) {
  using namespace tarn::protocol;
  size_t header = 4;
  if (response_header_version(3, version) == 1) {
    if (response.size() < 5 || response[4] != 0) return response;
    header = 5;
  }
  reader r(bytes_view(response.data() + header, response.size() - header));
  auto decoded = metadata_response::decode(r, version);
  if (!decoded) return response;
  for (auto& b : decoded->brokers) b.port = port;
  frame out(response.begin(), response.begin() + static_cast<std::ptrdiff_t>(header));
  writer w(out);
  decoded->encode(w, version);
  return out;
}

void serve_client(int client, const std::string& host, uint16_t port, uint16_t listen_port,
                  response_cache& cache) {
  int upstream = connect_to(host, port);
  frame request, response;
  while (upstream >= 0 && read_frame(client, request)) {
    const int16_t api_key = static_cast<int16_t>((request[0] << 8) | request[1]);
    const uint8_t* correlation_id = request.data() + 4;
    std::string key;
    if (api_key == 1) {                                              // Fetch
      key.assign(reinterpret_cast<const char*>(request.data()), 4);  // key and version
      key.append(reinterpret_cast<const char*>(request.data()) + 8, request.size() - 8);
      if (auto hit = cache.find(key)) {
        hits.fetch_add(1, std::memory_order_relaxed);
        if (!write_frame(client, *hit, correlation_id)) break;
        continue;
      }
      misses.fetch_add(1, std::memory_order_relaxed);
    }
    if (!write_frame(upstream, request, nullptr) || !read_frame(upstream, response)) break;
    if (api_key == 3) {
      const int16_t version = static_cast<int16_t>((request[2] << 8) | request[3]);
      response = with_brokers_at(response, version, listen_port);
    }
    if (!write_frame(client, response, nullptr)) break;
    if (!key.empty()) cache.put(std::move(key), response);
  }
  if (upstream >= 0) ::close(upstream);
  ::close(client);
}

volatile std::sig_atomic_t stopping = 0;
void on_signal(int) { stopping = 1; }

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
  const auto colon = upstream.rfind(':');
  if (colon == std::string::npos) {
    std::fprintf(stderr, "--upstream must be host:port\n");
    return 2;
  }
  const std::string host = upstream.substr(0, colon);
  const auto port = static_cast<uint16_t>(std::stoi(upstream.substr(colon + 1)));

  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(listen_port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(listener, 64) != 0) {
    std::perror("fetch_replay: bind/listen");
    return 1;
  }
  socklen_t len = sizeof a;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
  if (!port_file.empty()) std::ofstream(port_file) << ntohs(a.sin_port) << "\n";
  std::printf("listening on 127.0.0.1:%u, upstream %s\n", ntohs(a.sin_port), upstream.c_str());
  std::fflush(stdout);

  struct sigaction sa {};
  sa.sa_handler = on_signal;  // no SA_RESTART: accept() returns EINTR
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  response_cache cache;
  while (!stopping) {
    int client = ::accept(listener, nullptr, nullptr);
    if (client < 0) continue;
    ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::thread(serve_client, client, host, port, ntohs(a.sin_port), std::ref(cache)).detach();
  }
  std::printf("fetch cache: %llu hits, %llu misses\n", static_cast<unsigned long long>(hits.load()),
              static_cast<unsigned long long>(misses.load()));
  std::fflush(stdout);
  std::_Exit(0);  // client threads may still block in read
}
