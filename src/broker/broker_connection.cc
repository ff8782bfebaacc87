// A blocking connection to another broker (broker_connection.h).
#include "broker/broker_connection.h"

#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "broker/config.h"
#include "cluster/cluster_membership.h"
#include "protocol/headers.h"
#include "protocol/reader.h"
#include "protocol/writer.h"

namespace tarn::broker {

namespace {

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

result<void, std::string> broker_connection::connect_to(const std::string& host, int32_t port) {
  close_connection();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return fail(fmt::format("resolve {}: {}", host, ::gai_strerror(rc)));
  }
  std::string why = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      fd_ = fd;
      break;
    }
    why = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(found);
  if (fd_ < 0) return fail(fmt::format("connect {}:{}: {}", host, port, why));
  target_ = fmt::format("{}:{}", host, port);
  return {};
}

void broker_connection::close_connection() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  target_.clear();
}

result<std::span<const uint8_t>, std::string> broker_connection::round_trip(
    int16_t api_key, int16_t api_version, std::span<const uint8_t> body,
    std::vector<uint8_t>& buffer, int64_t timeout_ms, const std::function<bool()>& abandon) {
  protocol::request_header header;
  header.request_api_key = api_key;
  header.request_api_version = api_version;
  header.correlation_id = next_correlation_id_++;
  header.client_id = std::string_view(client_id_);
  std::vector<uint8_t> frame(4);
  protocol::writer w(frame);
  header.encode(w, protocol::request_header_version(api_key, api_version));
  frame.insert(frame.end(), body.begin(), body.end());
  const uint32_t size = static_cast<uint32_t>(frame.size() - 4);
  for (size_t i = 0; i < 4; ++i) frame[i] = static_cast<uint8_t>(size >> (24 - 8 * i));
  const int64_t deadline = steady_ms() + timeout_ms;
  auto broken = [this](std::string why) {
    close_connection();
    return fail(std::move(why));
  };
  if (auto s = io(frame.data(), frame.size(), true, deadline, abandon); !s) {
    return broken(s.error());
  }
  uint8_t size_bytes[4];
  if (auto r = io(size_bytes, 4, false, deadline, abandon); !r) return broken(r.error());
  const int32_t response_size =
      static_cast<int32_t>((uint32_t{size_bytes[0]} << 24) | (uint32_t{size_bytes[1]} << 16) |
                           (uint32_t{size_bytes[2]} << 8) | uint32_t{size_bytes[3]});
  if (response_size < 4 || response_size > max_replica_response_bytes) {
    return broken(fmt::format("bad response size {}", response_size));
  }
  buffer.resize(static_cast<size_t>(response_size));
  if (auto r = io(buffer.data(), buffer.size(), false, deadline, abandon); !r) {
    return broken(r.error());
  }
  protocol::reader r(buffer);
  auto rh =
      protocol::response_header::decode(r, protocol::response_header_version(api_key, api_version));
  if (!rh || rh->correlation_id != header.correlation_id) {
    return broken("response header does not match the request");
  }
  return std::span<const uint8_t>(buffer).subspan(buffer.size() - r.remaining());
}

result<void, std::string> broker_connection::io(uint8_t* data, size_t n, bool sending,
                                                int64_t deadline_ms,
                                                const std::function<bool()>& abandon) {
  size_t done = 0;
  while (done < n) {
    if (abandon()) return fail(std::string("abandoned (stopping, or a leader changed)"));
    const int64_t left = deadline_ms - steady_ms();
    if (left <= 0) return fail(std::string("timed out"));
    pollfd p{fd_, static_cast<short>(sending ? POLLOUT : POLLIN), 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 100)));
    if (ready < 0 && errno != EINTR) return fail(fmt::format("poll: {}", std::strerror(errno)));
    if (ready <= 0) continue;
    const ssize_t r = sending ? ::send(fd_, data + done, n - done, MSG_NOSIGNAL)
                              : ::recv(fd_, data + done, n - done, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return fail(std::string("the leader closed the connection"));
    if (r < 0) return fail(fmt::format("{}: {}", sending ? "send" : "recv", std::strerror(errno)));
    done += static_cast<size_t>(r);
  }
  return {};
}

bool connect_to_broker(broker_connection& conn, const broker_config& config,
                       const cluster::cluster_membership& membership, int32_t node_id) {
  if (conn.connected()) return true;
  const std::string listener =
      config.advertised_listeners.empty() ? "" : config.advertised_listeners[0].name;
  for (const auto& b : membership.live_brokers()) {
    if (b.node_id != node_id) continue;
    const cluster::broker_endpoint* ep = b.endpoint(listener);
    if (ep == nullptr && !b.listeners.empty()) ep = &b.listeners[0];
    if (ep == nullptr) return false;
    if (auto c = conn.connect_to(ep->host, ep->port); !c) {
      spdlog::debug("{}: broker {}: {}", conn.client_id(), node_id, c.error());
      return false;
    }
    return true;
  }
  return false;
}

}  // namespace tarn::broker
