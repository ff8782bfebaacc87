// Helpers for integration tests: a temporary directory, the tarn binary run as a child process
// with its output captured, a broker started on a free port with a temp data directory, and a
// raw-socket Kafka client for hand-built requests. Header-only; every test executable includes it.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

// Whether the brokers the tests start run under AddressSanitizer: in that tree the tests' own
// code compiles without it (tests/CMakeLists.txt), so __SANITIZE_ADDRESS__ is not defined here.
#if defined(__SANITIZE_ADDRESS__) || defined(TARN_ASAN_TREE)
#define TARN_BROKER_ASAN 1
#endif

extern char** environ;

namespace tarn::test {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// How long a broker may take to print "listening on": it starts in well under a second, but
// CI runs the suite under ASan and TSan on a loaded 2-core machine, where a start can stall for
// many seconds. The wait returns as soon as the line is there, so a generous bound costs nothing.
constexpr std::chrono::milliseconds startup_timeout = 60s;
// How long a test waits for something that must happen (a connection closed, a log line, an
// answer the test is sure of). Such a wait returns when the event comes, so only a failing test
// pays for the bound; 5 s was too little for ASan or TSan on a loaded 2-core CI machine.
constexpr std::chrono::milliseconds event_timeout = 30s;

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class temp_dir {
 public:
  temp_dir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base ? base : "/tmp") + "/tarn-test-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = buf.data();
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // Writes a file inside the directory and returns its path.
  std::filesystem::path write_file(const std::string& name, std::string_view content) const {
    auto p = path_ / name;
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }

 private:
  std::filesystem::path path_;
};

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct exit_status {
  bool exited = false;  // normal exit (code valid) rather than killed by a signal
  int code = -1;
  int signal = 0;
};

// The tarn binary (or any program) as a child process; stdout and stderr go to one pipe that a
// thread drains into output(), so the child never blocks on a full pipe.
class child_process {
 public:
  explicit child_process(std::vector<std::string> argv) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    start_ = clock_type::now();
    int rc = ::posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    if (rc != 0) {
      ::close(fds[0]);
      throw std::runtime_error("posix_spawn " + argv[0] + " failed");
    }
    reader_ = std::thread([this, fd = fds[0]] {
      char buf[4096];
      while (true) {
        ssize_t n = ::read(fd, buf, sizeof(buf));
        if (n <= 0) break;
        std::lock_guard lock(mu_);
        output_.append(buf, static_cast<size_t>(n));
        cv_.notify_all();
      }
      ::close(fd);
      std::lock_guard lock(mu_);
      output_closed_ = true;
      cv_.notify_all();
    });
  }

  ~child_process() {
    if (!status_) {
      ::kill(pid_, SIGKILL);
      wait_exit(10s);
    }
    if (reader_.joinable()) reader_.join();
  }
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  pid_t pid() const { return pid_; }
  clock_type::time_point start_time() const { return start_; }

  std::string output() const {
    std::lock_guard lock(mu_);
    return output_;
  }

  // Waits until the output contains needle; false on timeout or if the output ended first.
  bool wait_for_output(std::string_view needle, std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] {
      return output_.find(needle) != std::string::npos || output_closed_;
    }) && output_.find(needle) != std::string::npos;
  }

  // Waits for prefix followed by at least one digit and returns those digits (e.g. a port
  // after "listening on PLAINTEXT://127.0.0.1:"). No std::regex: GCC 12 warns in it under ASan.
  std::optional<std::string> wait_for_number_after(std::string_view prefix,
                                                   std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mu_);
    std::optional<std::string> found;
    auto check = [&] {
      size_t at = output_.find(prefix);
      if (at == std::string::npos) return false;
      size_t begin = at + prefix.size();
      size_t end = begin;
      while (end < output_.size() && output_[end] >= '0' && output_[end] <= '9') ++end;
      // The number is complete once a non-digit follows it.
      if (end == begin || end == output_.size()) return false;
      found = output_.substr(begin, end - begin);
      return true;
    };
    cv_.wait_for(lock, timeout, [&] { return check() || output_closed_; });
    return found;
  }

  void send_signal(int sig) const { ::kill(pid_, sig); }

  // Reaps the child; nullopt if it is still running after timeout.
  std::optional<exit_status> wait_exit(std::chrono::milliseconds timeout) {
    if (status_) return status_;
    auto deadline = clock_type::now() + timeout;
    while (true) {
      int st = 0;
      pid_t r = ::waitpid(pid_, &st, WNOHANG);
      if (r == pid_) {
        exit_status s;
        s.exited = WIFEXITED(st);
        s.code = s.exited ? WEXITSTATUS(st) : -1;
        s.signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
        status_ = s;
        // The child is gone; give the reader thread a moment to drain what it wrote last.
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, 2s, [&] { return output_closed_; });
        return status_;
      }
      if (clock_type::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(5ms);
    }
  }

  // Resident set size of the child in KiB (from /proc), or -1.
  long rss_kib() const { return status_kib("VmRSS:"); }
  // Peak resident set size (VmHWM) of the child in KiB, or -1.
  long peak_rss_kib() const { return status_kib("VmHWM:"); }

 private:
  long status_kib(std::string_view field) const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.starts_with(field)) return std::strtol(line.c_str() + field.size(), nullptr, 10);
    }
    return -1;
  }

  pid_t pid_ = -1;
  clock_type::time_point start_;
  std::thread reader_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::string output_;
  bool output_closed_ = false;
  std::optional<exit_status> status_;
};

// How far the broker's memory may grow beyond its RSS measured right after start (issue 9: it
// stays within a fixed multiple of the bytes it received): a fixed headroom for its own buffers
// and thread arenas plus 4 bytes per byte received. A decoder trusting a count, or a decompressor
// trusting its input, goes far beyond it (hundreds of MiB to GiB).
// The broker is built with the same flags as the test, so a sanitizer build allows for the
// sanitizer's own growth: ASan keeps freed blocks in a quarantine of up to 256 MiB (its default
// quarantine_size_mb; RSS then follows what was allocated in total, not what is live) and pads
// every block with redzones (twice the per-byte multiple), and beyond the quarantine its
// allocator keeps per-thread quarantines (1 MiB each) and per-size-class caches: 64 MiB more
// (http_metrics' 10,000 scrapes at ctest -j4 reached 315 MiB of growth against 312 without it,
// 110 MiB alone); TSan maps ~5 bytes of shadow for every byte the broker touches (five times
// everything).
inline long memory_growth_bound_kib(size_t bytes_received, long headroom_kib = 48 * 1024) {
  const long received_kib = static_cast<long>(bytes_received / 1024) + 1;
#if defined(TARN_BROKER_ASAN)
  return headroom_kib + (256 + 64) * 1024 + 2 * 4 * received_kib;
#elif defined(__SANITIZE_THREAD__)
  return 5 * (headroom_kib + 4 * received_kib);
#else
  return headroom_kib + 4 * received_kib;
#endif
}

#ifdef TARN_BINARY
// `tarn <args...>`.
inline std::unique_ptr<child_process> run_tarn(std::vector<std::string> args) {
  args.insert(args.begin(), TARN_BINARY);
  return std::make_unique<child_process>(std::move(args));
}

// `tarn serve` on 127.0.0.1 with a free port (listeners=PLAINTEXT://127.0.0.1:0; the port is
// read from the "listening on" log line) and log.dirs in a temp directory (or the one given).
class broker_process {
 public:
  explicit broker_process(std::vector<std::string> extra_args = {},
                          std::optional<std::filesystem::path> data_dir = std::nullopt) {
    data_dir_ = data_dir ? *data_dir : tmp_.path() / "data";
    std::vector<std::string> args = {"serve", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                                     "--override", "log.dirs=" + data_dir_.string()};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    process_ = run_tarn(std::move(args));
    if (auto port = process_->wait_for_number_after("listening on PLAINTEXT://127.0.0.1:",
                                                    startup_timeout)) {
      port_ = static_cast<uint16_t>(std::stoi(*port));
    }
  }

  // 0 when the broker did not start (see output()).
  uint16_t port() const { return port_; }
  const std::filesystem::path& data_dir() const { return data_dir_; }
  child_process& process() { return *process_; }
  std::string output() const { return process_->output(); }

  // SIGTERM, then waits for the exit.
  std::optional<exit_status> stop(std::chrono::milliseconds timeout = 15s) {
    process_->send_signal(SIGTERM);
    return process_->wait_exit(timeout);
  }

 private:
  temp_dir tmp_;
  std::filesystem::path data_dir_;
  std::unique_ptr<child_process> process_;
  uint16_t port_ = 0;
};
#endif

// Big-endian encoding helpers for hand-built requests.
inline void put_int16(std::vector<uint8_t>& out, int16_t v) {
  out.push_back(static_cast<uint8_t>(static_cast<uint16_t>(v) >> 8));
  out.push_back(static_cast<uint8_t>(v));
}
inline void put_int32(std::vector<uint8_t>& out, int32_t v) {
  for (int s = 24; s >= 0; s -= 8)
    out.push_back(static_cast<uint8_t>(static_cast<uint32_t>(v) >> s));
}
inline int16_t get_int16(std::span<const uint8_t> in, size_t pos) {
  return static_cast<int16_t>((in[pos] << 8) | in[pos + 1]);
}
inline int32_t get_int32(std::span<const uint8_t> in, size_t pos) {
  return static_cast<int32_t>((uint32_t{in[pos]} << 24) | (uint32_t{in[pos + 1]} << 16) |
                              (uint32_t{in[pos + 2]} << 8) | uint32_t{in[pos + 3]});
}

// A whole request frame: size, header v1 (or v2 with an empty tagged-field section), body.
inline std::vector<uint8_t> request_frame(int16_t api_key, int16_t api_version,
                                          int32_t correlation_id,
                                          std::span<const uint8_t> body = {},
                                          bool flexible_header = false,
                                          std::optional<std::string> client_id = "tarn-test") {
  std::vector<uint8_t> out(4);
  put_int16(out, api_key);
  put_int16(out, api_version);
  put_int32(out, correlation_id);
  if (client_id) {
    put_int16(out, static_cast<int16_t>(client_id->size()));
    out.insert(out.end(), client_id->begin(), client_id->end());
  } else {
    put_int16(out, -1);
  }
  if (flexible_header) out.push_back(0);
  out.insert(out.end(), body.begin(), body.end());
  uint32_t size = static_cast<uint32_t>(out.size() - 4);
  for (int i = 0; i < 4; ++i)
    out[static_cast<size_t>(i)] = static_cast<uint8_t>(size >> (24 - 8 * i));
  return out;
}

// A blocking TCP client to 127.0.0.1 that sends raw bytes and reads length-prefixed frames.
class raw_client {
 public:
  // `source_ip` binds the local end first (e.g. 127.0.0.2, to look like another client host).
  explicit raw_client(uint16_t port, const char* source_ip = nullptr) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (source_ip != nullptr) {
      sockaddr_in local{};
      local.sin_family = AF_INET;
      ::inet_pton(AF_INET, source_ip, &local.sin_addr);
      if (::bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) {
        ::close(fd_);
        fd_ = -1;
        return;
      }
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      ::close(fd_);
      fd_ = -1;
      return;
    }
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  ~raw_client() {
    if (fd_ >= 0) ::close(fd_);
  }
  raw_client(const raw_client&) = delete;
  raw_client& operator=(const raw_client&) = delete;

  bool connected() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  // The local port of the connection (0 if not connected).
  uint16_t local_port() const {
    sockaddr_in local{};
    socklen_t len = sizeof(local);
    if (fd_ < 0 || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&local), &len) != 0) return 0;
    return ntohs(local.sin_port);
  }

  bool send_bytes(std::span<const uint8_t> bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }

  bool send_request(int16_t api_key, int16_t api_version, int32_t correlation_id,
                    std::span<const uint8_t> body = {}, bool flexible_header = false) {
    return send_bytes(request_frame(api_key, api_version, correlation_id, body, flexible_header));
  }

  // The next response frame without its size prefix (it starts with the correlation id), or
  // nullopt on timeout, end of stream or error.
  std::optional<std::vector<uint8_t>> read_frame(std::chrono::milliseconds timeout = 10s) {
    auto deadline = clock_type::now() + timeout;
    uint8_t size_bytes[4];
    if (!read_exact(size_bytes, 4, deadline)) return std::nullopt;
    int32_t size = get_int32(size_bytes, 0);
    if (size < 0 || size > (64 << 20)) return std::nullopt;
    std::vector<uint8_t> frame(static_cast<size_t>(size));
    if (!read_exact(frame.data(), frame.size(), deadline)) return std::nullopt;
    return frame;
  }

  // True once the peer has closed (end of stream or reset) within timeout; data that arrives
  // first is discarded.
  bool wait_closed(std::chrono::milliseconds timeout = 10s) {
    auto deadline = clock_type::now() + timeout;
    uint8_t buf[4096];
    while (true) {
      int ms = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now())
              .count());
      if (ms <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, ms) <= 0) continue;
      ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return true;
    }
  }

 private:
  bool read_exact(uint8_t* out, size_t n, clock_type::time_point deadline) {
    size_t got = 0;
    while (got < n) {
      int ms = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now())
              .count());
      if (ms <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, ms) <= 0) continue;
      ssize_t r = ::recv(fd_, out + got, n - got, 0);
      if (r <= 0) return false;
      got += static_cast<size_t>(r);
    }
    return true;
  }

  int fd_ = -1;
};

// Runs a shell command, returning its exit code and combined output. For real clients (kcat,
// python3) in tests; the command must bound its own run time.
inline std::pair<int, std::string> run_command(const std::string& command) {
  std::string out;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return {-1, ""};
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int st = ::pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

// A TCP port on 127.0.0.1 that the OS had free just now, for a server the test starts itself
// (Kafka): the port is released before returning, so another process could take it in between,
// but unlike a port derived from the pid it does not collide with one already in use.
inline uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  uint16_t port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

// `count` distinct free ports: each stays bound until all are chosen, so two calls in a row cannot
// answer the same port (the OS may hand a just-closed port out again, and etcd's client and peer
// listeners once got one port between them).
inline std::vector<uint16_t> free_ports(size_t count) {
  std::vector<int> fds;
  std::vector<uint16_t> ports;
  for (size_t i = 0; i < count; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    fds.push_back(fd);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      break;
    }
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int fd : fds) ::close(fd);
  if (ports.size() != count) ports.assign(count, 0);
  return ports;
}

// The lines of `out` that start with `prefix`.
inline std::vector<std::string> lines_with(const std::string& out, const std::string& prefix) {
  std::vector<std::string> found;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with(prefix)) found.push_back(line);
  }
  return found;
}

inline bool have_program(const std::string& name) {
  return run_command("command -v " + name + " >/dev/null").first == 0;
}

// One HTTP/1.0 exchange over a fresh connection: the whole answer (status line, headers, body).
inline std::string http_exchange(uint16_t port, const std::string& request) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return "";
  }
  size_t sent = 0;
  while (sent < request.size()) {
    ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  std::string out;
  char buf[65536];
  pollfd p{fd, POLLIN, 0};
  while (::poll(&p, 1, 10000) > 0) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace tarn::test
