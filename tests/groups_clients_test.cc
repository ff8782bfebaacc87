// Consumer groups through real clients: the Java KafkaConsumer 4.4.0 with the classic and the
// consumer (KIP-848) protocols (tests/java/GroupConsume.java), librdkafka through confluent-kafka
// with eager range and cooperative-sticky assignment, kafka-python (tests/python/
// group_consume.py) and kcat -G. Every test runs against Apache Kafka 4.4.0 (scripts/kafka-ref),
// which shows the assertions are right, and against `tarn serve` with the same assertions:
//   - a group reads every record once and commits; a later member of the group starts at the
//     committed offsets; the Admin client reads them back equal to the log end offsets;
//   - members join one after another and one leaves while records flow: every record is read at
//     least once, none again after a member that owned its partition committed past it, and the
//     commits end at the log end offsets;
//   - a static member (group.instance.id) restarts within session.timeout.ms and gets its
//     partitions back in the same generation, without the other member rebalancing;
//   - a member killed with SIGKILL is removed after session.timeout.ms, not before, and the other
//     member takes its partitions at its committed offsets;
//   - a classic and a group.protocol=consumer Java member share one group (KIP-848's online
//     migration: the classic group is upgraded, then downgraded when the consumer member leaves);
//   - committed offsets survive a SIGKILL of the broker.
// Clients are separate processes printing one event per line; the test waits for events with
// deadlines. Kafka starts once per process, on the first test that needs it (each test has its
// own topic and group), and stops when the tests end.
// GCC 12's -Wrestrict misfires on std::string operator+ with literals (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kafka_test_names.h"
#include "test_util.h"

namespace tarn::test {
namespace {

const char* const python = "/usr/bin/python3";  // Debian's, with confluent_kafka and kafka-python

// How long a test waits for a group event: JVM clients start in seconds on an idle machine but
// in tens of seconds on a loaded 2-core one, and a rebalance can take a heartbeat and a join.
constexpr std::chrono::milliseconds group_timeout = 90s;
// The bound a client command run to completion gets.
constexpr int command_timeout_s = 150;

// `command` under timeout(1): SIGTERM after command_timeout_s (the clients then close and print
// what they saw), SIGKILL 10 s later (kafka-python's poll() waits for a coordinator without end).
std::string bounded(const std::string& command) {
  return "timeout -k 10 " + std::to_string(command_timeout_s) + " " + command;
}
// session.timeout.ms of the members that are killed (Kafka's group.min.session.timeout.ms is
// 6000) and their heartbeat.interval.ms (both clients use 500 ms).
constexpr int short_session_ms = 6000;
constexpr int heartbeat_ms = 500;
// session.timeout.ms of the static members: room for a JVM to restart on a loaded machine.
constexpr int static_session_ms = 45000;

std::string source(const std::string& rel) { return std::string(TARN_SOURCE_DIR) + "/" + rel; }

std::string last_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text.substr(text.rfind('\n') + 1);
}

bool have_python_module(const std::string& module) {
  return run_command(std::string(python) + " -c 'import " + module + "'").first == 0;
}

// The Kafka 4.4.0 jars' directory; "" when java or the jars are missing.
const std::string& kafka_libs() {
  static const std::string libs = [] {
    if (!have_program("java") || !have_program("javac")) return std::string();
    auto [rc, out] = run_command(source("scripts/kafka-ref") + " libs");
    std::string dir = last_line(out);
    return rc == 0 && std::filesystem::exists(dir) ? dir : std::string();
  }();
  return libs;
}

// tests/java/GroupConsume.java compiled once per process (javac reads all of Kafka's jars, a few
// seconds of CPU that a single-file source launch pays again on every run): the class directory,
// or "" with javac's output in `error`.
const std::string& group_consume_classes(std::string* error = nullptr) {
  static temp_dir dir;
  static std::string javac_output;
  static const std::string classes = [] {
    auto [rc, out] = run_command("timeout 300 javac -nowarn -d " + dir.path().string() + " -cp '" +
                                 kafka_libs() + "/*' " + source("tests/java/GroupConsume.java"));
    javac_output = out;
    return rc == 0 ? dir.path().string() : std::string();
  }();
  if (error != nullptr) *error = javac_output;
  return classes;
}

// Skips a test without Java and the Kafka jars; fails it if GroupConsume.java does not compile.
#define REQUIRE_JAVA_CLIENTS()                                                            \
  do {                                                                                    \
    if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing"; \
    std::string javac_error;                                                              \
    ASSERT_NE(group_consume_classes(&javac_error), "") << javac_error;                    \
  } while (false)

// ---- Apache Kafka 4.4.0, shared by the tests of this process.

class shared_kafka {
 public:
  static shared_kafka& instance() {
    static shared_kafka k;
    return k;
  }

  // Starts the broker on the first call; the error of that start ("" once it runs) after.
  const std::string& start() {
    name_error_ = kafka_test_name_error();
    if (!name_error_.empty()) return name_error_;
    if (!running_ && error_.empty()) {
      port_ = free_port();
      error_ = launch();
      if (error_.empty()) {
        running_ = true;
        start_watchdog();
      }
    }
    return error_;
  }

  uint16_t port() const { return port_; }

  // SIGKILL, then a start on the same directory and port; "" or what went wrong.
  std::string kill_and_restart() {
    const std::string pid_text = read_file(dir() / "kafka.pid");
    const pid_t pid = static_cast<pid_t>(std::atoi(pid_text.c_str()));
    if (pid <= 0) return "no kafka.pid in " + dir().string();
    ::kill(pid, SIGKILL);
    // The JVM is not our child (kafka-ref starts it with setsid); init reaps it.
    const auto deadline = clock_type::now() + 60s;
    while (std::filesystem::exists("/proc/" + std::to_string(pid))) {
      if (clock_type::now() >= deadline) return "kafka pid " + pid_text + " still there";
      std::this_thread::sleep_for(50ms);
    }
    running_ = false;
    error_ = launch();
    running_ = error_.empty();
    return error_;
  }

  void stop() {
    if (!running_) return;
    run_command("timeout 60 " + source("scripts/kafka-ref") + " stop --dir " + dir().string());
    running_ = false;
  }

  ~shared_kafka() { stop(); }

 private:
  std::filesystem::path dir() const { return tmp_.path() / "kafka"; }

  std::string launch() {
    auto [rc, out] =
        run_command("timeout 200 " + source("scripts/kafka-ref") + " start --timeout 180 --port " +
                    std::to_string(port_) + " --dir " + dir().string() +
                    " --property group.initial.rebalance.delay.ms=0");
    return rc == 0 ? std::string() : "kafka-ref start failed (" + std::to_string(rc) + "): " + out;
  }

  // Should this process die without stopping Kafka (a ctest timeout kills it), a detached shell
  // stops the broker once the process is gone.
  void start_watchdog() {
    run_command("(setsid sh -c 'while kill -0 " + std::to_string(::getpid()) +
                " 2>/dev/null; do sleep 1; done; " + source("scripts/kafka-ref") + " stop --dir " +
                dir().string() + "; rm -rf " + tmp_.path().string() +
                "' </dev/null >/dev/null 2>&1 &)");
  }

  temp_dir tmp_;
  uint16_t port_ = 0;
  bool running_ = false;
  std::string error_;
  std::string name_error_;
};

class kafka_environment : public ::testing::Environment {
 public:
  void TearDown() override { shared_kafka::instance().stop(); }
};
[[maybe_unused]] ::testing::Environment* const kafka_env =
    ::testing::AddGlobalTestEnvironment(new kafka_environment);

// ---- Client processes and the events they print.

using words = std::vector<std::string>;

// The complete lines of `text`, each split at single spaces (empty fields kept).
std::vector<words> parse_lines(const std::string& text) {
  std::vector<words> lines;
  size_t begin = 0;
  for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', begin)) {
    words w;
    size_t start = begin;
    while (true) {
      const size_t sp = text.find(' ', start);
      if (sp == std::string::npos || sp > nl) {
        w.emplace_back(text.substr(start, nl - start));
        break;
      }
      w.emplace_back(text.substr(start, sp - start));
      start = sp + 1;
    }
    lines.push_back(std::move(w));
    begin = nl + 1;
  }
  return lines;
}

std::optional<int64_t> number(const std::string& s) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::set<int> partition_list(const std::string& s) {
  std::set<int> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (auto n = number(s.substr(start, comma - start))) out.insert(static_cast<int>(*n));
    start = comma + 1;
  }
  return out;
}

// "KIND P O [T]" lines: records returned, offsets committed, positions after assignment.
struct offset_event {
  int partition = 0;
  int64_t offset = 0;
  int64_t time_ns = 0;  // 0 when the client does not print it
};

std::vector<offset_event> offset_events(const std::vector<words>& lines, std::string_view kind) {
  std::vector<offset_event> out;
  for (const auto& w : lines) {
    if (w.size() < 3 || w[0] != kind) continue;
    auto p = number(w[1]);
    auto o = number(w[2]);
    if (!p || !o) continue;
    offset_event e{static_cast<int>(*p), *o, 0};
    if (w.size() >= 4) e.time_ns = number(w[3]).value_or(0);
    out.push_back(e);
  }
  return out;
}

// The partitions the member owns after its last assigned/revoked/lost callback.
std::optional<std::set<int>> owned(const std::vector<words>& lines) {
  std::optional<std::set<int>> out;
  for (const auto& w : lines) {
    if (w.size() == 4 && (w[0] == "assigned" || w[0] == "revoked" || w[0] == "lost") &&
        w[2] == "owned") {
      out = partition_list(w[3]);
    }
  }
  return out;
}

size_t count_lines(const std::vector<words>& lines, std::string_view kind) {
  return static_cast<size_t>(
      std::count_if(lines.begin(), lines.end(), [&](const words& w) { return w[0] == kind; }));
}

bool has_line(const std::vector<words>& lines, std::string_view kind) {
  return count_lines(lines, kind) > 0;
}

// The group generations (member epochs) a Java member saw joined, in order ("gen G MEMBER").
std::vector<int64_t> generations(const std::vector<words>& lines) {
  std::vector<int64_t> out;
  for (const auto& w : lines) {
    if (w.size() >= 2 && w[0] == "gen") {
      if (auto g = number(w[1]); g && *g > 0) out.push_back(*g);
    }
  }
  return out;
}

// "committed P O|none" and "end P O" lines of an offsets report: partition -> offset (-1: none).
std::map<int, int64_t> report(const std::vector<words>& lines, std::string_view kind) {
  std::map<int, int64_t> out;
  for (const auto& w : lines) {
    if (w.size() == 3 && w[0] == kind) {
      if (auto p = number(w[1])) out[static_cast<int>(*p)] = number(w[2]).value_or(-1);
    }
  }
  return out;
}

// The highest offset of each partition among `records`.
std::map<int, int64_t> last_offsets(const std::vector<offset_event>& events) {
  std::map<int, int64_t> out;
  for (const auto& e : events) out[e.partition] = std::max(out[e.partition], e.offset);
  return out;
}

// A client program as a child process (`exec`ed by sh, so signals reach it).
class client {
 public:
  client(std::string name, const std::string& command)
      : name_(std::move(name)), process_({"/bin/sh", "-c", "exec " + command}) {}

  const std::string& name() const { return name_; }
  std::string output() const { return process_.output(); }
  std::vector<words> lines() const { return parse_lines(output()); }
  void signal(int sig) { process_.send_signal(sig); }
  std::optional<exit_status> wait_exit(std::chrono::milliseconds timeout = group_timeout) {
    return process_.wait_exit(timeout);
  }

 private:
  std::string name_;
  child_process process_;
};

template <class Predicate>
bool wait_until(Predicate done, std::chrono::milliseconds timeout = group_timeout) {
  const auto deadline = clock_type::now() + timeout;
  while (!done()) {
    if (clock_type::now() >= deadline) return done();
    std::this_thread::sleep_for(25ms);
  }
  return true;
}

// The members' last owned sets split `partitions` among them, every member holding some.
bool assignment_settled(const std::vector<client*>& members, int partitions) {
  std::set<int> all;
  for (const client* m : members) {
    auto o = owned(m->lines());
    if (!o || o->empty()) return false;
    for (int p : *o) {
      if (!all.insert(p).second) return false;
    }
  }
  return static_cast<int>(all.size()) == partitions;
}

// Every member owns partitions, and in each of them the members between them have been given
// every record below `ends`.
bool members_caught_up(const std::vector<client*>& members, const std::map<int, int64_t>& ends) {
  std::map<int, int64_t> last;
  for (const client* m : members) {
    for (const auto& [p, o] : last_offsets(offset_events(m->lines(), "record"))) {
      last[p] = std::max(last[p], o);
    }
  }
  for (const client* m : members) {
    const auto mine = owned(m->lines());
    if (!mine || mine->empty()) return false;
    for (int p : *mine) {
      const int64_t end = ends.at(p);
      if (end > 0 && (!last.contains(p) || last.at(p) < end - 1)) return false;
    }
  }
  return true;
}

int64_t millis(clock_type::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// ---- The broker under test.

enum class broker_kind { kafka, tarn };

void PrintTo(broker_kind k, std::ostream* os) {
  *os << (k == broker_kind::kafka ? "kafka" : "tarn");
}

class groups : public ::testing::TestWithParam<broker_kind> {
 protected:
  void SetUp() override {
    if (GetParam() == broker_kind::kafka) {
#ifdef TARN_SANITIZED_BUILD
      // The Kafka half checks the scenarios themselves against the reference; a sanitizer
      // instruments only tarn, so it runs once, in the release suite (make test).
      GTEST_SKIP() << "the Kafka 4.4.0 reference half runs in the release build only";
#endif
      if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are not available";
      const std::string& error = shared_kafka::instance().start();
      ASSERT_EQ(error, "");
      port_ = shared_kafka::instance().port();
    } else {
      start_tarn();
      ASSERT_NE(port_, 0) << tarn_->output();
    }
  }

  void TearDown() override {
    clients_.clear();  // SIGKILL whatever still runs, before the broker goes
    if (tarn_) tarn_->stop();
  }

  // group.initial.rebalance.delay.ms=0 as for Kafka (kafka-ref's server.properties): a group's
  // first rebalance does not wait 3 s for more members.
  void start_tarn() {
    tarn_ = std::make_unique<broker_process>(
        std::vector<std::string>{"--override", "group.initial.rebalance.delay.ms=0"},
        tmp_.path() / "data");
    port_ = tarn_->port();
  }

  std::string bootstrap() const { return "127.0.0.1:" + std::to_string(port_); }

  // A topic or group name of this test alone ("what-<test>-<pid>-<n>").
  std::string name(const std::string& what) const {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string test = std::string(info->name());
    for (char& c : test) {
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '-';
    }
    return what + "-" + test + "-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
  }

  std::string java(const std::string& args) const {
    return "java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp '" + group_consume_classes() + ":" +
           kafka_libs() + "/*' GroupConsume " + args;
  }
  std::string py(const std::string& args) const {
    return std::string(python) + " " + source("tests/python/group_consume.py") + " " + args;
  }

  client& start(const std::string& name, const std::string& command) {
    clients_.push_back(std::make_unique<client>(name, command));
    return *clients_.back();
  }

  // Runs a client command to completion (bounded); its exit code and output lines.
  std::pair<int, std::string> run(const std::string& command) const {
    return run_command(bounded(command));
  }

  // Creates `topic` with counts.size() partitions and that many records in each, with the Java
  // producer or confluent-kafka; fails the test unless every record was acknowledged.
  void setup_topic(const std::string& topic, const std::vector<int64_t>& counts, bool with_java) {
    std::string list;
    for (int64_t n : counts) list += (list.empty() ? "" : ",") + std::to_string(n);
    const std::string args = "setup " + bootstrap() + " " + topic + " " + list;
    auto [rc, out] = run(with_java ? java(args) : py(args));
    ASSERT_EQ(rc, 0) << out << broker_log();
    std::map<int, int64_t> want;
    for (size_t p = 0; p < counts.size(); ++p) want[static_cast<int>(p)] = counts[p];
    ASSERT_EQ(report(parse_lines(out), "produced"), want) << out;
  }

  void kill_broker_and_restart() {
    if (GetParam() == broker_kind::kafka) {
      ASSERT_EQ(shared_kafka::instance().kill_and_restart(), "");
      return;
    }
    tarn_->process().send_signal(SIGKILL);
    ASSERT_TRUE(tarn_->process().wait_exit(event_timeout).has_value());
    start_tarn();
    ASSERT_NE(port_, 0) << tarn_->output();
  }

  // The end of tarn's log, for failure messages ("" with Kafka: its log is in its directory).
  std::string broker_log() const {
    if (!tarn_) return "";
    const std::string log = tarn_->output();
    const size_t keep = 6000;
    return "\n--- tarn serve" + std::string(log.size() > keep ? " (the end)" : "") + ":\n" +
           log.substr(log.size() > keep ? log.size() - keep : 0);
  }

  // What every client printed, without its record and commit lines (counted instead), and the
  // broker's log, for failure messages.
  std::string dump() const {
    std::string out;
    for (const auto& c : clients_) {
      out += "--- " + c->name() + ":\n";
      size_t records = 0, commits = 0;
      const std::string text = c->output();
      size_t begin = 0;
      while (begin < text.size()) {
        size_t nl = text.find('\n', begin);
        if (nl == std::string::npos) nl = text.size();
        const std::string_view line(text.data() + begin, nl - begin);
        if (line.starts_with("record ")) {
          ++records;
        } else if (line.starts_with("commit ")) {
          ++commits;
        } else {
          out.append(line);
          out += '\n';
        }
        begin = nl + 1;
      }
      out += "(" + std::to_string(records) + " record lines, " + std::to_string(commits) +
             " commit lines)\n";
    }
    return out + broker_log();
  }

  // Scenarios shared by several tests.
  void java_group_reads_each_record_once(const std::string& protocol);
  void members_join_and_leave_while_records_flow(const std::string& assignor);
  void killed_member_is_removed_after_session_timeout(bool with_java);

  temp_dir tmp_;
  std::unique_ptr<broker_process> tarn_;
  uint16_t port_ = 0;
  std::vector<std::unique_ptr<client>> clients_;
};

// Each record of each partition was returned exactly once, and nothing else.
void expect_each_record_once(const std::vector<offset_event>& records,
                             const std::vector<int64_t>& counts) {
  std::map<std::pair<int, int64_t>, int> seen;
  for (const auto& r : records) ++seen[{r.partition, r.offset}];
  int64_t total = 0;
  size_t wrong = 0;
  for (size_t p = 0; p < counts.size(); ++p) {
    total += counts[p];
    for (int64_t o = 0; o < counts[p]; ++o) {
      auto it = seen.find({static_cast<int>(p), o});
      const int n = it == seen.end() ? 0 : it->second;
      if (n != 1 && ++wrong <= 10) {
        ADD_FAILURE() << "partition " << p << " offset " << o << " returned " << n << " times";
      }
    }
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(records.size(), static_cast<size_t>(total));
}

std::map<int, int64_t> as_map(const std::vector<int64_t>& counts) {
  std::map<int, int64_t> out;
  for (size_t p = 0; p < counts.size(); ++p) out[static_cast<int>(p)] = counts[p];
  return out;
}

// ---- 1. The Java consumer reads each record once, commits, and a later member starts there.

void groups::java_group_reads_each_record_once(const std::string& protocol) {
  REQUIRE_JAVA_CLIENTS();
  const std::vector<int64_t> counts = {400, 500, 600, 500};
  const std::string topic = name("t"), group = name("g");
  ASSERT_NO_FATAL_FAILURE(setup_topic(topic, counts, true));

  auto [rc, out] = run(java("consume " + bootstrap() + " " + topic + " " + group +
                            " protocol=" + protocol + " stop=records:2000"));
  ASSERT_EQ(rc, 0) << out << broker_log();
  const auto lines = parse_lines(out);
  ASSERT_TRUE(has_line(lines, "closed")) << out;
  EXPECT_EQ(owned(lines), std::set<int>{}) << "closing revokes everything";
  expect_each_record_once(offset_events(lines, "record"), counts);
  EXPECT_EQ(last_offsets(offset_events(lines, "commit")), as_map(counts)) << out;
  EXPECT_FALSE(has_line(lines, "commit-failed")) << out;

  // A second member, once the first is gone: every position is the committed offset (the end),
  // nothing is read again, and the Admin client sees the commits at the log end offsets.
  auto [rc2, out2] = run(java("consume " + bootstrap() + " " + topic + " " + group +
                              " protocol=" + protocol + " stop=caught-up report=true"));
  ASSERT_EQ(rc2, 0) << out2 << broker_log();
  const auto lines2 = parse_lines(out2);
  EXPECT_EQ(count_lines(lines2, "record"), 0u) << out2;
  std::map<int, int64_t> positions;
  for (const auto& e : offset_events(lines2, "position")) positions[e.partition] = e.offset;
  EXPECT_EQ(positions, as_map(counts)) << out2;
  EXPECT_EQ(report(lines2, "committed"), as_map(counts)) << out2;
  EXPECT_EQ(report(lines2, "end"), as_map(counts)) << out2;
}

TEST_P(groups, java_classic_protocol_reads_each_record_once_and_commits) {
  java_group_reads_each_record_once("classic");
}

TEST_P(groups, java_consumer_protocol_reads_each_record_once_and_commits) {
  java_group_reads_each_record_once("consumer");
}

// ---- 2. librdkafka members join one after another and one leaves while records flow.

void groups::members_join_and_leave_while_records_flow(const std::string& assignor) {
  if (!have_python_module("confluent_kafka")) GTEST_SKIP() << "confluent_kafka not installed";
  constexpr int partitions = 4;
  const std::string topic = name("t"), group = name("g");
  ASSERT_NO_FATAL_FAILURE(setup_topic(topic, {0, 0, 0, 0}, false));
  client& producer = start("producer", py("flow " + bootstrap() + " " + topic + " 4"));
  ASSERT_TRUE(wait_until([&] { return has_line(producer.lines(), "producing"); })) << dump();

  const std::string member_args = "consume " + bootstrap() + " " + topic + " " + group +
                                  " --assignor " + assignor + " --session-ms " +
                                  std::to_string(short_session_ms);
  std::vector<client*> live;
  // A member joins; the group settles with every live member owning some partitions, and the
  // new member reads records produced since.
  auto join = [&](const std::string& who) {
    client& m = start(who, py(member_args));
    live.push_back(&m);
    ASSERT_TRUE(wait_until([&] {
      return assignment_settled(live, partitions) && has_line(m.lines(), "record");
    })) << who
        << " joining\n"
        << dump();
  };
  ASSERT_NO_FATAL_FAILURE(join("m1"));
  ASSERT_NO_FATAL_FAILURE(join("m2"));
  ASSERT_NO_FATAL_FAILURE(join("m3"));

  // m2 leaves (close: revoke, commit, LeaveGroup); m1 and m3 take its partitions.
  client& leaver = *live[1];
  live.erase(live.begin() + 1);
  leaver.signal(SIGTERM);
  ASSERT_TRUE(leaver.wait_exit().has_value()) << dump();
  ASSERT_TRUE(has_line(leaver.lines(), "closed")) << dump();
  ASSERT_TRUE(wait_until([&] { return assignment_settled(live, partitions); })) << dump();

  producer.signal(SIGTERM);
  ASSERT_TRUE(producer.wait_exit().has_value()) << dump();
  const auto ends = report(producer.lines(), "produced");
  ASSERT_EQ(ends.size(), static_cast<size_t>(partitions)) << dump();

  // The remaining members read to the end and commit it, then close.
  std::vector<client*> all;
  for (const auto& c : clients_) {
    if (c.get() != &producer) all.push_back(c.get());
  }
  auto last_commits = [&] {
    std::map<int, int64_t> last;
    for (const client* m : all) {
      for (const auto& e : offset_events(m->lines(), "commit")) {
        last[e.partition] = std::max(last[e.partition], e.offset);
      }
    }
    return last;
  };
  ASSERT_TRUE(wait_until([&] { return last_commits() == ends; })) << dump();
  for (client* m : live) m->signal(SIGTERM);
  for (client* m : live) {
    ASSERT_TRUE(m->wait_exit().has_value()) << dump();
    ASSERT_TRUE(has_line(m->lines(), "closed")) << dump();
  }

  // At least once: every offset below the end was returned to some member.
  std::map<std::pair<int, int64_t>, int> seen;
  std::map<int, std::vector<offset_event>> commits;  // partition -> commits, every member's
  std::vector<offset_event> records;
  for (const client* m : all) {
    const auto lines = m->lines();
    for (const auto& e : offset_events(lines, "record")) {
      ++seen[{e.partition, e.offset}];
      records.push_back(e);
    }
    for (const auto& e : offset_events(lines, "commit")) commits[e.partition].push_back(e);
  }
  size_t duplicates = 0, produced = 0, missing = 0;
  for (const auto& [p, end] : ends) {
    produced += static_cast<size_t>(end);
    for (int64_t o = 0; o < end; ++o) {
      auto it = seen.find({p, o});
      if (it != seen.end()) {
        duplicates += static_cast<size_t>(it->second - 1);
      } else if (++missing <= 10) {
        ADD_FAILURE() << "partition " << p << " offset " << o << " never consumed";
      }
    }
  }
  EXPECT_EQ(missing, 0u);
  EXPECT_EQ(seen.size() + missing, produced) << "records beyond the end offsets";
  // Commits happen only for partitions the member owns, before it gives them up (the revoke
  // callback), so once a commit of offset C returned, no member is given a record below C of that
  // partition again: a new owner starts at the committed offset.
  size_t late = 0;
  for (const auto& r : records) {
    for (const auto& c : commits[r.partition]) {
      if (c.time_ns < r.time_ns && r.offset < c.offset) {
        if (++late <= 10) {
          ADD_FAILURE() << "partition " << r.partition << " offset " << r.offset
                        << " returned after offset " << c.offset << " was committed";
        }
        break;
      }
    }
  }
  EXPECT_EQ(late, 0u);

  auto [rc, out] = run(py("offsets " + bootstrap() + " " + topic + " " + group));
  ASSERT_EQ(rc, 0) << out << broker_log();
  EXPECT_EQ(report(parse_lines(out), "committed"), ends) << out;
  EXPECT_EQ(report(parse_lines(out), "end"), ends) << out;
  std::cout << assignor << ": " << records.size() << " records returned for " << produced
            << " produced (" << duplicates << " again after a rebalance)\n";
}

TEST_P(groups, confluent_range_members_join_and_leave_while_records_flow) {
  members_join_and_leave_while_records_flow("range");
}

TEST_P(groups, confluent_cooperative_sticky_members_join_and_leave_while_records_flow) {
  members_join_and_leave_while_records_flow("cooperative-sticky");
}

// ---- 3. kafka-python.

TEST_P(groups, kafka_python_reads_every_record_and_commits) {
  if (!have_python_module("confluent_kafka") || !have_python_module("kafka")) {
    GTEST_SKIP() << "confluent_kafka or kafka-python not installed";
  }
  const std::vector<int64_t> counts = {40, 50, 60, 50};
  const std::string topic = name("t"), group = name("g");
  ASSERT_NO_FATAL_FAILURE(setup_topic(topic, counts, false));
  auto [rc, out] = run(py("consume " + bootstrap() + " " + topic + " " + group +
                          " --client kafka-python --stop-after 200"));
  ASSERT_EQ(rc, 0) << out << broker_log();
  const auto lines = parse_lines(out);
  ASSERT_TRUE(has_line(lines, "closed")) << out;
  expect_each_record_once(offset_events(lines, "record"), counts);
  EXPECT_EQ(last_offsets(offset_events(lines, "commit")), as_map(counts)) << out;
  auto [rc2, out2] =
      run(py("offsets " + bootstrap() + " " + topic + " " + group + " --client kafka-python"));
  ASSERT_EQ(rc2, 0) << out2 << broker_log();
  EXPECT_EQ(report(parse_lines(out2), "committed"), as_map(counts)) << out2;
  EXPECT_EQ(report(parse_lines(out2), "end"), as_map(counts)) << out2;
}

// ---- 4. kcat -G (librdkafka's balanced consumer, auto commit on close).

TEST_P(groups, kcat_balanced_consumer_reads_every_record_and_commits) {
  if (!have_program("kcat") || !have_python_module("confluent_kafka")) {
    GTEST_SKIP() << "kcat or confluent_kafka not installed";
  }
  const std::vector<int64_t> counts = {40, 50, 60, 50};
  const std::string topic = name("t"), group = name("g");
  ASSERT_NO_FATAL_FAILURE(setup_topic(topic, counts, false));
  // kcat -G -o beginning starts every partition it is assigned at the beginning, over the group's
  // commits; the second run, which must start at the commits, goes without it.
  const std::string kcat = "kcat -b " + bootstrap() + " -G " + group + " -e -f '%p %o\\n' ";
  const auto err = tmp_.path() / "kcat.err";
  // The records on stdout alone (kcat's "% ..." notes to a file, not into the middle of a line).
  auto run_kcat = [&](const std::string& args) {
    return run_command("(" + bounded(kcat + args) + " 2>" + err.string() + ")");
  };
  auto [rc, out] = run_kcat("-o beginning " + topic);
  ASSERT_EQ(rc, 0) << out << read_file(err) << broker_log();
  std::vector<offset_event> records;
  for (const auto& w : parse_lines(out)) {
    auto p = w.size() == 2 ? number(w[0]) : std::nullopt;
    auto o = w.size() == 2 ? number(w[1]) : std::nullopt;
    if (p && o) records.push_back({static_cast<int>(*p), *o, 0});
  }
  expect_each_record_once(records, counts);
  auto [rc2, out2] = run(py("offsets " + bootstrap() + " " + topic + " " + group));
  ASSERT_EQ(rc2, 0) << out2 << broker_log();
  EXPECT_EQ(report(parse_lines(out2), "committed"), as_map(counts)) << out2 << read_file(err);
  // Once more in the same group: from the committed offsets there is nothing to read.
  auto [rc3, out3] = run_kcat(topic);
  EXPECT_EQ(rc3, 0) << out3 << read_file(err) << broker_log();
  EXPECT_EQ(out3, "") << read_file(err);
  EXPECT_NE(read_file(err).find("Reached end of topic"), std::string::npos) << read_file(err);
}

// ---- 5. Static membership: a restart within session.timeout.ms does not rebalance the group.

TEST_P(groups, java_static_member_restarts_without_rebalancing_the_other) {
  REQUIRE_JAVA_CLIENTS();
  constexpr int partitions = 4;
  const std::vector<int64_t> counts = {100, 100, 100, 100};
  const std::string topic = name("t"), group = name("g");
  ASSERT_NO_FATAL_FAILURE(setup_topic(topic, counts, true));
  const std::string args = "consume " + bootstrap() + " " + topic + " " + group +
                           " session=" + std::to_string(static_session_ms) +
                           " heartbeat=" + std::to_string(heartbeat_ms) + " instance=";
  client* a = &start("a", java(args + "a"));
  ASSERT_TRUE(wait_until([&] { return assignment_settled({a}, partitions); })) << dump();
  client& b = start("b", java(args + "b"));
  ASSERT_TRUE(wait_until([&] {
    const auto ga = generations(a->lines()), gb = generations(b.lines());
    return assignment_settled({a, &b}, partitions) && !ga.empty() && !gb.empty() &&
           ga.back() == gb.back() && members_caught_up({a, &b}, as_map(counts));
  })) << dump();
  const int64_t generation = generations(b.lines()).back();
  const std::set<int> a_parts = owned(a->lines()).value_or(std::set<int>{});
  const std::set<int> b_parts = owned(b.lines()).value_or(std::set<int>{});

  // a closes (a static member sends no LeaveGroup) and starts again with the same instance id.
  a->signal(SIGTERM);
  ASSERT_TRUE(a->wait_exit().has_value()) << dump();
  ASSERT_TRUE(has_line(a->lines(), "closed")) << dump();
  const auto closed_at = clock_type::now();
  a = &start("a-again", java(args + "a"));
  ASSERT_TRUE(wait_until([&] {
    const auto lines = a->lines();
    return owned(lines) == a_parts && !generations(lines).empty() &&
           offset_events(lines, "position").size() == a_parts.size();
  })) << dump();
  const auto rejoined_after = clock_type::now() - closed_at;
  ASSERT_LT(millis(rejoined_after), static_session_ms)
      << "a took longer than session.timeout.ms to come back; the test proves nothing";
  std::cout << "static member back with its partitions " << millis(rejoined_after)
            << " ms after it closed (session.timeout.ms " << static_session_ms << ")\n";
  // The same generation: the coordinator handed a its assignment without a rebalance.
  EXPECT_EQ(generations(a->lines()).front(), generation) << dump();
  // It resumes at the offsets it committed when it closed.
  for (const auto& e : offset_events(a->lines(), "position")) {
    EXPECT_EQ(e.offset, counts[static_cast<size_t>(e.partition)]) << dump();
  }

  // Records produced now reach both members in their partitions; by then b has heartbeated many
  // times since a came back, and would have been told of a rebalance.
  auto [rc, out] = run(java("produce " + bootstrap() + " " + topic + " 10,10,10,10"));
  ASSERT_EQ(rc, 0) << out << broker_log();
  const auto ends = report(parse_lines(out), "produced");
  ASSERT_EQ(ends, (std::map<int, int64_t>{{0, 110}, {1, 110}, {2, 110}, {3, 110}})) << out;
  ASSERT_TRUE(wait_until([&] { return members_caught_up({a, &b}, ends); })) << dump();
  const auto b_lines = b.lines();
  EXPECT_EQ(count_lines(b_lines, "assigned"), 1u) << "b was rebalanced\n" << dump();
  EXPECT_EQ(count_lines(b_lines, "revoked"), 0u) << dump();
  EXPECT_EQ(owned(b_lines), b_parts);
  EXPECT_EQ(generations(b_lines), std::vector<int64_t>{generation}) << dump();
  EXPECT_EQ(generations(a->lines()), std::vector<int64_t>{generation}) << dump();
}

// ---- 6. A member that stops heartbeating (SIGKILL) is removed after session.timeout.ms.

void groups::killed_member_is_removed_after_session_timeout(bool with_java) {
  if (with_java) REQUIRE_JAVA_CLIENTS();
  if (!with_java && !have_python_module("confluent_kafka")) {
    GTEST_SKIP() << "confluent_kafka not installed";
  }
  constexpr int partitions = 4;
  const std::vector<int64_t> counts = {100, 100, 100, 100};
  const std::string topic = name("t"), group = name("g");
  ASSERT_NO_FATAL_FAILURE(setup_topic(topic, counts, with_java));
  const std::string session = std::to_string(short_session_ms);
  const std::string member =
      with_java
          ? java("consume " + bootstrap() + " " + topic + " " + group + " session=" + session +
                 " heartbeat=" + std::to_string(heartbeat_ms))
          : py("consume " + bootstrap() + " " + topic + " " + group + " --session-ms " + session);
  client& a = start("a", member);
  ASSERT_TRUE(wait_until([&] { return assignment_settled({&a}, partitions); })) << dump();
  client& b = start("b", member);
  // The group has committed b's partitions to the end (a may have, before b joined).
  ASSERT_TRUE(wait_until([&] {
    if (!assignment_settled({&a, &b}, partitions)) return false;
    std::map<int, int64_t> committed;
    for (const client* m : {&a, &b}) {
      for (const auto& [p, o] : last_offsets(offset_events(m->lines(), "commit"))) {
        committed[p] = std::max(committed[p], o);
      }
    }
    const std::set<int> b_owns = owned(b.lines()).value_or(std::set<int>{});
    for (int p : b_owns) {
      if (committed[p] != counts[static_cast<size_t>(p)]) return false;
    }
    return true;
  })) << dump();
  const std::set<int> b_parts = owned(b.lines()).value_or(std::set<int>{});
  const size_t a_lines_before = a.lines().size();

  b.signal(SIGKILL);
  const auto killed_at = clock_type::now();
  ASSERT_TRUE(wait_until([&] { return assignment_settled({&a}, partitions); },
                         std::chrono::milliseconds(short_session_ms) + group_timeout))
      << dump();
  const auto took = clock_type::now() - killed_at;
  // The coordinator waits for the session timeout (from b's last heartbeat, at most one
  // heartbeat interval before the kill); a closed connection does not end a membership.
  EXPECT_GE(millis(took), short_session_ms - heartbeat_ms - 250) << dump();
  std::cout << "member removed " << millis(took) << " ms after SIGKILL (session.timeout.ms "
            << short_session_ms << ")\n";

  // a goes on from b's commits: it reads only the records produced now, in b's partitions too.
  const std::string more = "produce " + bootstrap() + " " + topic + " 10,10,10,10";
  auto [rc, out] = run(with_java ? java(more) : py(more));
  ASSERT_EQ(rc, 0) << out << broker_log();
  const auto ends = report(parse_lines(out), "produced");
  ASSERT_EQ(ends, (std::map<int, int64_t>{{0, 110}, {1, 110}, {2, 110}, {3, 110}})) << out;
  ASSERT_TRUE(wait_until([&] { return members_caught_up({&a}, ends); })) << dump();
  const auto lines = a.lines();
  std::map<int, int64_t> first_after;
  for (size_t i = a_lines_before; i < lines.size(); ++i) {
    const auto& w = lines[i];
    if (w.size() >= 3 && w[0] == "record") {
      const int p = static_cast<int>(number(w[1]).value_or(-1));
      if (b_parts.contains(p) && !first_after.contains(p))
        first_after[p] = number(w[2]).value_or(-1);
    }
  }
  for (int p : b_parts) {
    EXPECT_EQ(first_after[p], counts[static_cast<size_t>(p)]) << "partition " << p << "\n"
                                                              << dump();
  }
  a.signal(SIGTERM);
  ASSERT_TRUE(a.wait_exit().has_value()) << dump();
  auto [rc2, out2] = with_java ? run(java("offsets " + bootstrap() + " " + topic + " " + group))
                               : run(py("offsets " + bootstrap() + " " + topic + " " + group));
  ASSERT_EQ(rc2, 0) << out2 << broker_log();
  EXPECT_EQ(report(parse_lines(out2), "committed"), ends) << out2;
}

TEST_P(groups, java_killed_member_is_removed_after_session_timeout) {
  killed_member_is_removed_after_session_timeout(true);
}

TEST_P(groups, confluent_killed_member_is_removed_after_session_timeout) {
  killed_member_is_removed_after_session_timeout(false);
}

// ---- 7. Committed offsets survive a SIGKILL of the broker.

// ---- 6. A classic member and a consumer-protocol member share one group (online migration).

// A classic Java consumer forms the group; a group.protocol=consumer one joins it (the classic
// group is upgraded, the classic member stays in it through JoinGroup/SyncGroup/Heartbeat); the
// two split the partitions and read their records; the consumer-protocol member leaves (the
// group is downgraded) and the classic member takes every partition back at the committed
// offsets; the commits end at the log end offsets.
TEST_P(groups, java_classic_and_consumer_protocol_members_share_a_group) {
  REQUIRE_JAVA_CLIENTS();
  constexpr int partitions = 4;
  const std::vector<int64_t> counts = {100, 100, 100, 100};
  const std::string topic = name("t"), group = name("g");
  ASSERT_NO_FATAL_FAILURE(setup_topic(topic, counts, true));
  const std::string args = "consume " + bootstrap() + " " + topic + " " + group;
  client& a =
      start("classic", java(args + " protocol=classic heartbeat=" + std::to_string(heartbeat_ms)));
  ASSERT_TRUE(wait_until([&] { return assignment_settled({&a}, partitions); })) << dump();
  client& b = start("consumer", java(args + " protocol=consumer"));
  ASSERT_TRUE(wait_until([&] {
    return assignment_settled({&a, &b}, partitions) && members_caught_up({&a, &b}, as_map(counts));
  })) << dump();

  b.signal(SIGTERM);
  ASSERT_TRUE(b.wait_exit().has_value()) << dump();
  ASSERT_TRUE(has_line(b.lines(), "closed")) << dump();
  ASSERT_TRUE(wait_until([&] { return assignment_settled({&a}, partitions); })) << dump();
  // Records produced now all reach the classic member, from where the group committed.
  auto [rc, out] = run(java("produce " + bootstrap() + " " + topic + " 10,10,10,10"));
  ASSERT_EQ(rc, 0) << out << broker_log();
  const auto ends = report(parse_lines(out), "produced");
  ASSERT_TRUE(wait_until([&] { return members_caught_up({&a}, ends); })) << dump();
  a.signal(SIGTERM);
  ASSERT_TRUE(a.wait_exit().has_value()) << dump();
  ASSERT_TRUE(has_line(a.lines(), "closed")) << dump();

  // Every record was read, and after b left nothing below what it committed was read again.
  std::map<std::pair<int, int64_t>, int> seen;
  for (const client* m : {&a, &b}) {
    for (const auto& e : offset_events(m->lines(), "record")) ++seen[{e.partition, e.offset}];
  }
  size_t missing = 0;
  for (const auto& [p, end] : ends) {
    for (int64_t o = 0; o < end; ++o) {
      if (!seen.contains({p, o}) && ++missing <= 10) {
        ADD_FAILURE() << "partition " << p << " offset " << o << " never consumed";
      }
    }
  }
  EXPECT_EQ(missing, 0u) << dump();
  auto [rc2, out2] = run(java("offsets " + bootstrap() + " " + topic + " " + group));
  ASSERT_EQ(rc2, 0) << out2 << broker_log();
  EXPECT_EQ(report(parse_lines(out2), "committed"), ends) << out2;
}

TEST_P(groups, committed_offsets_survive_broker_sigkill) {
  REQUIRE_JAVA_CLIENTS();
  const std::vector<int64_t> counts = {30, 40, 50, 60};
  const std::string topic = name("t"), group = name("g");
  ASSERT_NO_FATAL_FAILURE(setup_topic(topic, counts, true));
  auto [rc, out] =
      run(java("consume " + bootstrap() + " " + topic + " " + group + " stop=records:180"));
  ASSERT_EQ(rc, 0) << out << broker_log();
  ASSERT_EQ(last_offsets(offset_events(parse_lines(out), "commit")), as_map(counts)) << out;
  ASSERT_NO_FATAL_FAILURE(kill_broker_and_restart());
  auto [rc2, out2] = run(java("offsets " + bootstrap() + " " + topic + " " + group));
  ASSERT_EQ(rc2, 0) << out2 << broker_log();
  EXPECT_EQ(report(parse_lines(out2), "committed"), as_map(counts)) << out2;
  EXPECT_EQ(report(parse_lines(out2), "end"), as_map(counts)) << out2;
}

std::string broker_name(const ::testing::TestParamInfo<broker_kind>& info) {
  return info.param == broker_kind::kafka ? "kafka" : "tarn";
}

INSTANTIATE_TEST_SUITE_P(kafka_4_4, groups, ::testing::Values(broker_kind::kafka), broker_name);
INSTANTIATE_TEST_SUITE_P(tarn, groups, ::testing::Values(broker_kind::tarn), broker_name);

}  // namespace
}  // namespace tarn::test
