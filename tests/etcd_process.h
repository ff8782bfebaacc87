// A real etcd (Debian's etcd-server 3.4) for the tests that need one: one member or a cluster of
// three, on free loopback ports, data in a temp directory; stop, SIGKILL and restart on the same
// ports and data; pause and resume (SIGSTOP, SIGCONT). Tests skip when /usr/bin/etcd is missing
// (scripts/install-deps installs it).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "test_util.h"

namespace tarn::test {

inline bool etcd_available() { return std::filesystem::exists("/usr/bin/etcd"); }

class etcd_cluster {
 public:
  // Waits until every member serves. A port another process took between free_ports() and etcd's
  // bind is the one start failure a test cannot prevent: then every member gets new ports.
  explicit etcd_cluster(int members = 1) {
    for (int attempt = 0; attempt < 4; ++attempt) {
      members_.clear();
      const auto ports = free_ports(2 * static_cast<size_t>(members));
      for (int i = 0; i < members; ++i) {
        members_.push_back({"m" + std::to_string(i), ports[2 * static_cast<size_t>(i)],
                            ports[2 * static_cast<size_t>(i) + 1], nullptr});
      }
      for (size_t i = 0; i < members_.size(); ++i) start(i);
      bool port_taken = false;
      for (size_t i = 0; i < members_.size(); ++i) {
        if (!wait_ready(i) && output(i).find("address already in use") != std::string::npos) {
          port_taken = true;
        }
      }
      if (!port_taken) return;
      for (auto& m : members_) {
        m.process->send_signal(SIGKILL);
        m.process->wait_exit(event_timeout);
      }
      std::filesystem::remove_all(dir_.path());
      std::filesystem::create_directories(dir_.path());
    }
  }
  ~etcd_cluster() {
    for (auto& m : members_) {
      if (m.process) m.process->send_signal(SIGKILL);
    }
  }

  // "http://127.0.0.1:port" of every member, for client_options::endpoints.
  std::vector<std::string> endpoints() const {
    std::vector<std::string> out;
    for (const auto& m : members_) out.push_back(endpoint(m));
    return out;
  }
  std::string output(size_t i) const {
    return members_[i].process ? members_[i].process->output() : "";
  }

  // Waits for member i's "serving client traffic" (a restarted member prints it again).
  bool wait_ready(size_t i) const {
    return members_[i].process &&
           members_[i].process->wait_for_output("serving client traffic", startup_timeout);
  }

  // SIGSTOP, SIGCONT: member i stops answering (its clients' requests wait) and goes on where it
  // was. Keep a pause well below the clients' session timeouts and request timeouts.
  void pause(size_t i) const { members_[i].process->send_signal(SIGSTOP); }
  void resume(size_t i) const { members_[i].process->send_signal(SIGCONT); }

  void kill(size_t i) {
    members_[i].process->send_signal(SIGKILL);
    members_[i].process->wait_exit(event_timeout);
    members_[i].process.reset();
  }
  void start(size_t i) {
    auto& m = members_[i];
    std::string initial_cluster;
    for (const auto& peer : members_) {
      if (!initial_cluster.empty()) initial_cluster += ",";
      initial_cluster += peer.name + "=http://127.0.0.1:" + std::to_string(peer.peer_port);
    }
    const std::string client = endpoint(m);
    const std::string peer = "http://127.0.0.1:" + std::to_string(m.peer_port);
    m.process = std::make_unique<child_process>(std::vector<std::string>{
        "/usr/bin/etcd", "--name", m.name, "--data-dir", (dir_.path() / m.name).string(),
        "--listen-client-urls", client, "--advertise-client-urls", client, "--listen-peer-urls",
        peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", initial_cluster,
        "--initial-cluster-state", "new", "--initial-cluster-token", "tarn-test",
        // Short election ticks: a member's loss is noticed in well under a second.
        "--heartbeat-interval", "50", "--election-timeout", "500", "--log-level", "info",
        "--logger", "zap"});
  }

 private:
  struct member {
    std::string name;
    uint16_t client_port;
    uint16_t peer_port;
    std::unique_ptr<child_process> process;
  };
  static std::string endpoint(const member& m) {
    return "http://127.0.0.1:" + std::to_string(m.client_port);
  }

  temp_dir dir_;
  std::vector<member> members_;
};

}  // namespace tarn::test
