// For the web console's tests (console_*_test.cc): a real `tarn serve` with its HTTP listener on
// a free port, and JSON over HTTP with cpp-httplib's client.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace tarn::test {

using json = nlohmann::json;

class console_broker {
 public:
  explicit console_broker(std::vector<std::string> extra_args = {})
      : broker_([&] {
          std::vector<std::string> args = {"--override", "http.listener=127.0.0.1:0"};
          args.insert(args.end(), extra_args.begin(), extra_args.end());
          return args;
        }()) {
    if (broker_.port() == 0) return;
    if (auto p = broker_.process().wait_for_number_after("http listening on 127.0.0.1:",
                                                         startup_timeout)) {
      http_port_ = static_cast<uint16_t>(std::stoi(*p));
    }
    // HTTP opens before the broker has started; topics and groups answer 503 until it is ready,
    // which is a moment after its Kafka listener is logged.
    const auto deadline = std::chrono::steady_clock::now() + startup_timeout;
    while (http_port_ != 0 && get("/readyz").status != 200 &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  broker_process& broker() { return broker_; }
  uint16_t http_port() const { return http_port_; }
  std::string bootstrap() const { return "127.0.0.1:" + std::to_string(broker_.port()); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(http_port_); }

  httplib::Client client() const {
    httplib::Client c("127.0.0.1", http_port_);
    c.set_connection_timeout(5, 0);
    c.set_read_timeout(10, 0);
    return c;
  }

  struct answer {
    int status = 0;  // 0: no answer
    json body;       // discarded when not JSON
    std::string text;
  };
  answer request(const std::string& method, const std::string& path,
                 const std::optional<json>& body = std::nullopt) const {
    auto c = client();
    const std::string payload = body ? body->dump() : "";
    httplib::Result r = [&] {
      if (method == "POST") return c.Post(path, payload, "application/json");
      if (method == "PATCH") return c.Patch(path, payload, "application/json");
      if (method == "DELETE") return c.Delete(path);
      return c.Get(path);
    }();
    answer out;
    if (!r) return out;
    out.status = r->status;
    out.text = r->body;
    out.body = json::parse(r->body, nullptr, false);
    return out;
  }
  answer get(const std::string& path) const { return request("GET", path); }

 private:
  broker_process broker_;
  uint16_t http_port_ = 0;
};

// Polls `check` every 100 ms until it is true or `timeout` passed.
template <class F>
bool eventually(F check, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (check()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return check();
}

}  // namespace tarn::test
