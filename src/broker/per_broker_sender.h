// What a broker sends to other brokers on its own behalf, one destination broker at a time: the
// transaction verifier's AddPartitionsToTxn (txn_verifier.h), the transaction marker sender's
// WriteTxnMarkers (txn_marker_sender.h) and the share-state persister's share-state RPCs
// (share_state_client.h). Each destination broker has its own queue, its own thread (started
// with its first item) and its own broker_connection, so a paused or slow broker holds up only
// what goes to it, and requests to different brokers are out at once (Kafka's
// InterBrokerSendThread over a non-blocking NetworkClient gets the same from its per-node
// connections).
//
// A destination's thread takes every item due in its queue, in order, as one round and hands it
// to the owner's `send`, which makes one request of the round (or a few: the owner decides what
// goes together), answers the items and may keep some for a later round of the same destination
// (`again`, each with the time it is due: a retry's backoff, or now for an item that may not go
// in the same request as another). So what is queued while a request is out goes in the next
// request, together, and a request is never held back to wait for more. Items kept for later go
// back to the front of the queue, before what was queued meanwhile.
//
// Threads: submit() and stop() from any thread; `send` on the destination's thread, with no lock
// of the sender held (it may submit, to its own destination or another). stop() drops what is
// queued: the broker is going down, and what waited for the answers goes with its connections.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "broker/broker_connection.h"

namespace tarn::broker {

// A destination broker as its thread sees it: the node id, the connection (connected by the
// owner's `send` when it needs it, connect_to_broker) and the buffer its responses land in.
struct broker_link {
  broker_link(int32_t node_id, std::string client_id) : node(node_id), conn(std::move(client_id)) {}
  const int32_t node;
  broker_connection conn;
  std::vector<uint8_t> buffer;
};

template <class Item>
class per_broker_sender {
 public:
  using clock = std::chrono::steady_clock;
  // An item kept for a later round of its destination, due at `not_before`.
  struct deferred {
    Item item;
    clock::time_point not_before;
  };
  // One round to `link`'s broker: `batch` holds what was due, in queue order; whatever is moved
  // to `again` goes back to the front of the queue.
  using send_fn = std::function<void(broker_link& link, std::vector<Item>& batch,
                                     std::vector<deferred>& again)>;

  // `client_id` names this broker in its requests (each connection's client id).
  per_broker_sender(std::string client_id, send_fn send)
      : client_id_(std::move(client_id)), send_(std::move(send)) {}
  ~per_broker_sender() { stop(); }
  per_broker_sender(const per_broker_sender&) = delete;
  per_broker_sender& operator=(const per_broker_sender&) = delete;

  // Queues `item` for broker `node`, due now. False once stopped: then `item` is left as it was
  // (the caller answers it).
  bool submit(int32_t node, Item&& item) {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    destination& d = destination_of(node);
    d.queued.push_back({std::move(item), clock::time_point{}});
    d.cv.notify_one();
    return true;
  }
  // The same for several items at once (in order); false, and `items` left, once stopped.
  bool submit(int32_t node, std::vector<Item>&& items) {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    destination& d = destination_of(node);
    for (Item& item : items) d.queued.push_back({std::move(item), clock::time_point{}});
    items.clear();
    d.cv.notify_one();
    return true;
  }

  // Stops and joins every destination's thread (a round in progress first ends: `send` may ask
  // stopping() to give its request up); what is queued is dropped. Idempotent; not from `send`.
  void stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      for (auto& [node, d] : destinations_) d->cv.notify_all();
    }
    // No destination is added once stopping_ is set, and none is removed before this.
    std::lock_guard joining(join_mu_);
    for (auto& [node, d] : destinations_) {
      if (d->thread.joinable()) d->thread.join();
    }
  }
  bool stopping() const {
    std::lock_guard lock(mu_);
    return stopping_;
  }
  // Destinations that have had a thread started (tests).
  size_t destination_count() const {
    std::lock_guard lock(mu_);
    return destinations_.size();
  }

 private:
  struct destination {
    destination(int32_t node, const std::string& client_id) : link(node, client_id) {}
    broker_link link;
    std::deque<deferred> queued;  // under mu_
    std::condition_variable cv;
    std::thread thread;
  };

  // Under mu_, not stopping.
  destination& destination_of(int32_t node) {
    auto& d = destinations_[node];
    if (!d) {
      d = std::make_unique<destination>(node, client_id_);
      destination* raw = d.get();
      d->thread = std::thread([this, raw] { run(*raw); });
    }
    return *d;
  }

  void run(destination& d) {
    std::vector<Item> batch;
    std::vector<deferred> again;
    for (;;) {
      {
        std::unique_lock lock(mu_);
        for (;;) {
          if (stopping_) return;
          // The items due, in order; the others keep their places.
          const auto now = clock::now();
          auto next = clock::time_point::max();
          std::deque<deferred> waiting;
          for (deferred& q : d.queued) {
            if (q.not_before <= now) {
              batch.push_back(std::move(q.item));
            } else {
              next = std::min(next, q.not_before);
              waiting.push_back(std::move(q));
            }
          }
          d.queued.swap(waiting);
          if (!batch.empty()) break;
          if (next == clock::time_point::max()) {
            d.cv.wait(lock);
          } else {
            d.cv.wait_until(lock, next);
          }
        }
      }
      send_(d.link, batch, again);
      batch.clear();
      if (!again.empty()) {
        std::lock_guard lock(mu_);
        d.queued.insert(d.queued.begin(), std::make_move_iterator(again.begin()),
                        std::make_move_iterator(again.end()));
        again.clear();
      }
    }
  }

  const std::string client_id_;
  const send_fn send_;
  std::mutex join_mu_;  // stop()'s, should two threads call it
  mutable std::mutex mu_;
  bool stopping_ = false;
  std::map<int32_t, std::unique_ptr<destination>> destinations_;
};

}  // namespace tarn::broker
