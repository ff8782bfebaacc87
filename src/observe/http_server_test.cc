// http_server in front of a broker::server in this process: started before the broker (as `tarn
// serve` starts it, so that it answers while the logs are recovered), /readyz is 503 until the
// broker runs, topic and group routes are 503 without asking the console's backend (which does
// not exist yet), and /readyz is 503 again once a clean shutdown has begun. The window during a
// shutdown that waits for a client is tests/http_metrics_test.cc's.
#include "observe/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace tarn::observe {
namespace {

using namespace std::chrono_literals;

// One HTTP/1.0 GET over a fresh connection: the whole answer, or "" without one.
std::string get(uint16_t port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string request = "GET " + path + " HTTP/1.0\r\nHost: x\r\n\r\n";
    ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    char buf[65536];
    pollfd p{fd, POLLIN, 0};
    while (::poll(&p, 1, 10000) > 0) {
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  return out;
}

std::string status_line(const std::string& answer) { return answer.substr(0, answer.find("\r\n")); }

template <class F>
bool eventually(F check, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (check()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return check();
}

TEST(http_server, readyz_is_503_before_the_broker_starts_and_from_its_shutdown) {
  std::string pattern = "/tmp/tarn-http-server-test-XXXXXX";
  const std::filesystem::path dir = ::mkdtemp(pattern.data());
  auto config = broker::make_broker_config(
      {}, {{"listeners", "PLAINTEXT://127.0.0.1:0"},
           {"log.dirs", (dir / "data").string()},
           {"http.listener", "127.0.0.1:0"}});
  ASSERT_TRUE(config) << config.error();
  const broker::broker_config http_config = *config;
  broker::server server(std::move(*config));
  bool console_asked = false;
  http_server http(server, http_config, [&]() -> broker::console_backend& {
    console_asked = true;
    return server.console();
  });
  auto port = http.start();
  ASSERT_TRUE(port) << port.error();

  // Nothing of the broker exists yet: health and status answer, the broker's state does not.
  EXPECT_EQ(status_line(get(*port, "/readyz")), "HTTP/1.1 503 Service Unavailable");
  EXPECT_EQ(status_line(get(*port, "/livez")), "HTTP/1.1 200 OK");
  const std::string metrics = get(*port, "/metrics");
  EXPECT_NE(metrics.find("\ntarn_broker_ready 0\n"), std::string::npos) << metrics;
  EXPECT_NE(get(*port, "/v1/status").find("\"ready\":false"), std::string::npos);
  const std::string topics = get(*port, "/v1/topics");
  EXPECT_EQ(status_line(topics), "HTTP/1.1 503 Service Unavailable");
  EXPECT_NE(topics.find("the broker is not ready"), std::string::npos) << topics;
  EXPECT_EQ(status_line(get(*port, "/v1/groups")), "HTTP/1.1 503 Service Unavailable");
  EXPECT_FALSE(console_asked);

  ASSERT_TRUE(server.start());
  int code = -1;
  std::thread run([&] { code = server.run(); });
  EXPECT_TRUE(eventually(
      [&] { return status_line(get(*port, "/readyz")) == "HTTP/1.1 200 OK"; }, 10s));
  EXPECT_EQ(status_line(get(*port, "/v1/topics")), "HTTP/1.1 200 OK");
  EXPECT_TRUE(console_asked);

  server.request_shutdown();
  run.join();
  EXPECT_EQ(code, 0);
  // The listener outlives run() (serve.cc stops it after): still not ready.
  EXPECT_EQ(status_line(get(*port, "/readyz")), "HTTP/1.1 503 Service Unavailable");
  EXPECT_EQ(status_line(get(*port, "/v1/topics")), "HTTP/1.1 503 Service Unavailable");
  http.stop();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tarn::observe
