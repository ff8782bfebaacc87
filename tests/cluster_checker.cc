// The fault-injection checker of cluster_checker.h: the analysis of a history, and a run (writer,
// reader and nemesis threads against a cluster_harness, then the final read).
#include "cluster_checker.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "tarn/consumer.h"
#include "tarn/producer.h"

namespace tarn::test::checker {

using namespace std::chrono_literals;

namespace {

using position = std::pair<int32_t, int64_t>;  // (partition, offset)

std::string at(const position& p) {
  return std::to_string(p.first) + "/" + std::to_string(p.second);
}

}  // namespace

analysis analyze(const history& h) {
  analysis a;
  a.final_read_complete = h.final_read_complete;
  std::unordered_map<std::string_view, const write_op*> written;
  for (const auto& w : h.writes) {
    ++a.writes;
    switch (w.outcome) {
      case write_outcome::acknowledged:
        ++a.acknowledged;
        break;
      case write_outcome::failed:
        ++a.failed;
        break;
      case write_outcome::indeterminate:
        ++a.indeterminate;
        break;
    }
    written.emplace(w.value, &w);
  }
  // Every observation of a position: the acks and the reads. Ordered, for stable reports.
  std::map<position, std::set<std::string_view>> values_at;
  std::map<std::string_view, std::set<position>> positions_of;
  // Who saw a value at a position (an ack, a read during the run, the final read): the reports
  // name it, as an anomaly's cause differs with it (a wrong ack is the producer's or the
  // leader's answer; a wrong read is what a broker served).
  std::map<std::pair<std::string_view, position>, std::set<std::string_view>> seen_by;
  for (const auto& w : h.writes) {
    if (w.outcome != write_outcome::acknowledged) continue;
    values_at[{w.partition, w.offset}].insert(w.value);
    positions_of[w.value].insert({w.partition, w.offset});
    seen_by[{w.value, {w.partition, w.offset}}].insert("ack");
  }
  std::unordered_set<std::string_view> read_any, read_final;
  std::map<std::string_view, position> first_read;  // for messages
  for (const auto& r : h.reads) {
    ++a.reads;
    if (r.final) {
      ++a.final_reads;
      read_final.insert(r.value);
    }
    read_any.insert(r.value);
    first_read.emplace(r.value, position{r.partition, r.offset});
    values_at[{r.partition, r.offset}].insert(r.value);
    positions_of[r.value].insert({r.partition, r.offset});
    seen_by[{r.value, {r.partition, r.offset}}].insert(r.final ? "final read" : "read");
  }
  auto sources = [&](std::string_view value, const position& pos) {
    std::string out;
    for (const auto& s : seen_by[{value, pos}]) out += (out.empty() ? "" : ", ") + std::string(s);
    return " (" + out + ")";
  };

  for (const auto& [pos, values] : values_at) {
    if (values.size() < 2) continue;
    std::string line = at(pos) + " holds";
    for (const auto& v : values) line += " " + std::string(v) + sources(v, pos);
    a.inconsistent_offsets.push_back(std::move(line));
  }
  for (const auto& [value, positions] : positions_of) {
    if (positions.size() < 2) continue;
    std::string line = std::string(value) + " at";
    for (const auto& p : positions) line += " " + at(p) + sources(value, p);
    a.duplicates.push_back(std::move(line));
  }
  for (const auto& [value, pos] : first_read) {
    auto it = written.find(value);
    if (it == written.end()) {
      a.phantoms.push_back(std::string(value) + " read at " + at(pos) + ", never sent");
    } else if (it->second->outcome == write_outcome::failed) {
      a.phantoms.push_back(std::string(value) + " read at " + at(pos) +
                           ", its send was refused before it left the client");
    }
  }
  if (h.final_read_complete) {
    for (const auto& w : h.writes) {
      if (w.outcome == write_outcome::acknowledged && !read_final.contains(w.value)) {
        a.lost.push_back(w.value + " acknowledged at " + at({w.partition, w.offset}) +
                         ", absent from the final read");
      }
    }
    // Read during the run, so below the high watermark then: it must survive too.
    for (const auto& [value, pos] : first_read) {
      if (read_final.contains(value)) continue;
      auto it = written.find(value);
      if (it != written.end() && it->second->outcome == write_outcome::acknowledged) continue;
      a.lost.push_back(std::string(value) + " read at " + at(pos) +
                       " during the run, absent from the final read");
    }
  }
  // Per (writer, instance, partition), the acknowledged offsets in send order must rise.
  std::map<std::tuple<int, int, int32_t>, std::vector<const write_op*>> sent_by;
  for (const auto& w : h.writes) {
    if (w.outcome == write_outcome::acknowledged) {
      sent_by[{w.writer, w.instance, w.partition}].push_back(&w);
    }
  }
  for (auto& [who, ops] : sent_by) {
    std::stable_sort(ops.begin(), ops.end(), [](const write_op* x, const write_op* y) {
      return x->sequence < y->sequence;
    });
    for (size_t i = 1; i < ops.size(); ++i) {
      if (ops[i]->sequence > ops[i - 1]->sequence && ops[i]->offset < ops[i - 1]->offset) {
        a.reordered.push_back(ops[i]->value + " at " + at({ops[i]->partition, ops[i]->offset}) +
                              ", sent after " + ops[i - 1]->value + " at " +
                              at({ops[i - 1]->partition, ops[i - 1]->offset}));
      }
    }
  }
  for (const auto& w : h.writes) {
    if (w.outcome != write_outcome::indeterminate) continue;
    if (read_any.contains(w.value)) {
      ++a.recovered;
    } else {
      a.unseen.push_back(w.value + " (partition " + std::to_string(w.partition) + ")");
    }
  }
  return a;
}

std::string analysis::summary(size_t examples) const {
  std::ostringstream out;
  out << writes << " writes (" << acknowledged << " acknowledged, " << failed << " failed, "
      << indeterminate << " indeterminate: " << recovered << " read, " << unseen.size()
      << " unseen), " << reads << " reads (" << final_reads << " in the final read"
      << (final_read_complete ? "" : ", which did not complete") << "); anomalies: " << lost.size()
      << " lost, " << duplicates.size() << " duplicate, " << inconsistent_offsets.size()
      << " inconsistent offsets, " << phantoms.size() << " phantom, " << reordered.size()
      << " reordered: " << (valid() ? "valid" : "INVALID") << "\n";
  auto list = [&](const char* kind, const std::vector<std::string>& items) {
    for (size_t i = 0; i < items.size() && i < examples; ++i) {
      out << "  " << kind << ": " << items[i] << "\n";
    }
    if (items.size() > examples) {
      out << "  " << kind << ": ... " << items.size() - examples << " more\n";
    }
  };
  list("lost", lost);
  list("duplicate", duplicates);
  list("inconsistent offset", inconsistent_offsets);
  list("phantom", phantoms);
  list("reordered", reordered);
  list("unseen", unseen);
  return out.str();
}

namespace {

using client::consumer;
using client::producer;
using client::topic_partition;
using steady = std::chrono::steady_clock;

std::vector<std::pair<std::string, std::string>> producer_properties(const std::string& bootstrap,
                                                                     int writer, const options& o) {
  // Idempotence needs acks=all; the weaker settings (a check of the checker) go without it.
  const bool all = o.acks == "all" || o.acks == "-1";
  return {{"bootstrap.servers", bootstrap},
          {"client.id", "checker-writer-" + std::to_string(writer)},
          {"acks", o.acks},
          {"enable.idempotence", all ? "true" : "false"},
          {"max.in.flight.requests.per.connection", "5"},
          {"linger.ms", "5"},
          // Short enough that a paused leader is given up on and the new one found within a
          // fault; delivery.timeout.ms outlasts the longest fault and its fail-over.
          {"request.timeout.ms", "5000"},
          {"delivery.timeout.ms", "30000"},
          {"max.block.ms", "10000"},
          {"retry.backoff.ms", "50"},
          {"retry.backoff.max.ms", "500"},
          {"reconnect.backoff.ms", "50"},
          {"reconnect.backoff.max.ms", "500"}};
}

std::unique_ptr<consumer> make_consumer(const std::string& bootstrap, const std::string& id) {
  auto c = consumer::create({{"bootstrap.servers", bootstrap},
                             {"client.id", id},
                             {"auto.offset.reset", "earliest"},
                             {"enable.auto.commit", "false"},
                             {"request.timeout.ms", "5000"},
                             {"fetch.max.wait.ms", "200"}});
  return c ? std::move(*c) : nullptr;
}

std::vector<topic_partition> partitions_of(const options& o) {
  std::vector<topic_partition> out;
  for (int32_t p = 0; p < o.partitions; ++p) out.push_back({o.topic, p});
  return out;
}

// One writer: its own idempotent producer, unique values "w<writer>-<sequence>", a steady rate,
// a bounded number in flight. A producer that fails fatally is replaced by a new one.
class writer {
 public:
  writer(int index, const std::string& bootstrap, const options& o)
      : index_(index),
        bootstrap_(bootstrap),
        o_(o),
        random_(o.seed * 7919u + static_cast<uint32_t>(index)) {}

  // Runs until `stop`; then closes the producer, giving what is in flight 30 s to complete.
  void run(const std::atomic<bool>& stop) {
    const auto interval = std::chrono::microseconds(1'000'000 / std::max(1, o_.writes_per_second));
    auto next = steady::now();
    int64_t sequence = 0;
    while (!stop) {
      if (!p_ || replace_) {
        if (p_) p_->close(std::chrono::milliseconds(0));  // what it held ends indeterminate
        replace_ = false;
        auto created = producer::create(producer_properties(bootstrap_, index_, o_));
        if (!created) {
          std::this_thread::sleep_for(200ms);
          continue;
        }
        p_ = std::move(*created);
        ++instances_;
      }
      while (in_flight_ >= max_in_flight && !stop) std::this_thread::sleep_for(1ms);
      std::this_thread::sleep_until(next);
      next += interval;
      if (steady::now() > next + 1s) next = steady::now();  // no burst after a stall

      size_t i;
      {
        std::lock_guard lock(mutex_);
        i = ops_.size();
        ops_.push_back({"w" + std::to_string(index_) + "-" + std::to_string(sequence),
                        static_cast<int32_t>(random_() % static_cast<uint32_t>(o_.partitions)),
                        write_outcome::indeterminate, -1, index_, instances_ - 1, sequence});
        ++sequence;
      }
      client::producer_record record;
      record.topic = o_.topic;
      std::string value;
      {
        std::lock_guard lock(mutex_);
        record.partition = ops_[i].partition;
        value = ops_[i].value;
      }
      record.value = value;
      ++in_flight_;
      auto sent = p_->send_async(
          record, [this, i](const client::record_metadata& m, const client::producer_error* error) {
            {
              std::lock_guard lock(mutex_);
              write_op& op = ops_[i];
              if (error == nullptr) {
                op.outcome = write_outcome::acknowledged;
                op.offset = m.offset;
              } else if (op.outcome != write_outcome::failed) {
                op.outcome = write_outcome::indeterminate;
              }
            }
            if (error != nullptr && error->code == client::producer_errc::fatal) replace_ = true;
            --in_flight_;
          });
      if (!sent) {
        std::lock_guard lock(mutex_);
        ops_[i].outcome = write_outcome::failed;  // never queued: never sent
        if (sent.error().code == client::producer_errc::fatal) replace_ = true;
      }
    }
    if (p_) p_->close(std::chrono::seconds(30));
  }

  std::vector<write_op> take() {
    std::lock_guard lock(mutex_);
    return {ops_.begin(), ops_.end()};
  }
  int instances() const { return instances_; }

 private:
  static constexpr int max_in_flight = 200;

  int index_;
  std::string bootstrap_;
  const options& o_;
  std::mt19937 random_;
  std::unique_ptr<producer> p_;
  std::atomic<bool> replace_{false};
  std::atomic<int> in_flight_{0};
  int instances_ = 0;
  std::mutex mutex_;
  std::deque<write_op> ops_;  // a deque: the callbacks' references stay valid as it grows
};

// One reader during the run: every partition from the beginning, following the end; every 2 s it
// goes back up to 300 offsets in one partition to read them again (a second read of an offset
// is what can show it changed). A consumer that fails is replaced, continuing where it was.
class reader {
 public:
  reader(int index, const std::string& bootstrap, const options& o)
      : index_(index),
        bootstrap_(bootstrap),
        o_(o),
        random_(o.seed * 104729u + static_cast<uint32_t>(index)) {}

  void run(const std::atomic<bool>& stop) {
    std::map<int32_t, int64_t> next;  // partition -> next offset to read
    std::unique_ptr<consumer> c;
    auto last_reread = steady::now();
    while (!stop) {
      if (!c) {
        c = make_consumer(bootstrap_, "checker-reader-" + std::to_string(index_));
        if (!c) {
          std::this_thread::sleep_for(200ms);
          continue;
        }
        c->assign(partitions_of(o_));
        for (const auto& tp : partitions_of(o_)) {
          auto it = next.find(tp.partition);
          c->seek(tp, it == next.end() ? client::offset_beginning : it->second);
        }
      }
      auto records = c->poll(200ms);
      if (!records) {
        ++restarts_;
        c.reset();
        continue;
      }
      for (const auto& r : *records) {
        reads_.push_back({r.partition, r.offset, r.value.value_or(""), false});
        next[r.partition] = r.offset + 1;
      }
      if (steady::now() - last_reread > 2s) {
        last_reread = steady::now();
        const int32_t p = static_cast<int32_t>(random_() % static_cast<uint32_t>(o_.partitions));
        if (auto it = next.find(p); it != next.end()) {
          c->seek({o_.topic, p}, std::max<int64_t>(0, it->second - 300));
        }
      }
    }
    if (c) (void)c->close();
  }

  std::vector<read_op>& reads() { return reads_; }
  int restarts() const { return restarts_; }

 private:
  int index_;
  std::string bootstrap_;
  const options& o_;
  std::mt19937 random_;
  std::vector<read_op> reads_;
  int restarts_ = 0;
};

// Everything in the topic, from the beginning to the end offsets taken before it starts.
bool final_read(const std::string& bootstrap, const options& o, std::vector<read_op>& out,
                std::chrono::milliseconds timeout) {
  const auto deadline = steady::now() + timeout;
  std::map<int32_t, int64_t> next;
  std::optional<std::map<topic_partition, int64_t>> ends;
  while (steady::now() < deadline) {
    auto c = make_consumer(bootstrap, "checker-final-read");
    if (!c) return false;
    c->assign(partitions_of(o));
    for (const auto& tp : partitions_of(o)) {
      auto it = next.find(tp.partition);
      c->seek(tp, it == next.end() ? client::offset_beginning : it->second);
    }
    while (!ends && steady::now() < deadline) {
      auto e = c->end_offsets(partitions_of(o));
      if (e) {
        ends = *e;
      } else {
        std::this_thread::sleep_for(200ms);
      }
    }
    auto done = [&] {
      for (const auto& [tp, end] : *ends) {
        auto it = next.find(tp.partition);
        if ((it == next.end() ? 0 : it->second) < end) return false;
      }
      return true;
    };
    while (ends && !done() && steady::now() < deadline) {
      auto records = c->poll(500ms);
      if (!records) break;  // a new consumer, where this one was
      for (const auto& r : *records) {
        out.push_back({r.partition, r.offset, r.value.value_or(""), true});
        next[r.partition] = r.offset + 1;
      }
    }
    if (ends && done()) {
      (void)c->close();
      return true;
    }
  }
  return false;
}

}  // namespace

run_result run(cluster_harness& cluster, const options& o) {
  run_result result;
  const auto started = steady::now();
  std::mutex log_mutex;
  auto note = [&](const std::string& what) {
    std::lock_guard lock(log_mutex);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - started);
    char stamp[32];
    std::snprintf(stamp, sizeof stamp, "+%.1fs ", static_cast<double>(ms.count()) / 1000.0);
    result.nemesis_log.push_back(stamp + what);
  };
  // Runs `action`, then notes it at its start time with how long it took and whether it failed.
  auto timed = [&](const std::string& what, const auto& action) {
    const auto begun = steady::now();
    const bool ok = action();
    const auto at_ms = std::chrono::duration_cast<std::chrono::milliseconds>(begun - started);
    const auto took_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - begun);
    char line[200];
    std::snprintf(line, sizeof line, "+%.1fs %s (%.1f s)%s",
                  static_cast<double>(at_ms.count()) / 1000.0, what.c_str(),
                  static_cast<double>(took_ms.count()) / 1000.0, ok ? "" : " FAILED");
    std::lock_guard lock(log_mutex);
    result.nemesis_log.push_back(line);
    return ok;
  };

  if (auto error =
          create_topic(cluster, o.topic, o.partitions, o.replication_factor, o.topic_configs);
      !error.empty()) {
    result.error = "CreateTopics " + o.topic + ": " + error;
    return result;
  }
  if (!wait_fully_replicated(cluster, o.topic, 60s)) {
    result.error = "topic " + o.topic + " not fully replicated 60 s after its creation";
    return result;
  }
  note("topic " + o.topic + " created and fully replicated");
  const std::string bootstrap = cluster.bootstrap_servers();

  std::atomic<bool> stop_writers{false}, stop_readers{false}, stop_nemesis{false};
  std::vector<std::unique_ptr<writer>> writers;
  std::vector<std::unique_ptr<reader>> readers;
  std::vector<std::thread> threads;
  for (int i = 0; i < o.writers; ++i) {
    writers.push_back(std::make_unique<writer>(i, bootstrap, o));
    threads.emplace_back([&w = *writers.back(), &stop_writers] { w.run(stop_writers); });
  }
  for (int i = 0; i < o.readers; ++i) {
    readers.push_back(std::make_unique<reader>(i, bootstrap, o));
    threads.emplace_back([&r = *readers.back(), &stop_readers] { r.run(stop_readers); });
  }

  // The nemesis: one fault at a time on a random node, healed (and the topic fully replicated
  // again) before the next, so at most one node is ever down and min.insync.replicas=2 holds.
  std::string nemesis_error;
  std::thread nemesis([&] {
    if (o.faults.empty()) return;
    std::mt19937 random(o.seed);
    auto between = [&](std::chrono::milliseconds lo, std::chrono::milliseconds hi) {
      const auto span = static_cast<uint32_t>(std::max<int64_t>(1, (hi - lo).count()));
      return lo + std::chrono::milliseconds(random() % span);
    };
    auto sleep_unless_stopped = [&](std::chrono::milliseconds d) {
      const auto until = steady::now() + d;
      while (!stop_nemesis && steady::now() < until) std::this_thread::sleep_for(50ms);
    };
    // The kinds in turn from a random one, so a short run has each; the nodes at random.
    size_t turn = random() % o.faults.size();
    while (!stop_nemesis) {
      sleep_unless_stopped(between(o.quiet_min, o.quiet_max));
      if (stop_nemesis) break;
      const int node = static_cast<int>(random() % static_cast<uint32_t>(cluster.node_count()));
      // The other end of a cut link: another node.
      const int other = (node + 1 +
                         static_cast<int>(random() % static_cast<uint32_t>(
                                                         std::max(1, cluster.node_count() - 1)))) %
                        cluster.node_count();
      const fault f = o.faults[turn++ % o.faults.size()];
      const int member = static_cast<int>(
          random() % static_cast<uint32_t>(std::max(1, cluster.metadata_member_count())));
      const auto lasts = between(o.fault_min, o.fault_max);
      const std::string who = "node " + std::to_string(node + 1);
      const std::string metadata_member = "metadata member " + std::to_string(member + 1);
      std::string what, heal;
      switch (f) {
        case fault::kill:
          what = "kill -9 " + who;
          heal = "restart " + who;
          break;
        case fault::stop:
          what = "stop " + who;
          heal = "restart " + who;
          break;
        case fault::pause:
          what = "pause " + who;
          heal = "resume " + who;
          break;
        case fault::isolate:
          what = "isolate " + who + " from the other nodes";
          heal = "heal the partitions";
          break;
        case fault::cut:
          what = "cut the link between " + who + " and node " + std::to_string(other + 1);
          heal = "heal the partitions";
          break;
        case fault::kill_metadata:
          what = "kill -9 " + metadata_member;
          heal = "restart " + metadata_member;
          break;
      }
      const bool done = timed(what, [&] {
        switch (f) {
          case fault::kill:
            return cluster.kill(node);
          case fault::stop:
            return cluster.stop(node);
          case fault::pause:
            return cluster.pause(node);
          case fault::isolate:
            return cluster.isolate(node);
          case fault::cut:
            return cluster.cut(node, other);
          case fault::kill_metadata:
            return cluster.kill_metadata_member(member);
        }
        return false;
      });
      if (!done) {
        nemesis_error = what + " failed";
        return;
      }
      std::this_thread::sleep_for(lasts);  // a fault always ends: no early stop here
      if (f == fault::isolate || f == fault::cut) {
        // What the partitions came to under the cut: whether a leader kept its leadership and
        // its ISR shrank (docs/reliability.md#8).
        std::string states = "before the heal:";
        if (auto d = describe_topic(cluster, o.topic)) {
          for (const auto& p : *d) {
            states += " p" + std::to_string(p.partition) + " leader " + std::to_string(p.leader) +
                      " ISR [";
            for (size_t i = 0; i < p.isr.size(); ++i) {
              states += (i ? "," : "") + std::to_string(p.isr[i]);
            }
            states += "]";
          }
        } else {
          states += " no node described the topic";
        }
        note(states);
      }
      const bool healed = timed(heal, [&] {
        switch (f) {
          case fault::pause:
            return cluster.resume(node);
          case fault::isolate:
          case fault::cut:
            return cluster.heal_partitions();
          case fault::kill:
          case fault::stop:
            return cluster.restart(node);
          case fault::kill_metadata:
            return cluster.restart_metadata_member(member);
        }
        return false;
      });
      if (!healed) {
        nemesis_error = "could not heal after: " + what;
        return;
      }
      timed("wait until the topic is fully replicated",
            [&] { return wait_fully_replicated(cluster, o.topic, o.heal_timeout); });
    }
  });

  std::this_thread::sleep_for(o.duration);
  stop_nemesis = true;
  nemesis.join();
  timed("end of the faults: wait until the topic is fully replicated",
        [&] { return wait_fully_replicated(cluster, o.topic, o.heal_timeout); });
  stop_writers = true;
  for (int i = 0; i < o.writers; ++i) threads[static_cast<size_t>(i)].join();
  note("writers stopped");
  stop_readers = true;
  for (size_t i = static_cast<size_t>(o.writers); i < threads.size(); ++i) threads[i].join();

  for (auto& w : writers) {
    auto ops = w->take();
    result.h.writes.insert(result.h.writes.end(), ops.begin(), ops.end());
    result.producer_instances += w->instances();
  }
  for (auto& r : readers) {
    result.h.reads.insert(result.h.reads.end(), r->reads().begin(), r->reads().end());
    result.consumer_restarts += r->restarts();
  }
  result.h.final_read_complete = final_read(bootstrap, o, result.h.reads, 120s);
  note(result.h.final_read_complete ? "final read complete" : "final read INCOMPLETE");
  result.error = nemesis_error;
  result.a = analyze(result.h);
  return result;
}

}  // namespace tarn::test::checker
