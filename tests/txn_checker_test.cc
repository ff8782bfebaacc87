// A Jepsen-style checker of transactions: several transactional producers (tarn's library)
// write numbered records to a few partitions, committing most transactions and aborting some at
// random, while the broker is SIGKILLed and restarted on the same port and log directory. Then a
// read_committed consumer (kcat) reads every partition, and the history is checked. The
// transactions time out after 1.5 s (checked every 200 ms), and each producer once stalls 3 s
// before a commit, so the coordinator aborts that transaction and fences the producer, which
// starts over with a new instance (the commit's outcome is unknown to it).
//   - lost-write: a record of a transaction whose commit was acknowledged is missing;
//   - duplicate: a record is read more than once;
//   - G1a (aborted read): a record of a transaction that was aborted is read;
//   - fractured: a transaction whose outcome the producer could not learn (its commit failed
//     fatally) is read in part only: it must be all or nothing;
//   - out-of-order: one producer's records in one partition are read out of send order.
// Short form in `make test` (about 11 s); longer under `make soak` with TARN_TXN_CHECK_SECONDS
// (run time), TARN_TXN_CHECK_PRODUCERS and TARN_TXN_CHECK_KILLS (broker SIGKILLs).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tarn/producer.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using client::producer;
using client::producer_errc;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

// `tarn serve` on a fixed port once started, so clients reconnect to the same address.
class restartable_broker {
 public:
  explicit restartable_broker(std::filesystem::path data_dir) : data_dir_(std::move(data_dir)) {}

  bool start() {
    process_ = run_tarn(
        {"serve", "--override", "listeners=PLAINTEXT://127.0.0.1:" + std::to_string(port_),
         "--override", "log.dirs=" + data_dir_.string(), "--override",
         "transaction.state.log.num.partitions=2", "--override", "offsets.topic.num.partitions=2",
         "--override", "transaction.abort.timed.out.transaction.cleanup.interval.ms=200"});
    auto port =
        process_->wait_for_number_after("listening on PLAINTEXT://127.0.0.1:", startup_timeout);
    if (!port) return false;
    port_ = static_cast<uint16_t>(std::stoi(*port));
    return true;
  }
  bool kill(int sig) {
    process_->send_signal(sig);
    return process_->wait_exit(20s).has_value();
  }
  uint16_t port() const { return port_; }
  std::string output() const { return process_ ? process_->output() : ""; }

 private:
  std::filesystem::path data_dir_;
  uint16_t port_ = 0;
  std::unique_ptr<child_process> process_;
};

enum class outcome { committed, aborted, unknown };

struct txn_record {
  int32_t partition;
  std::string value;  // "<producer>:<number>", numbers increasing per producer
};

struct txn_history {
  outcome result = outcome::unknown;
  std::vector<txn_record> records;
};

struct history {
  std::mutex mutex;
  std::vector<txn_history> txns;
  void add(txn_history h) {
    std::lock_guard lock(mutex);
    txns.push_back(std::move(h));
  }
};

constexpr int partitions = 3;
const char* topic = "checked";

std::unique_ptr<producer> make_producer(uint16_t port, const std::string& id) {
  auto p = producer::create({{"bootstrap.servers", "127.0.0.1:" + std::to_string(port)},
                             {"transactional.id", id},
                             // Short, so a transaction stalled by an outage may be aborted by
                             // the coordinator: its producer is fenced and the commit's outcome
                             // is unknown to it (then the new instance's InitProducerId).
                             {"transaction.timeout.ms", "1500"},
                             {"linger.ms", "1"},
                             {"batch.size", "2048"},
                             {"request.timeout.ms", "2000"},
                             {"delivery.timeout.ms", "30000"},
                             {"max.block.ms", "15000"},
                             {"retry.backoff.ms", "20"},
                             {"retry.backoff.max.ms", "200"},
                             {"reconnect.backoff.ms", "20"},
                             {"reconnect.backoff.max.ms", "200"}});
  return p ? std::move(*p) : nullptr;
}

// One producer's run: transactions of 1-20 records over the partitions, about a fifth aborted,
// until `stop`. A producer that fails fatally is replaced by a new instance with the same
// transactional.id (its init_transactions aborts whatever was left open).
void run_producer(int index, uint16_t port, const std::atomic<bool>& stop, history& out,
                  std::atomic<int>& errors) {
  std::mt19937 random(static_cast<uint32_t>(1000 + index));
  const std::string id = "checker-" + std::to_string(index);
  int64_t number = 0;
  int64_t transactions = 0;
  std::unique_ptr<producer> p;
  auto fresh = [&]() -> bool {
    if (p) p->close(std::chrono::milliseconds(0));
    p = make_producer(port, id);
    for (int attempt = 0; p && attempt < 10 && !stop; ++attempt) {
      auto init = p->init_transactions();
      if (init) return true;
      if (init.error().code != producer_errc::timed_out) break;
    }
    return false;
  };
  while (!stop) {
    if (!fresh()) {
      std::this_thread::sleep_for(200ms);
      continue;
    }
    while (!stop) {
      txn_history txn;
      if (!p->begin_transaction()) break;
      const int count = 1 + static_cast<int>(random() % 20);
      bool send_failed = false;
      for (int i = 0; i < count; ++i) {
        txn_record r{static_cast<int32_t>(random() % partitions),
                     std::to_string(index) + ":" + std::to_string(number++)};
        client::producer_record record;
        record.topic = topic;
        record.partition = r.partition;
        record.value = r.value;
        // Recorded before the send: a send refused at once writes nothing, which is allowed
        // for an aborted or unknown transaction, and a committed one cannot have such a send.
        txn.records.push_back(r);
        if (auto sent = p->send_async(record, {}); !sent) {
          send_failed = true;
          break;
        }
      }
      const bool abort = send_failed || random() % 5 == 0;
      // Once a run, a producer stalls past its transaction timeout before committing: the
      // coordinator aborts the transaction and bumps the epoch, so the commit fails fatally,
      // its outcome is unknown to the producer, and a new instance takes over.
      if (++transactions == 200 && !abort) std::this_thread::sleep_for(3s);
      bool fatal = false;
      if (!abort) {
        auto committed = p->commit_transaction();
        while (!committed && committed.error().code == producer_errc::timed_out && !stop) {
          committed = p->commit_transaction();  // Java's contract: call it again
        }
        if (committed) {
          txn.result = outcome::committed;
        } else if (committed.error().code == producer_errc::abortable) {
          txn.result = p->abort_transaction() ? outcome::aborted : outcome::unknown;
          fatal = txn.result == outcome::unknown;
        } else {
          fatal = true;  // unknown: the commit may or may not have happened
        }
      } else {
        auto aborted = p->abort_transaction();
        while (!aborted && aborted.error().code == producer_errc::timed_out && !stop) {
          aborted = p->abort_transaction();
        }
        if (aborted) {
          txn.result = outcome::aborted;
        } else {
          fatal = true;
        }
      }
      out.add(std::move(txn));
      if (fatal) {
        ++errors;
        break;  // a new instance
      }
    }
  }
  if (p) p->close(std::chrono::seconds(5));
}

TEST(txn_checker, committed_records_read_once_in_order_and_aborted_never) {
  if (!have_program("kcat")) GTEST_SKIP() << "kcat not installed";
  const int seconds = env_int("TARN_TXN_CHECK_SECONDS", 8);
  const int producers = env_int("TARN_TXN_CHECK_PRODUCERS", 3);
  const int kills = env_int("TARN_TXN_CHECK_KILLS", 2);

  temp_dir tmp;
  restartable_broker broker(tmp.path() / "data");
  ASSERT_TRUE(broker.start()) << broker.output();
  const uint16_t port = broker.port();
  {
    auto [rc, out] =
        run_command("timeout 30 " + std::string(TARN_BINARY) +
                    " topics --bootstrap-server 127.0.0.1:" + std::to_string(port) +
                    " --create --topic " + topic + " --partitions " + std::to_string(partitions));
    ASSERT_EQ(rc, 0) << out;
  }

  history h;
  std::atomic<bool> stop{false};
  std::atomic<int> fatal_errors{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < producers; ++i) {
    threads.emplace_back([&, i] { run_producer(i, port, stop, h, fatal_errors); });
  }
  // The kills, spread over the run: down for 0.3-2.3 s each (longer than the transaction
  // timeout at times).
  std::mt19937 random(7);
  const auto run_for = std::chrono::seconds(seconds);
  const auto started = std::chrono::steady_clock::now();
  for (int k = 0; k < kills; ++k) {
    std::this_thread::sleep_until(started + run_for * (k + 1) / (kills + 1));
    ASSERT_TRUE(broker.kill(SIGKILL));
    // Every other kill outlasts the transaction timeout (1.5 s) by far: transactions open at
    // the kill are then old enough at the restart for the coordinator to abort them and fence
    // their producers, unless the producers' retries win the race.
    const int down_ms = k % 2 == 1 ? 3000 + static_cast<int>(random() % 1000)
                                   : 300 + static_cast<int>(random() % 2000);
    std::this_thread::sleep_for(std::chrono::milliseconds(down_ms));
    ASSERT_TRUE(broker.start()) << broker.output();
  }
  std::this_thread::sleep_until(started + run_for);
  stop = true;
  for (auto& t : threads) t.join();

  // Read everything committed.
  auto [rc, out] = run_command("timeout 60 kcat -C -q -e -b 127.0.0.1:" + std::to_string(port) +
                               " -X isolation.level=read_committed -t " + topic +
                               " -o beginning -f '%p %o %s\\n'");
  ASSERT_EQ(rc, 0) << out;
  broker.kill(SIGTERM);

  // value -> (transaction index, outcome)
  std::map<std::string, std::pair<size_t, outcome>> written;
  size_t committed = 0, aborted = 0, unknown = 0;
  for (size_t t = 0; t < h.txns.size(); ++t) {
    const auto& txn = h.txns[t];
    (txn.result == outcome::committed ? committed
     : txn.result == outcome::aborted ? aborted
                                      : unknown)++;
    for (const auto& r : txn.records) written[r.value] = {t, txn.result};
  }
  std::map<std::string, int> reads;
  std::map<size_t, size_t> read_per_txn;
  std::map<std::pair<int32_t, std::string>, int64_t> last_number;  // (partition, producer)
  std::vector<std::string> anomalies;
  std::istringstream in(out);
  size_t total_read = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    ++total_read;
    std::istringstream words(line);
    int32_t partition = -1;
    int64_t offset = -1;
    std::string value;
    words >> partition >> offset >> value;
    auto it = written.find(value);
    if (it == written.end()) {
      anomalies.push_back("garbage: " + line);
      continue;
    }
    if (++reads[value] == 2) anomalies.push_back("duplicate: " + line);
    if (it->second.second == outcome::aborted) anomalies.push_back("G1a (aborted read): " + line);
    ++read_per_txn[it->second.first];
    const std::string who = value.substr(0, value.find(':'));
    const int64_t number = std::stoll(value.substr(value.find(':') + 1));
    auto [last, inserted] = last_number.try_emplace({partition, who}, number);
    if (!inserted) {
      if (number <= last->second) anomalies.push_back("out-of-order: " + line);
      last->second = number;
    }
  }
  for (size_t t = 0; t < h.txns.size(); ++t) {
    const auto& txn = h.txns[t];
    const size_t seen = read_per_txn.contains(t) ? read_per_txn[t] : 0;
    if (txn.result == outcome::committed) {
      for (const auto& r : txn.records) {
        if (!reads.contains(r.value)) {
          anomalies.push_back("lost-write: " + std::to_string(r.partition) + " " + r.value);
        }
      }
    } else if (txn.result == outcome::unknown && seen != 0 && seen != txn.records.size()) {
      anomalies.push_back("fractured: transaction " + std::to_string(t) + " read " +
                          std::to_string(seen) + " of " + std::to_string(txn.records.size()));
    }
  }
  std::cout << h.txns.size() << " transactions (" << committed << " committed, " << aborted
            << " aborted, " << unknown << " unknown), " << fatal_errors.load()
            << " producer instances replaced, " << kills << " broker kills, " << total_read
            << " records read\n";
  for (size_t i = 0; i < anomalies.size() && i < 30; ++i) std::cout << anomalies[i] << "\n";
  EXPECT_TRUE(anomalies.empty()) << anomalies.size() << " anomalies, the first: " << anomalies[0];
  EXPECT_GT(committed, 0u);
  EXPECT_GT(aborted, 0u);
}

}  // namespace
}  // namespace tarn::test
