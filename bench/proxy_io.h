// The socket side of bench's Kafka proxies (fetch_replay, share_fetch_replay): frames read and
// written whole on blocking sockets, the upstream connection, and Metadata answers re-pointed at
// the proxy. Header-only; each tool is one thread per client connection.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "protocol/headers.h"
#include "protocol/messages/metadata_response.h"
#include "protocol/reader.h"
#include "protocol/writer.h"

namespace tarn::bench {

using frame = std::vector<uint8_t>;

inline bool read_exact(int fd, uint8_t* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::read(fd, p, n);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

inline bool write_all(int fd, const iovec* iov_in, int count) {
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
inline bool read_frame(int fd, frame& out) {
  uint8_t size_bytes[4];
  if (!read_exact(fd, size_bytes, 4)) return false;
  const uint32_t size = (uint32_t{size_bytes[0]} << 24) | (uint32_t{size_bytes[1]} << 16) |
                        (uint32_t{size_bytes[2]} << 8) | size_bytes[3];
  if (size < 8 || size > (256u << 20)) return false;
  out.resize(size);
  return read_exact(fd, out.data(), size);
}

// A response frame with the correlation id of the request it answers and, when `session_id_at`
// is non-zero, the session id at that offset set to `session_id`: the few changed bytes go in a
// head of their own, the rest straight from `f`, in one writev.
inline bool write_frame(int fd, const frame& f, const uint8_t* correlation_id,
                        size_t session_id_at = 0, int32_t session_id = 0) {
  uint8_t head[64];
  const size_t copied = session_id_at ? session_id_at + 4 : 4;
  if (copied > sizeof head - 4 || copied > f.size()) return false;
  const uint32_t size = static_cast<uint32_t>(f.size());
  head[0] = static_cast<uint8_t>(size >> 24);
  head[1] = static_cast<uint8_t>(size >> 16);
  head[2] = static_cast<uint8_t>(size >> 8);
  head[3] = static_cast<uint8_t>(size);
  std::memcpy(head + 4, f.data(), copied);
  if (correlation_id) std::memcpy(head + 4, correlation_id, 4);
  if (session_id_at) {
    std::vector<uint8_t> id;
    protocol::writer(id).write_int32(session_id);
    std::memcpy(head + 4 + session_id_at, id.data(), 4);
  }
  iovec iov[2] = {{head, 4 + copied}, {const_cast<uint8_t*>(f.data()) + copied, f.size() - copied}};
  return write_all(fd, iov, 2);
}

inline int connect_to(const std::string& host, uint16_t port) {
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
inline frame with_brokers_at(const frame& response, int16_t version, uint16_t port) {
  using namespace protocol;
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

// One request the proxy does not answer itself: through to the broker and its answer back to the
// client, a Metadata answer with every broker at the proxy's port (so the client stays on it).
// False when either connection failed.
inline bool forward_upstream(int client, int upstream, const frame& request, frame& response,
                             uint16_t listen_port) {
  if (!write_frame(upstream, request, nullptr) || !read_frame(upstream, response)) return false;
  if (((request[0] << 8) | request[1]) == 3) {  // Metadata
    const int16_t version = static_cast<int16_t>((request[2] << 8) | request[3]);
    response = with_brokers_at(response, version, listen_port);
  }
  return write_frame(client, response, nullptr);
}

// host:port split; false when there is no colon.
inline bool split_host_port(const std::string& address, std::string& host, uint16_t& port) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  host = address.substr(0, colon);
  port = static_cast<uint16_t>(std::stoi(address.substr(colon + 1)));
  return true;
}

inline volatile std::sig_atomic_t proxy_stopping = 0, proxy_reporting = 0;

// Listens on 127.0.0.1:listen_port (0: any free port), writes the bound port to port_file (when
// given) and prints "listening on 127.0.0.1:P, upstream U"; then runs serve(client, bound port)
// on a thread of its own per connection until SIGTERM or SIGINT, calling report() on SIGUSR1
// and once at the end. The signals reach this thread alone: a client thread's read must not end
// in EINTR. Returns the exit code (client threads may still block in read: the caller exits with
// std::_Exit).
inline int run_proxy(const char* name, uint16_t listen_port, const std::string& port_file,
                     const std::string& upstream, const std::function<void(int, uint16_t)>& serve,
                     const std::function<void()>& report) {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(listen_port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(listener, 64) != 0) {
    std::fprintf(stderr, "%s: bind/listen: %s\n", name, std::strerror(errno));
    return 1;
  }
  socklen_t len = sizeof a;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
  const uint16_t bound = ntohs(a.sin_port);
  if (!port_file.empty()) std::ofstream(port_file) << bound << "\n";
  std::printf("listening on 127.0.0.1:%u, upstream %s\n", bound, upstream.c_str());
  std::fflush(stdout);

  struct sigaction sa {};
  sa.sa_handler = [](int) { proxy_stopping = 1; };  // no SA_RESTART: poll() returns EINTR
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  sa.sa_handler = [](int) { proxy_reporting = 1; };
  ::sigaction(SIGUSR1, &sa, nullptr);
  sigset_t handled, before;
  sigemptyset(&handled);
  for (int sig : {SIGTERM, SIGINT, SIGUSR1}) sigaddset(&handled, sig);
  pollfd waiting{listener, POLLIN, 0};
  while (!proxy_stopping) {
    if (proxy_reporting) {
      proxy_reporting = 0;
      report();
    }
    // A signal between the checks above and the wait is seen at the next timeout at the latest.
    if (::poll(&waiting, 1, 200) <= 0) continue;
    int client = ::accept(listener, nullptr, nullptr);
    if (client < 0) continue;
    ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::pthread_sigmask(SIG_BLOCK, &handled, &before);
    std::thread(serve, client, bound).detach();
    ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  }
  report();
  return 0;
}

}  // namespace tarn::bench
