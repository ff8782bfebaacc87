// http_gate: the poll thread that waits for whole requests, the workers that run httplib's request
// processing on them, and the socket stream those workers read and write through (see the header).
#include "observe/http_gate.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <optional>

namespace tarn::observe {

namespace {

using clock_type = std::chrono::steady_clock;

// httplib hands each accepted socket to its task queue; this one runs the hand-off on the
// acceptor's thread, since process_and_close_socket only gives the socket to the gate.
class inline_queue : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

// A whole answer the gate writes itself (the connection is closed after it).
std::string plain_answer(std::string_view status, std::string_view body, std::string_view extra) {
  return fmt::format(
      "HTTP/1.1 {}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n{}Connection: "
      "close\r\n\r\n{}",
      status, body.size(), extra, body);
}

int poll_ms(clock_type::time_point until, std::chrono::milliseconds at_most) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(until - clock_type::now());
  return static_cast<int>(std::clamp(left, std::chrono::milliseconds(0), at_most).count());
}

// The worker's view of a connection: first the bytes the gate read, then the socket, every wait
// bounded by the I/O timeout and the whole exchange by its deadline (so a client that reads the
// answer a byte at a time cannot keep the worker either).
class gate_stream : public httplib::Stream {
 public:
  gate_stream(int fd, std::string bytes, std::chrono::milliseconds io_timeout,
              clock_type::time_point deadline)
      : fd_(fd), bytes_(std::move(bytes)), io_timeout_(io_timeout), deadline_(deadline) {}

  bool is_readable() const override { return at_ < bytes_.size() || wait(POLLIN); }
  bool is_writable() const override { return wait(POLLOUT); }

  ssize_t read(char* ptr, size_t size) override {
    if (at_ < bytes_.size()) {
      const size_t n = std::min(size, bytes_.size() - at_);
      std::memcpy(ptr, bytes_.data() + at_, n);
      at_ += n;
      return static_cast<ssize_t>(n);
    }
    if (!wait(POLLIN)) return -1;
    ssize_t n;
    do {
      n = ::recv(fd_, ptr, size, 0);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!wait(POLLOUT)) return -1;
    ssize_t n;
    do {
      n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof(a);
    if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) describe(a, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof(a);
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) describe(a, ip, port);
  }
  socket_t socket() const override { return fd_; }

 private:
  bool wait(short events) const {
    pollfd p{fd_, events, 0};
    int n;
    do {
      n = ::poll(&p, 1, poll_ms(deadline_, io_timeout_));
    } while (n < 0 && errno == EINTR);
    return n > 0 && (p.revents & (events | POLLHUP | POLLERR)) != 0;
  }

  static void describe(const sockaddr_storage& a, std::string& ip, int& port) {
    char text[INET6_ADDRSTRLEN] = {};
    if (a.ss_family == AF_INET) {
      const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
      ::inet_ntop(AF_INET, &v4.sin_addr, text, sizeof(text));
      port = ntohs(v4.sin_port);
    } else if (a.ss_family == AF_INET6) {
      const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
      ::inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof(text));
      port = ntohs(v6.sin6_port);
    }
    ip = text;
  }

  int fd_;
  std::string bytes_;
  size_t at_ = 0;
  std::chrono::milliseconds io_timeout_;
  clock_type::time_point deadline_;
};

// The value of the Content-Length header in `head` (the request line and headers, CRLF
// separated), 0 when absent, nullopt when it is not a number or the body is chunked (then
// httplib reads the body, or refuses it, itself).
std::optional<size_t> content_length(std::string_view head) {
  std::optional<size_t> out = 0;
  size_t at = head.find("\r\n");
  while (at != std::string_view::npos && at + 2 < head.size()) {
    const size_t end = head.find("\r\n", at + 2);
    std::string_view line = head.substr(at + 2, end == std::string_view::npos ? end : end - at - 2);
    at = end;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
      value.remove_prefix(1);
    }
    if (name == "transfer-encoding") return std::nullopt;
    if (name != "content-length") continue;
    size_t n = 0;
    for (char c : value) {
      if (c == ' ' || c == '\t') break;
      if (c < '0' || c > '9' || n > (SIZE_MAX - 9) / 10) return std::nullopt;
      n = n * 10 + static_cast<size_t>(c - '0');
    }
    out = n;
  }
  return out;
}

}  // namespace

gated_server::gated_server(gate_limits limits) : limits_(limits) {
  new_task_queue = [] { return new inline_queue; };
  // httplib sets these on every accepted socket; the workers' own waits are bounded the same.
  const auto io = std::chrono::duration_cast<std::chrono::seconds>(limits_.io_timeout).count();
  set_read_timeout(std::max<time_t>(1, io), 0);
  set_write_timeout(std::max<time_t>(1, io), 0);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  poller_ = std::thread([this] { poll_loop(); });
  for (size_t i = 0; i < limits_.workers; ++i) workers_.emplace_back([this] { work(); });
}

gated_server::~gated_server() {
  close_gate();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void gated_server::set_backlog(int backlog) {
  // Linux takes a second listen() on a listening socket as a new backlog.
  if (svr_sock_ != INVALID_SOCKET && ::listen(svr_sock_, backlog) != 0) {
    spdlog::warn("http: cannot raise the listen backlog to {}: {}", backlog, std::strerror(errno));
  }
}

void gated_server::close_gate() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  const uint64_t one = 1;
  [[maybe_unused]] auto w = ::write(wake_fd_, &one, sizeof(one));
  ready_cv_.notify_all();
  if (poller_.joinable()) poller_.join();
  for (auto& t : workers_) t.join();
  for (int fd : incoming_) finish(fd);
  incoming_.clear();
  for (int fd : lingering_) finish(fd);
  lingering_.clear();
  for (auto& r : ready_) finish(r.fd);
  ready_.clear();
}

bool gated_server::process_and_close_socket(socket_t sock) {
  admit(sock);
  return true;
}

void gated_server::admit(int fd) {
  counts_.accepted.fetch_add(1, std::memory_order_relaxed);
  if (open_.load() >= limits_.max_connections) {
    counts_.refused.fetch_add(1, std::memory_order_relaxed);
    static const std::string busy = plain_answer(
        "503 Service Unavailable", "too many HTTP connections\n", "Retry-After: 1\r\n");
    answer_and_close(fd, busy);
    return;
  }
  open_.fetch_add(1);
  hand_to_poller(incoming_, fd);
}

void gated_server::hand_to_poller(std::vector<int>& list, int fd) {
  {
    std::lock_guard lock(mu_);
    if (!stopping_) {
      list.push_back(fd);
      fd = -1;
    }
  }
  if (fd >= 0) {
    finish(fd);
    return;
  }
  const uint64_t one = 1;
  [[maybe_unused]] auto w = ::write(wake_fd_, &one, sizeof(one));
}

bool gated_server::read_some(waiting& w, bool& arrived) {
  const size_t cap = limits_.max_head_bytes + limits_.max_body_bytes;
  char buf[16 * 1024];
  for (;;) {
    const size_t room = std::min(sizeof(buf), cap - w.bytes.size());
    if (room == 0) {
      arrived = true;  // a cap passed: the head's is answered by poll_loop, the body's by httplib
      return true;
    }
    const ssize_t n = ::recv(w.fd, buf, room, MSG_DONTWAIT);
    if (n == 0) return false;  // the peer closed before its request was whole
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    const size_t before = w.bytes.size();
    w.bytes.append(buf, static_cast<size_t>(n));
    if (w.head_end == 0) {
      const size_t end = w.bytes.find("\r\n\r\n", before < 3 ? 0 : before - 3);
      if (end == std::string::npos) {
        if (w.bytes.size() >= limits_.max_head_bytes) arrived = true;  // poll_loop: 400
        if (arrived) return true;
        continue;
      }
      w.head_end = end + 4;
      const auto body = content_length(std::string_view(w.bytes).substr(0, w.head_end));
      // A chunked or unreadable body, or one over the cap, is httplib's to read or refuse.
      w.need = body && *body <= limits_.max_body_bytes ? w.head_end + *body : w.head_end;
    }
    if (w.bytes.size() >= w.need) {
      arrived = true;
      return true;
    }
  }
}

void gated_server::answer_lingering(int fd, std::string_view answer,
                                    std::chrono::steady_clock::time_point now,
                                    std::vector<lingering>& lingers) {
  [[maybe_unused]] auto sent =
      ::send(fd, answer.data(), answer.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  ::shutdown(fd, SHUT_WR);
  lingers.push_back({fd, now + limits_.linger_timeout});
}

void gated_server::poll_loop() {
  std::vector<waiting> waits;
  std::vector<lingering> lingers;
  std::vector<pollfd> fds;
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) break;
      for (int fd : incoming_) {
        waits.push_back({fd, clock_type::now() + limits_.request_timeout, {}, 0, 0});
      }
      incoming_.clear();
      for (int fd : lingering_) lingers.push_back({fd, clock_type::now() + limits_.linger_timeout});
      lingering_.clear();
    }
    fds.assign(1, pollfd{wake_fd_, POLLIN, 0});
    auto next = clock_type::now() + std::chrono::seconds(1);
    for (const auto& w : waits) {
      fds.push_back({w.fd, POLLIN, 0});
      next = std::min(next, w.deadline);
    }
    for (const auto& l : lingers) {
      fds.push_back({l.fd, POLLIN, 0});
      next = std::min(next, l.deadline);
    }
    if (::poll(fds.data(), fds.size(), poll_ms(next, std::chrono::milliseconds(1000)) + 1) < 0 &&
        errno != EINTR) {
      spdlog::error("http: poll failed: {}", std::strerror(errno));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (fds[0].revents != 0) {
      uint64_t v = 0;
      [[maybe_unused]] auto r = ::read(wake_fd_, &v, sizeof(v));
    }
    const auto now = clock_type::now();
    const size_t waits_polled = waits.size();
    std::vector<lingering> answered;  // answered by this thread in this round
    std::vector<waiting> still;
    still.reserve(waits.size());
    for (size_t i = 0; i < waits.size(); ++i) {
      waiting& w = waits[i];
      bool arrived = false;
      if (fds[i + 1].revents != 0 && !read_some(w, arrived)) {
        finish(w.fd);
        continue;
      }
      if (arrived && w.head_end == 0) {
        // The request line and headers passed their cap: answered here, as httplib would (400),
        // since httplib reads a header line a byte at a time to its end (a 1 MiB line took ~4 s
        // of a worker, far longer under sanitizers).
        static const std::string too_large =
            plain_answer("400 Bad Request", "the request line and headers are too large\n", "");
        answer_lingering(w.fd, too_large, now, answered);
        continue;
      }
      if (arrived) {
        {
          std::lock_guard lock(mu_);
          ready_.push_back(std::move(w));
        }
        ready_cv_.notify_one();
        continue;
      }
      if (now >= w.deadline) {
        counts_.timed_out.fetch_add(1, std::memory_order_relaxed);
        static const std::string late =
            plain_answer("408 Request Timeout", "the request did not arrive in time\n", "");
        answer_lingering(w.fd, late, now, answered);
        continue;
      }
      still.push_back(std::move(w));
    }
    waits.swap(still);
    // Lingering connections: drop what arrived; closed at the client's end of input, an error,
    // or the deadline.
    std::vector<lingering> kept;
    kept.reserve(lingers.size());
    for (size_t i = 0; i < lingers.size(); ++i) {
      const lingering& l = lingers[i];
      bool over = now >= l.deadline;
      if (!over && fds[1 + waits_polled + i].revents != 0) {
        char buf[16 * 1024];
        for (int reads = 0; reads < 64; ++reads) {
          const ssize_t n = ::recv(l.fd, buf, sizeof(buf), MSG_DONTWAIT);
          if (n > 0) continue;
          over = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
          break;
        }
      }
      if (over) {
        finish(l.fd);
      } else {
        kept.push_back(l);
      }
    }
    lingers.swap(kept);
    lingers.insert(lingers.end(), answered.begin(), answered.end());
  }
  for (auto& w : waits) finish(w.fd);
  for (auto& l : lingers) finish(l.fd);
}

void gated_server::work() {
  for (;;) {
    waiting w;
    {
      std::unique_lock lock(mu_);
      ready_cv_.wait(lock, [&] { return stopping_ || !ready_.empty(); });
      if (ready_.empty()) return;
      w = std::move(ready_.front());
      ready_.pop_front();
    }
    serve(std::move(w));
  }
}

void gated_server::serve(waiting w) {
  {
    gate_stream strm(w.fd, std::move(w.bytes), limits_.io_timeout,
                     clock_type::now() + limits_.answer_timeout);
    bool closed = false;
    process_request(strm, /*close_connection=*/true, closed, nullptr);
  }
  linger(w.fd);
}

void gated_server::linger(int fd) {
  ::shutdown(fd, SHUT_WR);
  hand_to_poller(lingering_, fd);
}

void gated_server::finish(int fd) {
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
  open_.fetch_sub(1);
}

void gated_server::answer_and_close(int fd, std::string_view answer) {
  [[maybe_unused]] auto sent =
      ::send(fd, answer.data(), answer.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  ::shutdown(fd, SHUT_WR);
  // Read what the client already sent, so that closing does not answer it with a reset that
  // could take the answer with it.
  char buf[4096];
  for (int i = 0; i < 32 && ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0; ++i) {
  }
  ::close(fd);
}

}  // namespace tarn::observe
