// The per-destination sender (per_broker_sender.h) without sockets: the owner's `send` records
// its rounds and may be held, as a request that is out would hold it. What queues while a round
// is out goes in the next one, together; a held destination holds up no other; items kept for
// later come back at their time, before what queued meanwhile; stop() joins, and what is
// submitted after it is refused and left to the caller.
#include "broker/per_broker_sender.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace tarn::broker {
namespace {

using namespace std::chrono_literals;

// The rounds each destination was sent, and a gate per destination that holds its rounds (a
// request that is out) until opened.
class recorder {
 public:
  using sender = per_broker_sender<std::string>;

  void send(broker_link& link, std::vector<std::string>& batch,
            std::vector<sender::deferred>& again) {
    std::unique_lock lock(mu_);
    rounds_[link.node].push_back(batch);
    cv_.notify_all();
    cv_.wait(lock, [&] { return !held_.contains(link.node); });
    // An item named "again:N" comes back once, N ms later, as "retried:N".
    for (std::string& item : batch) {
      if (item.rfind("again:", 0) == 0) {
        const int ms = std::stoi(item.substr(6));
        again.push_back({"retried:" + std::to_string(ms),
                         sender::clock::now() + std::chrono::milliseconds(ms)});
      }
    }
  }
  void hold(int32_t node) {
    std::lock_guard lock(mu_);
    held_[node] = true;
  }
  void open(int32_t node) {
    std::lock_guard lock(mu_);
    held_.erase(node);
    cv_.notify_all();
  }
  // Waits until `node` has had `n` rounds; its rounds.
  std::vector<std::vector<std::string>> wait_rounds(int32_t node, size_t n) {
    std::unique_lock lock(mu_);
    EXPECT_TRUE(cv_.wait_for(lock, 10s, [&] { return rounds_[node].size() >= n; }))
        << "node " << node << " had " << rounds_[node].size() << " rounds, not " << n;
    return rounds_[node];
  }
  size_t rounds(int32_t node) {
    std::lock_guard lock(mu_);
    return rounds_[node].size();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int32_t, std::vector<std::vector<std::string>>> rounds_;
  std::map<int32_t, bool> held_;
};

using sender = recorder::sender;

sender make_sender(recorder& r) {
  return sender("tarn-test",
                [&r](broker_link& link, std::vector<std::string>& batch,
                     std::vector<sender::deferred>& again) { r.send(link, batch, again); });
}

TEST(per_broker_sender, what_queues_while_a_round_is_out_goes_together_in_the_next) {
  recorder r;
  sender s = make_sender(r);
  r.hold(1);
  ASSERT_TRUE(s.submit(1, std::string("a")));
  r.wait_rounds(1, 1);  // "a" is out and held
  ASSERT_TRUE(s.submit(1, std::string("b")));
  ASSERT_TRUE(s.submit(1, std::string("c")));
  ASSERT_TRUE(s.submit(1, std::vector<std::string>{"d", "e"}));
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(r.rounds(1), 1u);  // nothing more goes while the first is out
  r.open(1);
  const auto rounds = r.wait_rounds(1, 2);
  ASSERT_EQ(rounds.size(), 2u);
  EXPECT_EQ(rounds[0], (std::vector<std::string>{"a"}));
  EXPECT_EQ(rounds[1], (std::vector<std::string>{"b", "c", "d", "e"}));
  EXPECT_EQ(s.destination_count(), 1u);
}

TEST(per_broker_sender, a_held_destination_holds_up_no_other) {
  recorder r;
  sender s = make_sender(r);
  r.hold(1);
  ASSERT_TRUE(s.submit(1, std::string("to-1")));
  r.wait_rounds(1, 1);
  // Broker 1 answers nothing; broker 2's items go meanwhile, each round as it comes.
  ASSERT_TRUE(s.submit(2, std::string("x")));
  EXPECT_EQ(r.wait_rounds(2, 1).at(0), (std::vector<std::string>{"x"}));
  ASSERT_TRUE(s.submit(2, std::string("y")));
  EXPECT_EQ(r.wait_rounds(2, 2).at(1), (std::vector<std::string>{"y"}));
  EXPECT_EQ(s.destination_count(), 2u);
  EXPECT_EQ(r.rounds(1), 1u);
  r.open(1);
  s.stop();
}

TEST(per_broker_sender, items_kept_for_later_come_back_at_their_time_first) {
  recorder r;
  sender s = make_sender(r);
  const auto start = sender::clock::now();
  ASSERT_TRUE(s.submit(3, std::vector<std::string>{"again:80", "a"}));
  r.wait_rounds(3, 1);
  // Due now: goes at once, before the retry is due.
  ASSERT_TRUE(s.submit(3, std::string("b")));
  r.wait_rounds(3, 2);
  // Queued while a round is out that ends after the retry is due: the next round has both, the
  // retry first.
  r.hold(3);
  ASSERT_TRUE(s.submit(3, std::string("c")));
  r.wait_rounds(3, 3);
  ASSERT_TRUE(s.submit(3, std::string("d")));
  std::this_thread::sleep_for(100ms);
  r.open(3);
  const auto rounds = r.wait_rounds(3, 4);
  EXPECT_GE(sender::clock::now() - start, 80ms);
  ASSERT_EQ(rounds.size(), 4u);
  EXPECT_EQ(rounds[0], (std::vector<std::string>{"again:80", "a"}));
  EXPECT_EQ(rounds[1], (std::vector<std::string>{"b"}));
  EXPECT_EQ(rounds[2], (std::vector<std::string>{"c"}));
  EXPECT_EQ(rounds[3], (std::vector<std::string>{"retried:80", "d"}));
}

TEST(per_broker_sender, stop_joins_and_refuses_what_comes_after) {
  recorder r;
  std::string late = "late";
  {
    sender s = make_sender(r);
    ASSERT_TRUE(s.submit(1, std::string("a")));
    r.wait_rounds(1, 1);
    // A retry far in the future is dropped, not waited for.
    ASSERT_TRUE(s.submit(2, std::string("again:60000")));
    r.wait_rounds(2, 1);
    const auto asked = sender::clock::now();
    s.stop();
    EXPECT_LT(sender::clock::now() - asked, 5s);
    EXPECT_TRUE(s.stopping());
    EXPECT_FALSE(s.submit(1, std::move(late)));
    std::vector<std::string> more{"m"};
    EXPECT_FALSE(s.submit(4, std::move(more)));
    EXPECT_EQ(more, (std::vector<std::string>{"m"}));
    EXPECT_EQ(s.destination_count(), 2u);  // no thread started for 4
    s.stop();                              // again: nothing to do
  }
  EXPECT_EQ(late, "late");  // left to the caller
  EXPECT_EQ(r.rounds(2), 1u);
}

TEST(per_broker_sender, a_round_may_submit_to_another_destination) {
  // The share-state persister forwards a call whose coordinator moved from its destination's
  // round: submit() from `send` takes no lock the round holds.
  std::mutex mu;
  std::condition_variable cv;
  std::map<int32_t, std::vector<std::string>> got;
  sender* self = nullptr;
  sender s("tarn-test",
           [&](broker_link& link, std::vector<std::string>& batch, std::vector<sender::deferred>&) {
             for (std::string& item : batch) {
               if (link.node == 1 && item == "moved") {
                 ASSERT_TRUE(self->submit(2, std::move(item)));
                 continue;
               }
               std::lock_guard lock(mu);
               got[link.node].push_back(item);
               cv.notify_all();
             }
           });
  self = &s;
  ASSERT_TRUE(s.submit(1, std::vector<std::string>{"stays", "moved"}));
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return got[1].size() == 1 && got[2].size() == 1; }));
  EXPECT_EQ(got[1], (std::vector<std::string>{"stays"}));
  EXPECT_EQ(got[2], (std::vector<std::string>{"moved"}));
}

}  // namespace
}  // namespace tarn::broker
