// etcd_session (a lease renewed on a thread), create_on_lease (registration) and
// controller_election (create-if-absent on a key, re-run whenever the key goes away).
#include "cluster/etcd_session.h"

#include <algorithm>
#include <chrono>

namespace tarn::cluster::etcd {

result<std::unique_ptr<etcd_session>, etcd_error> etcd_session::open(session_options options,
                                                                     lost_handler on_lost) {
  // A renewal that hangs (etcd unreachable: packets dropped rather than refused) must fail in
  // time for the loss to be noticed about when etcd expires the lease, not a whole request
  // timeout later: the broker must stop leading once the others may have taken over.
  client_options renewals = options.client;
  renewals.request_timeout_ms = std::clamp<int64_t>(
      options.heartbeat_interval_ms, 500, std::max<int64_t>(renewals.request_timeout_ms, 500));
  auto client = etcd_client::create(renewals);
  if (!client) return fail(client.error());
  // etcd's TTLs are whole seconds: round the session timeout up, never below one second.
  const int64_t ttl_s = std::max<int64_t>(1, (options.session_timeout_ms + 999) / 1000);
  auto lease = (*client)->lease_grant(ttl_s);
  if (!lease) return fail(lease.error());
  return std::unique_ptr<etcd_session>(
      new etcd_session(std::move(options), std::move(*client), lease->id, std::move(on_lost)));
}

etcd_session::etcd_session(session_options options, std::unique_ptr<etcd_client> client,
                           int64_t lease_id, lost_handler on_lost)
    : options_(std::move(options)),
      client_(std::move(client)),
      lease_id_(lease_id),
      on_lost_(std::move(on_lost)) {
  thread_ = std::thread([this] { run(); });
}

etcd_session::~etcd_session() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  thread_.join();
  if (!lost_.load()) (void)client_->lease_revoke(lease_id_);  // best effort: else it expires
}

void etcd_session::run() {
  using clock = std::chrono::steady_clock;
  auto last_renewal = clock::now();
  const auto interval = std::chrono::milliseconds(options_.heartbeat_interval_ms);
  const auto timeout = std::chrono::milliseconds(options_.session_timeout_ms);
  clock::duration wait = interval;
  while (true) {
    {
      std::unique_lock lock(mu_);
      if (cv_.wait_for(lock, wait, [this] { return stopping_; })) return;
    }
    wait = interval;
    auto ttl = client_->lease_keep_alive(lease_id_);
    if (ttl && *ttl > 0) {
      last_renewal = clock::now();
      continue;
    }
    etcd_error why;
    if (ttl) {
      why = {etcd_error::not_found, "the session's lease expired"};
    } else if (clock::now() - last_renewal >= timeout) {
      why = {ttl.error().code, "no lease renewal for broker.session.timeout.ms (" +
                                   std::to_string(options_.session_timeout_ms) +
                                   " ms): " + ttl.error().message};
    } else {
      // etcd unreachable for now: the next renewal may get through in time; it is tried no
      // later than the session's end, so the loss is noticed within a heartbeat of it.
      wait = std::min<clock::duration>(
          interval, std::max<clock::duration>(clock::duration::zero(),
                                              timeout - (clock::now() - last_renewal)));
      continue;
    }
    lost_.store(true);
    if (on_lost_) on_lost_(why);
    return;
  }
}

result<int64_t, etcd_error> create_on_lease(etcd_client& client, const std::string& key,
                                            const std::string& value, int64_t lease) {
  txn_request t;
  t.compares.push_back(
      {key, compare::target_kind::create_revision, compare::result_kind::equal, 0, {}});
  t.success.push_back(request_op::put(key, value, lease));
  t.failure.push_back(request_op::range(key));
  auto r = client.txn(t);
  if (!r) return fail(r.error());
  if (!r->succeeded) {
    std::string holder;
    if (!r->responses.empty() && !r->responses[0].kvs.empty()) {
      holder = r->responses[0].kvs[0].value;
    }
    return fail(etcd_error{etcd_error::failed_precondition,
                           "'" + key + "' is already held (by '" + holder + "')"});
  }
  return r->revision;  // the put's revision: the key's create revision
}

controller_election::controller_election(client_options options, std::string key,
                                         std::string candidate, int64_t lease,
                                         change_handler on_change)
    : options_(std::move(options)),
      key_(std::move(key)),
      candidate_(std::move(candidate)),
      lease_(lease),
      on_change_(std::move(on_change)) {
  thread_ = std::thread([this] {
    auto client = etcd_client::create(options_);
    if (!client) return;  // invalid endpoints: etcd_session::open refused them already
    while (true) {
      const int64_t from = settle(**client);
      std::unique_lock lock(mu_);
      if (stopping_) break;
      if (from == 0) {
        // etcd unreachable: try again shortly.
        cv_.wait_for(lock, std::chrono::milliseconds(200), [this] { return stopping_; });
        continue;
      }
      wake_ = false;
      lock.unlock();
      // Anything that happens to the key (the controller's lease ending deletes it) or to the
      // watch wakes the loop to read the key again.
      auto watch = std::make_unique<etcd_watch>(
          options_, key_, std::string(), from,
          [this](const watch_response& w) {
            if (w.events.empty()) return;
            std::lock_guard l(mu_);
            wake_ = true;
            cv_.notify_all();
          },
          [this](const etcd_error&) {
            std::lock_guard l(mu_);
            wake_ = true;
            cv_.notify_all();
          });
      lock.lock();
      cv_.wait(lock, [this] { return stopping_ || wake_; });
      const bool stop = stopping_;
      lock.unlock();
      watch.reset();  // joins the watch's thread; its callbacks take mu_, so not under it
      if (stop) break;
    }
  });
}

controller_election::~controller_election() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  thread_.join();
}

int64_t controller_election::settle(etcd_client& client) {
  auto current = client.range(key_);
  if (!current) return 0;
  std::string controller;
  int64_t epoch = 0;
  bool is_controller = false;
  int64_t revision = current->revision;
  if (current->kvs.empty()) {
    auto won = create_on_lease(client, key_, candidate_, lease_);
    if (won) {
      controller = candidate_;
      epoch = *won;
      is_controller = true;
      revision = *won;
    } else if (won.error().code == etcd_error::failed_precondition) {
      return settle(client);  // another candidate was quicker: read who
    } else {
      return 0;
    }
  } else {
    controller = current->kvs[0].value;
    epoch = current->kvs[0].create_revision;
    // By lease, not by value: a broker restarted under the same id is not the controller its
    // previous life still holds the key for (until that lease expires).
    is_controller = current->kvs[0].lease == lease_;
  }
  if (epoch != reported_epoch_) {
    reported_epoch_ = epoch;
    if (on_change_) on_change_(is_controller, controller, epoch);
  }
  return revision + 1;
}

}  // namespace tarn::cluster::etcd
