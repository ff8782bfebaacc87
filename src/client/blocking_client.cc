// Blocking Kafka request client (see blocking_client.h): POSIX sockets with a poll() deadline per
// read and write, so a silent broker ends in an error rather than a hang; OpenSSL's SSL_* on the
// same fd for TLS, and the SASL exchange through the generated SaslHandshake/SaslAuthenticate.
#include "client/blocking_client.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "client/wire.h"
#include "protocol/error_codes.h"
#include "protocol/messages/api_versions_request.h"
#include "protocol/messages/api_versions_response.h"
#include "protocol/messages/request_header.h"
#include "protocol/messages/response_header.h"
#include "protocol/messages/sasl_authenticate_request.h"
#include "protocol/messages/sasl_authenticate_response.h"
#include "protocol/messages/sasl_handshake_request.h"
#include "protocol/messages/sasl_handshake_response.h"

namespace tarn::client {

namespace {

int connect_one(const std::string& host, const std::string& port, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    error = fmt::format("cannot resolve {}: {}", host, ::gai_strerror(rc));
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      error = fmt::format("cannot connect to {}:{}: {}", host, port, std::strerror(errno));
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd >= 0) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  return fd;
}

}  // namespace

result<std::unique_ptr<blocking_client>, std::string> blocking_client::connect(
    const std::string& host, int32_t port, std::chrono::milliseconds timeout, std::string client_id,
    const security_config& security) {
  std::string error;
  int fd = connect_one(host, std::to_string(port), error);
  if (fd < 0) return fail(error);
  std::unique_ptr<blocking_client> c(
      new blocking_client(fd, host, port, timeout, std::move(client_id)));
  if (auto s = c->secure(security); !s) return fail(s.error());
  return c;
}

result<std::unique_ptr<blocking_client>, std::string> blocking_client::connect(
    const std::string& bootstrap, std::chrono::milliseconds timeout, std::string client_id,
    const security_config& security) {
  std::string error = "empty bootstrap server list";
  std::stringstream list(bootstrap);
  std::string server;
  while (std::getline(list, server, ',')) {
    size_t colon = server.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == server.size()) {
      error = fmt::format("bootstrap server {} is not host:port", server);
      continue;
    }
    std::string host = server.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    const std::string port = server.substr(colon + 1);
    int fd = connect_one(host, port, error);
    if (fd >= 0) {
      std::unique_ptr<blocking_client> c(
          new blocking_client(fd, host, std::atoi(port.c_str()), timeout, client_id));
      // A TLS or SASL failure is the answer (a wrong password is wrong on every broker).
      if (auto s = c->secure(security); !s) return fail(s.error());
      return c;
    }
  }
  return fail(error);
}

blocking_client::~blocking_client() { close_connection(); }

void blocking_client::close_connection() {
  if (ssl_ != nullptr) {
    SSL_free(ssl_);
    ssl_ = nullptr;
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

result<void, std::string> blocking_client::secure(const security_config& security) {
  if (auto ok = security.validate(); !ok) return fail(ok.error());
  if (security.tls()) {
    auto ctx = make_ssl_context(security);
    if (!ctx) return fail(ctx.error());
    ssl_ = SSL_new(ctx->get());  // holds its own reference to the context
    if (ssl_ == nullptr) return fail(ssl_failure(nullptr, host_, port_));
    if (auto p = prepare_ssl(ssl_, host_, security); !p) return fail(p.error());
    // Non-blocking: SSL_read may need several socket reads (or a write) per call, and each wait
    // must keep the poll deadline.
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
    SSL_set_fd(ssl_, fd_);
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    ERR_clear_error();
    while (true) {
      const int rc = SSL_connect(ssl_);
      if (rc == 1) break;
      const int e = SSL_get_error(ssl_, rc);
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if ((e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) || left.count() <= 0) {
        std::string why =
            left.count() <= 0 && (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
                ? fmt::format("SSL handshake with {}:{} timed out", host_, port_)
                : ssl_failure(ssl_, host_, port_);
        if (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_ZERO_RETURN) {
          why = fmt::format(
              "SSL handshake with {}:{} failed: the broker closed the connection "
              "(is its listener SSL?)",
              host_, port_);
        }
        close_connection();
        return fail(std::move(why));
      }
      pollfd p{fd_, static_cast<short>(e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT), 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) {
        close_connection();
        return fail(fmt::format("poll: {}", std::strerror(errno)));
      }
    }
  }
  if (security.sasl()) {
    if (auto a = authenticate(security); !a) {
      close_connection();
      return fail(a.error());
    }
  }
  return {};
}

result<void, std::string> blocking_client::authenticate(const security_config& security) {
  const std::string mechanism(sasl_mechanism_name(security.mechanism));
  std::vector<uint8_t> buffer;
  protocol::sasl_handshake_request handshake;
  handshake.mechanism = mechanism;
  auto h = call<protocol::sasl_handshake_response>(*this, handshake, 1, buffer);
  if (!h) return fail(fmt::format("SaslHandshake with {}:{}: {}", host_, port_, h.error()));
  if (h->error_code != 0) {
    std::string enabled;
    for (auto m : h->mechanisms) enabled += (enabled.empty() ? "" : ", ") + std::string(m);
    return fail(fmt::format("the broker {}:{} does not enable SASL mechanism {} (enabled: {})",
                            host_, port_, mechanism, enabled));
  }
  sasl_session session(security);
  std::string server_message;
  while (true) {
    auto next = session.next(server_message);
    if (!next) {
      return fail(fmt::format("SASL {} authentication with {}:{} failed: {}", mechanism, host_,
                              port_, next.error()));
    }
    if (!next->has_value()) return {};
    protocol::sasl_authenticate_request request;
    request.auth_bytes = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>((*next)->data()),
                                                  (*next)->size());
    auto r = call<protocol::sasl_authenticate_response>(*this, request, 1, buffer);
    if (!r) return fail(fmt::format("SaslAuthenticate with {}:{}: {}", host_, port_, r.error()));
    if (r->error_code != 0) {
      return fail(fmt::format("SASL {} authentication with {}:{} failed: {}", mechanism, host_,
                              port_, r->error_message.value_or("(no message)")));
    }
    server_message.assign(reinterpret_cast<const char*>(r->auth_bytes.data()),
                          r->auth_bytes.size());
  }
}

template <typename Op>
result<void, std::string> blocking_client::tls_io(size_t n, std::chrono::milliseconds timeout,
                                                  bool writing, Op op) {
  // Try first, then wait: OpenSSL may hold decrypted bytes the socket no longer shows.
  size_t done = 0;
  ERR_clear_error();
  while (done < n) {
    const int rc = op(done);
    if (rc > 0) {
      done += static_cast<size_t>(rc);
      continue;
    }
    const int e = SSL_get_error(ssl_, rc);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      pollfd p{fd_, static_cast<short>(e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT), 0};
      const int ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
      if (ready == 0) {
        return fail(std::string(writing ? "timed out sending the request"
                                        : "timed out waiting for the response"));
      }
      if (ready < 0 && errno != EINTR) return fail(fmt::format("poll: {}", std::strerror(errno)));
      continue;
    }
    if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)) {
      return fail(std::string("the broker closed the connection"));
    }
    // A TLS alert, e.g. the broker refusing our certificate after a TLS 1.3 handshake.
    return fail(ssl_failure(ssl_, host_, port_));
  }
  return {};
}

result<void, std::string> blocking_client::write_all(std::span<const uint8_t> bytes,
                                                     std::chrono::milliseconds timeout) {
  if (ssl_ != nullptr)
    return tls_io(bytes.size(), timeout, true, [&](size_t done) {
      return SSL_write(ssl_, bytes.data() + done, static_cast<int>(bytes.size() - done));
    });
  size_t sent = 0;
  while (sent < bytes.size()) {
    pollfd p{fd_, POLLOUT, 0};
    int ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (ready == 0) return fail(std::string("timed out sending the request"));
    if (ready < 0) {
      if (errno == EINTR) continue;
      return fail(fmt::format("poll: {}", std::strerror(errno)));
    }
    ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail(fmt::format("send: {}", std::strerror(errno)));
    sent += static_cast<size_t>(n);
  }
  return {};
}

result<void, std::string> blocking_client::read_exact(uint8_t* out, size_t n,
                                                      std::chrono::milliseconds timeout) {
  if (ssl_ != nullptr)
    return tls_io(n, timeout, false, [&](size_t done) {
      return SSL_read(ssl_, out + done, static_cast<int>(n - done));
    });
  // What is there is taken first (no poll() when the bytes have arrived). Before waiting, the
  // socket's low-water mark is set to what is still missing (up to max_rcvlowat), so the kernel
  // wakes this thread once the rest of a large response is in rather than at every segment: a
  // megabyte Fetch answer took ~10 wake-ups, poll()s and recv()s, now one or two.
  constexpr size_t max_rcvlowat = 4 << 20;
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::recv(fd_, out + got, n - got, MSG_DONTWAIT);
    if (r > 0) {
      got += static_cast<size_t>(r);
      continue;
    }
    if (r == 0) return fail(std::string("the broker closed the connection"));
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return fail(fmt::format("recv: {}", std::strerror(errno)));
    }
    const int lowat = static_cast<int>(std::min(n - got, max_rcvlowat));
    if (lowat != rcvlowat_ &&
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof(lowat)) == 0) {
      rcvlowat_ = lowat;
    }
    pollfd p{fd_, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (ready == 0) return fail(std::string("timed out waiting for the response"));
    if (ready < 0 && errno != EINTR) return fail(fmt::format("poll: {}", std::strerror(errno)));
  }
  return {};
}

template <typename Buffer>
result<std::span<const uint8_t>, std::string> blocking_client::round_trip(
    int16_t api_key, int16_t api_version, std::span<const uint8_t> body, Buffer& buffer,
    std::chrono::milliseconds timeout) {
  if (fd_ < 0) return fail(std::string("the connection is closed after an earlier error"));
  if (timeout.count() <= 0) timeout = timeout_;
  protocol::request_header header;
  header.request_api_key = api_key;
  header.request_api_version = api_version;
  header.correlation_id = next_correlation_id_++;
  header.client_id = client_id_;
  const int16_t header_version = protocol::request_header_version(api_key, api_version);
  std::vector<uint8_t> frame(4);
  protocol::writer w(frame);
  header.encode(w, header_version);
  frame.insert(frame.end(), body.begin(), body.end());
  const uint32_t size = static_cast<uint32_t>(frame.size() - 4);
  for (size_t i = 0; i < 4; ++i) frame[i] = static_cast<uint8_t>(size >> (24 - 8 * i));
  // Any failure past this point leaves the stream at an unknown position: the connection is closed
  // so that a later request cannot read this one's late response.
  auto broken = [this](std::string why) {
    close_connection();
    return fail(std::move(why));
  };
  if (auto s = write_all(frame, timeout); !s) return broken(s.error());

  uint8_t size_bytes[4];
  if (auto r = read_exact(size_bytes, 4, timeout); !r) return broken(r.error());
  const int32_t response_size =
      static_cast<int32_t>((uint32_t{size_bytes[0]} << 24) | (uint32_t{size_bytes[1]} << 16) |
                           (uint32_t{size_bytes[2]} << 8) | uint32_t{size_bytes[3]});
  if (response_size < 4 || response_size > max_response_bytes) {
    return broken(fmt::format("bad response size {}", response_size));
  }
  buffer.resize(static_cast<size_t>(response_size));
  if (auto r = read_exact(buffer.data(), buffer.size(), timeout); !r) return broken(r.error());
  protocol::reader r(buffer);
  auto response_header =
      protocol::response_header::decode(r, protocol::response_header_version(api_key, api_version));
  if (!response_header) return broken("cannot decode the response header");
  if (response_header->correlation_id != header.correlation_id) {
    return broken(fmt::format("response correlation id {} does not match request {}",
                              response_header->correlation_id, header.correlation_id));
  }
  return std::span<const uint8_t>(buffer).subspan(buffer.size() - r.remaining());
}

template result<std::span<const uint8_t>, std::string> blocking_client::round_trip(
    int16_t, int16_t, std::span<const uint8_t>, std::vector<uint8_t>&, std::chrono::milliseconds);
template result<std::span<const uint8_t>, std::string> blocking_client::round_trip(
    int16_t, int16_t, std::span<const uint8_t>, fetch_bytes&, std::chrono::milliseconds);

result<void, std::string> blocking_client::negotiate_versions() {
  protocol::api_versions_request req;
  req.client_software_name = "tarn";
  req.client_software_version = "0.1.0";
  std::vector<uint8_t> buffer;
  for (int16_t version : {int16_t{3}, int16_t{0}}) {
    auto resp = call<protocol::api_versions_response>(*this, req, version, buffer);
    if (!resp) return fail(resp.error());
    if (resp->error_code == static_cast<int16_t>(protocol::error_code::unsupported_version)) {
      continue;
    }
    if (resp->error_code != 0) {
      return fail("ApiVersions failed with error " + std::to_string(resp->error_code));
    }
    versions_.clear();
    for (const auto& k : resp->api_keys) versions_[k.api_key] = {k.min_version, k.max_version};
    return {};
  }
  return fail(std::string("the broker refused ApiVersions v0"));
}

int16_t blocking_client::version_for(int16_t api_key, int16_t our_min, int16_t our_max) const {
  auto it = versions_.find(api_key);
  if (it == versions_.end()) return -1;
  const int16_t hi = std::min(it->second.second, our_max);
  const int16_t lo = std::max(it->second.first, our_min);
  return hi >= lo ? hi : -1;
}

}  // namespace tarn::client
