// The HTTP gate's answers to clients that send more than it reads: a header far past the cap (400)
// and a body past the cap (413) must reach the client whole, however much it was still sending.
// Closing such a connection at once would answer the unread bytes with a reset that can destroy
// the answer in the client's receive queue; the gate closes it lingering (http_gate.h).
#include "observe/http_gate.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

namespace tarn::observe {
namespace {

using namespace std::chrono_literals;

// Sends `request` whole (blocking: the gate stops reading long before the end, so this waits on
// the lingering close's reads) from one thread while this one reads the answer, as a browser or
// curl does; the answer's status line, or "" without one.
std::string status_of_exchange(uint16_t port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return "";
  }
  std::thread sender([&] {
    size_t sent = 0;
    while (sent < request.size()) {
      const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
  });
  std::string out;
  char buf[65536];
  pollfd p{fd, POLLIN, 0};
  while (::poll(&p, 1, 10000) > 0) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::shutdown(fd, SHUT_RDWR);  // ends a send still blocked
  sender.join();
  ::close(fd);
  return out.substr(0, out.find("\r\n"));
}

TEST(http_gate, answers_past_the_caps_reach_a_client_still_sending) {
  gated_server server(gate_limits{});
  server.set_payload_max_length(64 * 1024);  // as http_server.cc: the gate's body cap
  server.Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  server.Post("/v1/topics", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{}", "application/json");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread listener([&] { server.listen_after_bind(); });
  while (!server.is_running()) std::this_thread::sleep_for(1ms);

  const std::string big_header =
      "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(4 << 20, 'a') + "\r\n\r\n";
  const std::string big_body =
      "POST /v1/topics HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(4 << 20) +
      "\r\n\r\n" + std::string(4 << 20, '{');
  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(status_of_exchange(static_cast<uint16_t>(port), big_header),
              "HTTP/1.1 400 Bad Request");
    EXPECT_EQ(status_of_exchange(static_cast<uint16_t>(port), big_body),
              "HTTP/1.1 413 Payload Too Large");
  }
  // And an ordinary request is still served after them.
  EXPECT_EQ(
      status_of_exchange(static_cast<uint16_t>(port), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
      "HTTP/1.1 200 OK");

  server.stop();
  listener.join();
  server.close_gate();
}

}  // namespace
}  // namespace tarn::observe
