// The two clusters of cluster_harness.h: Apache Kafka 4.4.0 driven through scripts/kafka-ref's
// cluster-start and node commands, tarn as etcd plus one `tarn serve` child per node; and the
// topic helpers over tarn's topic_admin (CreateTopics, Metadata) that both share.
#include "cluster_harness.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "client/topic_admin.h"
#include "etcd_process.h"
#include "kafka_test_names.h"
#include "test_util.h"

namespace tarn::test {

std::string cluster_harness::bootstrap_servers() const {
  std::string out;
  for (int i = 0; i < node_count(); ++i) {
    if (!out.empty()) out += ",";
    out += "127.0.0.1:" + std::to_string(port(i));
  }
  return out;
}

node_state cluster_harness::state(int node) const {
  std::lock_guard lock(mutex_);
  return static_cast<size_t>(node) < states_.size() ? states_[static_cast<size_t>(node)]
                                                    : node_state::down;
}

std::vector<int> cluster_harness::live_nodes() const {
  std::lock_guard lock(mutex_);
  std::vector<int> out;
  for (size_t i = 0; i < states_.size(); ++i) {
    if (states_[i] == node_state::up) out.push_back(static_cast<int>(i));
  }
  return out;
}

void cluster_harness::set_state(int node, node_state s) {
  std::lock_guard lock(mutex_);
  if (states_.size() <= static_cast<size_t>(node)) {
    states_.resize(static_cast<size_t>(node) + 1, node_state::down);
  }
  states_[static_cast<size_t>(node)] = s;
}

namespace {

std::string tail_of(const std::string& text, size_t chars) {
  return text.size() <= chars ? text : "..." + text.substr(text.size() - chars);
}

// ---- Apache Kafka 4.4.0 (scripts/kafka-ref) ----

class kafka_cluster final : public cluster_harness {
 public:
  kafka_cluster(int nodes, std::vector<std::string> properties)
      : nodes_(nodes), properties_(std::move(properties)) {}
  ~kafka_cluster() override {
    if (started_) {
      run_command("timeout 60 " + kafka_ref() + " cluster-stop --dir " + dir().string());
    }
  }

  std::string name() const override { return "kafka"; }

  std::string start() override {
    if (auto error = kafka_test_name_error(); !error.empty()) return error;
    std::string command = "timeout 400 " + kafka_ref() + " cluster-start --timeout 300 --nodes " +
                          std::to_string(nodes_) + " --dir " + dir().string();
    for (const auto& p : properties_) command += " --property " + p;
    // Stopped at the end even when the start fails half-way (some nodes may run); should the
    // test process die without stopping the cluster, a detached shell stops it.
    started_ = true;
    run_command("(setsid sh -c 'while kill -0 " + std::to_string(::getpid()) +
                " 2>/dev/null; do sleep 1; done; " + kafka_ref() + " cluster-stop --dir " +
                dir().string() + "; rm -rf " + tmp_.path().string() +
                "' </dev/null >/dev/null 2>&1 &)");
    auto [rc, out] = run_command(command);
    if (rc != 0) return "kafka-ref cluster-start failed (" + std::to_string(rc) + "): " + out;
    for (int i = 0; i < nodes_; ++i) {
      std::ifstream in(node_dir(i) / "port");
      int p = 0;
      in >> p;
      if (p <= 0) return "no port file in " + node_dir(i).string();
      ports_.push_back(static_cast<uint16_t>(p));
      set_state(i, node_state::up);
    }
    return "";
  }

  int node_count() const override { return nodes_; }
  uint16_t port(int node) const override { return ports_.at(static_cast<size_t>(node)); }

  bool kill(int node) override { return op("kill", node, node_state::down); }
  bool stop(int node) override { return op("stop", node, node_state::down); }
  bool restart(int node) override { return op("start", node, node_state::up); }
  bool pause(int node) override { return op("pause", node, node_state::paused); }
  bool resume(int node) override { return op("resume", node, node_state::up); }

  bool can_partition() const override {
    return std::filesystem::exists(node_dir(0) / "cgroup.nft");
  }
  bool isolate(int node) override { return partition("--isolate " + std::to_string(node + 1)); }
  bool cut(int a, int b) override {
    return partition("--cut " + std::to_string(a + 1) + " " + std::to_string(b + 1));
  }
  bool heal_partitions() override { return partition("--heal"); }

  std::string diagnostics() const override {
    std::string out;
    for (int i = 0; i < nodes_; ++i) {
      out += "--- kafka node " + std::to_string(i + 1) + " (" + node_dir(i).string() +
             "/server.log) ---\n";
      out += tail_of(read_file(node_dir(i) / "server.log"), 3000) + "\n";
    }
    return out;
  }

 private:
  static std::string kafka_ref() { return std::string(TARN_SOURCE_DIR) + "/scripts/kafka-ref"; }
  std::filesystem::path dir() const { return tmp_.path() / "kafka-cluster"; }
  std::filesystem::path node_dir(int node) const {
    return dir() / ("node-" + std::to_string(node + 1));
  }
  bool op(const std::string& what, int node, node_state after) {
    auto [rc, out] = run_command("timeout 300 " + kafka_ref() + " node " + what + " --dir " +
                                 dir().string() + " --node " + std::to_string(node + 1));
    if (rc != 0) return false;
    set_state(node, after);
    return true;
  }

  bool partition(const std::string& how) {
    return run_command("timeout 60 " + kafka_ref() + " partition --dir " + dir().string() + " " +
                       how)
               .first == 0;
  }

  int nodes_;
  std::vector<std::string> properties_;
  temp_dir tmp_;
  std::vector<uint16_t> ports_;
  bool started_ = false;
};

// ---- tarn: one etcd, `tarn serve` per node with etcd.connect ----

// Short sessions, as in cluster_test.cc: a dead broker leaves the cluster within seconds.
constexpr int32_t tarn_session_timeout_ms = 2000;
constexpr int32_t tarn_heartbeat_interval_ms = 500;

class tarn_cluster final : public cluster_harness {
 public:
  tarn_cluster(int nodes, std::vector<std::string> overrides, int etcd_members)
      : overrides_(std::move(overrides)),
        etcd_members_(etcd_members),
        nodes_(static_cast<size_t>(nodes)) {}
  ~tarn_cluster() override {
    for (auto& n : nodes_) n.process.reset();  // SIGKILL, waited for: the groups empty
    if (can_partition()) {
      run_command("timeout 60 " + kafka_ref() + " cgroups --remove --dir " + dir());
    }
  }

  std::string name() const override { return "tarn"; }

  std::string start() override {
    if (!etcd_available()) return "etcd is not installed (scripts/install-deps)";
    etcd_ = std::make_unique<etcd_cluster>(etcd_members_);
    for (int m = 0; m < etcd_members_; ++m) {
      if (!etcd_->wait_ready(static_cast<size_t>(m))) {
        return "etcd member " + std::to_string(m) +
               " did not start: " + etcd_->output(static_cast<size_t>(m));
      }
    }
    // Each node in a cgroup of its own where partitions can be made (scripts/kafka-ref's
    // cgroups and partition commands, as for Kafka's nodes, which read <dir>/node-<i>/port).
    std::filesystem::create_directories(dir());
    run_command("timeout 60 " + kafka_ref() + " cgroups --dir " + dir() + " --nodes " +
                std::to_string(nodes_.size()));
    if (can_partition()) {
      run_command("(setsid sh -c 'while kill -0 " + std::to_string(::getpid()) +
                  " 2>/dev/null; do sleep 1; done; " + kafka_ref() + " cgroups --remove --dir " +
                  dir() + "' </dev/null >/dev/null 2>&1 &)");
    }
    for (size_t i = 0; i < nodes_.size(); ++i) {
      nodes_[i].dir = std::filesystem::path(dir()) / ("node-" + std::to_string(i + 1));
      std::filesystem::create_directories(nodes_[i].dir);
      if (!launch(static_cast<int>(i))) {
        return "tarn node " + std::to_string(i + 1) + " did not start: " + output(i);
      }
      set_state(static_cast<int>(i), node_state::up);
    }
    return "";
  }

  int node_count() const override { return static_cast<int>(nodes_.size()); }
  uint16_t port(int node) const override { return nodes_.at(static_cast<size_t>(node)).port; }

  bool kill(int node) override { return end(node, SIGKILL); }
  bool stop(int node) override { return end(node, SIGTERM); }
  bool restart(int node) override {
    // A node killed a moment ago still holds its registration until its lease expires: tarn
    // refuses the duplicate node.id and exits, so it is started again until the lease is gone.
    const auto deadline = clock_type::now() + std::chrono::milliseconds(tarn_session_timeout_ms) +
                          std::chrono::seconds(10);
    while (clock_type::now() < deadline) {
      if (launch(node)) {
        set_state(node, node_state::up);
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    return false;
  }
  bool pause(int node) override {
    auto& n = nodes_.at(static_cast<size_t>(node));
    // Returns once every thread is stopped: kill() returns before a loaded machine has stopped
    // them, and a follower still running would fetch what the caller sends next.
    n.process->send_signal(SIGSTOP);
    bool stopped = false;
    const std::filesystem::path tasks = "/proc/" + std::to_string(n.process->pid()) + "/task";
    for (const auto deadline = clock_type::now() + std::chrono::seconds(5);
         !stopped && clock_type::now() < deadline;) {
      stopped = true;
      std::error_code ec;
      for (const auto& t : std::filesystem::directory_iterator(tasks, ec)) {
        std::ifstream in(t.path() / "stat");
        const std::string stat((std::istreambuf_iterator<char>(in)), {});
        const auto paren = stat.rfind(')');
        if (paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] != 'T') {
          stopped = false;
        }
      }
      if (ec) stopped = false;
      if (!stopped) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    set_state(node, node_state::paused);
    return stopped;
  }
  bool resume(int node) override {
    auto& n = nodes_.at(static_cast<size_t>(node));
    n.process->send_signal(SIGCONT);
    // A node paused past its session is fenced (docs/cluster.md, "Fenced brokers"): it stays up
    // and registers again with a new broker epoch as soon as it runs again.
    set_state(node, node_state::up);
    return true;
  }

  bool can_partition() const override {
    return std::filesystem::exists(std::filesystem::path(dir()) / "node-1" / "cgroup.nft");
  }
  bool isolate(int node) override { return partition("--isolate " + std::to_string(node + 1)); }
  bool cut(int a, int b) override {
    return partition("--cut " + std::to_string(a + 1) + " " + std::to_string(b + 1));
  }
  bool heal_partitions() override { return partition("--heal"); }
  bool cut_from_metadata(int node) override {
    std::string ports;
    for (const auto& e : etcd_->endpoints()) {
      if (!ports.empty()) ports += ",";
      ports += e.substr(e.rfind(':') + 1);
    }
    return partition("--cut-ports " + std::to_string(node + 1) + " " + ports);
  }

  int metadata_member_count() const override { return etcd_members_; }
  bool kill_metadata_member(int member) override {
    etcd_->kill(static_cast<size_t>(member));
    return true;
  }
  bool restart_metadata_member(int member) override {
    etcd_->start(static_cast<size_t>(member));  // its data directory kept: it rejoins
    return etcd_->wait_ready(static_cast<size_t>(member));
  }

  std::string diagnostics() const override {
    std::string out;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      out += "--- tarn node " + std::to_string(i + 1) + " ---\n" + tail_of(output(i), 3000) + "\n";
    }
    return out;
  }

  void save_logs(const std::filesystem::path& dir) const override {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      std::ofstream(dir / ("node-" + std::to_string(i + 1) + ".log"))
          << nodes_[i].earlier_output << output(i);
    }
  }

 private:
  struct node {
    uint16_t port = 0;          // 0 until its first start picked one; kept across restarts
    std::filesystem::path dir;  // data in <dir>/data
    std::unique_ptr<child_process> process;
    std::string earlier_output;  // what its earlier starts logged
  };

  static std::string kafka_ref() { return std::string(TARN_SOURCE_DIR) + "/scripts/kafka-ref"; }
  std::string dir() const { return (tmp_.path() / "cluster").string(); }
  bool partition(const std::string& how) {
    return run_command("timeout 60 " + kafka_ref() + " partition --dir " + dir() + " " + how)
               .first == 0;
  }

  std::string output(size_t i) const {
    return nodes_[i].process ? nodes_[i].process->output() : "";
  }

  bool launch(int index) {
    node& n = nodes_.at(static_cast<size_t>(index));
    std::string connect;
    for (const auto& e : etcd_->endpoints()) {
      if (!connect.empty()) connect += ",";
      connect += e.substr(e.find("://") + 3);
    }
    std::vector<std::string> args;
    if (std::filesystem::exists(n.dir / "cgroup")) {
      // Joins its group, then becomes tarn (the same pid, so signals reach tarn). A group it
      // cannot join costs the partitions only, not the node.
      std::string group = read_file(n.dir / "cgroup");
      group = group.substr(0, group.find('\n'));
      args = {"/bin/sh", "-c", "echo $$ 2>/dev/null >\"$0/cgroup.procs\"; exec \"$@\"", group};
    }
    std::vector<std::string> serve = {
        TARN_BINARY,  "serve",
        "--override", "listeners=PLAINTEXT://127.0.0.1:" + std::to_string(n.port),
        "--override", "log.dirs=" + (n.dir / "data").string(),
        "--override", "node.id=" + std::to_string(index + 1),
        "--override", "etcd.connect=" + connect,
        "--override", "broker.session.timeout.ms=" + std::to_string(tarn_session_timeout_ms),
        "--override", "broker.heartbeat.interval.ms=" + std::to_string(tarn_heartbeat_interval_ms)};
    for (const auto& o : overrides_) {
      serve.push_back("--override");
      serve.push_back(o);
    }
    args.insert(args.end(), serve.begin(), serve.end());
    if (n.process) n.earlier_output += n.process->output();  // the log of its last start
    n.process = std::make_unique<child_process>(std::move(args));
    auto port =
        n.process->wait_for_number_after("listening on PLAINTEXT://127.0.0.1:", startup_timeout);
    if (!port) return false;
    n.port = static_cast<uint16_t>(std::stoi(*port));
    std::ofstream(n.dir / "port") << n.port << "\n";
    return true;
  }

  bool end(int index, int sig) {
    node& n = nodes_.at(static_cast<size_t>(index));
    if (!n.process) return true;
    n.process->send_signal(SIGCONT);  // a paused node would not act on SIGTERM
    n.process->send_signal(sig);
    const bool gone = n.process->wait_exit(event_timeout).has_value();
    if (gone) set_state(index, node_state::down);
    return gone;
  }

  std::vector<std::string> overrides_;
  int etcd_members_;
  temp_dir tmp_;
  std::unique_ptr<etcd_cluster> etcd_;
  std::vector<node> nodes_;
};

std::optional<std::vector<partition_view>> describe_on(uint16_t port, const std::string& topic) {
  auto admin = client::topic_admin::connect("127.0.0.1:" + std::to_string(port), 5s);
  if (!admin) return std::nullopt;
  auto described = (*admin)->describe_topics(topic);
  if (!described || described->size() != 1 || (*described)[0].error_code != 0) {
    return std::nullopt;
  }
  std::vector<partition_view> out;
  for (const auto& p : (*described)[0].partitions) {
    out.push_back({p.partition, p.leader, p.replicas, p.isr});
  }
  return out;
}

}  // namespace

std::unique_ptr<cluster_harness> make_kafka_cluster(int nodes,
                                                    std::vector<std::string> properties) {
  return std::make_unique<kafka_cluster>(nodes, std::move(properties));
}

std::unique_ptr<cluster_harness> make_tarn_cluster(int nodes, std::vector<std::string> overrides,
                                                   int etcd_members) {
  return std::make_unique<tarn_cluster>(nodes, std::move(overrides), etcd_members);
}

std::string create_topic(const cluster_harness& cluster, const std::string& topic,
                         int32_t partitions, int16_t replication_factor,
                         const std::vector<std::pair<std::string, std::string>>& configs) {
  const auto live = cluster.live_nodes();
  if (live.empty()) return "no node is up";
  auto admin =
      client::topic_admin::connect("127.0.0.1:" + std::to_string(cluster.port(live[0])), 30s);
  if (!admin) return admin.error().message;
  client::new_topic t;
  t.name = topic;
  t.partitions = partitions;
  t.replication_factor = replication_factor;
  t.configs = configs;
  auto created = (*admin)->create_topic(t);
  return created ? "" : created.error().message;
}

std::optional<std::vector<partition_view>> describe_topic(const cluster_harness& cluster,
                                                          const std::string& topic) {
  for (int node : cluster.live_nodes()) {
    if (auto d = describe_on(cluster.port(node), topic)) return d;
  }
  return std::nullopt;
}

bool wait_fully_replicated(const cluster_harness& cluster, const std::string& topic,
                           std::chrono::milliseconds timeout) {
  const auto deadline = clock_type::now() + timeout;
  auto healthy = [&] {
    const auto live = cluster.live_nodes();
    if (static_cast<int>(live.size()) != cluster.node_count()) return false;
    for (int node : live) {
      auto d = describe_on(cluster.port(node), topic);
      if (!d || d->empty()) return false;
      for (const auto& p : *d) {
        if (p.leader < 0 || p.isr.size() != p.replicas.size()) return false;
      }
    }
    return true;
  };
  while (!healthy()) {
    if (clock_type::now() >= deadline) return false;
    std::this_thread::sleep_for(200ms);
  }
  return true;
}

}  // namespace tarn::test
