// cluster_membership: a broker's session, registration, controller candidacy and the live
// brokers it follows (cluster_membership.h); the cluster id agreed in etcd.
#include "cluster/cluster_membership.h"

#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <nlohmann/json.hpp>

namespace tarn::cluster {

using json = nlohmann::json;

const broker_endpoint* broker_registration::endpoint(std::string_view listener) const {
  for (const auto& l : listeners) {
    if (l.name == listener) return &l;
  }
  return nullptr;
}

std::string encode_broker_registration(const broker_registration& r) {
  json j;
  j["node_id"] = r.node_id;
  j["incarnation_id"] = r.incarnation_id;
  json listeners = json::array();
  for (const auto& l : r.listeners) {
    listeners.push_back({{"name", l.name}, {"host", l.host}, {"port", l.port}});
  }
  j["listeners"] = std::move(listeners);
  j["rack"] = r.rack ? json(*r.rack) : json(nullptr);
  // Only while true, so that a registration stays byte for byte what it was before the field.
  if (r.in_controlled_shutdown) j["in_controlled_shutdown"] = true;
  if (r.previous_broker_epoch >= 0) j["previous_broker_epoch"] = r.previous_broker_epoch;
  return j.dump();
}

std::optional<broker_registration> decode_broker_registration(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  auto int_field = [&](const json& o, const char* k) -> std::optional<int32_t> {
    auto it = o.find(k);
    if (it == o.end() || !it->is_number_integer()) return std::nullopt;
    const int64_t v = it->get<int64_t>();
    if (v < 0 || v > INT32_MAX) return std::nullopt;
    return static_cast<int32_t>(v);
  };
  auto string_field = [&](const json& o, const char* k) -> std::optional<std::string> {
    auto it = o.find(k);
    if (it == o.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
  };
  broker_registration r;
  auto id = int_field(j, "node_id");
  auto incarnation = string_field(j, "incarnation_id");
  auto listeners = j.find("listeners");
  if (!id || !incarnation || listeners == j.end() || !listeners->is_array()) return std::nullopt;
  r.node_id = *id;
  r.incarnation_id = *incarnation;
  for (const auto& l : *listeners) {
    if (!l.is_object()) return std::nullopt;
    auto name = string_field(l, "name");
    auto host = string_field(l, "host");
    auto port = int_field(l, "port");
    if (!name || !host || !port || *port > 65535) return std::nullopt;
    r.listeners.push_back({*name, *host, *port});
  }
  auto rack = j.find("rack");
  if (rack != j.end() && !rack->is_null()) {
    if (!rack->is_string()) return std::nullopt;
    r.rack = rack->get<std::string>();
  }
  auto shutting_down = j.find("in_controlled_shutdown");
  if (shutting_down != j.end()) {
    if (!shutting_down->is_boolean()) return std::nullopt;
    r.in_controlled_shutdown = shutting_down->get<bool>();
  }
  auto previous = j.find("previous_broker_epoch");
  if (previous != j.end()) {
    if (!previous->is_number_integer()) return std::nullopt;
    r.previous_broker_epoch = previous->get<int64_t>();
  }
  return r;
}

namespace {

// The node id at the end of a brokers/<id> key, or -1.
int32_t node_id_of_key(std::string_view key, std::string_view brokers_prefix) {
  if (!key.starts_with(brokers_prefix)) return -1;
  key.remove_prefix(brokers_prefix.size());
  int32_t id = -1;
  auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
  if (ec != std::errc() || end != key.data() + key.size()) return -1;
  return id;
}

}  // namespace

result<std::unique_ptr<cluster_membership>, std::string> cluster_membership::join(
    membership_options options, membership_events events) {
  std::unique_ptr<cluster_membership> m(
      new cluster_membership(std::move(options), std::move(events)));
  const membership_options& o = m->options_;
  auto session = m->open_session();
  if (!session) return fail("cannot open a session with etcd: " + session.error().message);
  m->session_ = std::move(*session);
  etcd::etcd_client& client = m->session_->client();

  const std::string brokers_prefix = o.prefix + "brokers/";
  auto registered = m->register_on(*m->session_);
  if (!registered) {
    if (registered.error().code == etcd::etcd_error::failed_precondition) {
      return fail(fmt::format(
          "broker {} is already registered by a live broker (DUPLICATE_BROKER_REGISTRATION: {}); "
          "node.id must be unique in the cluster",
          o.self.node_id, registered.error().message));
    }
    return fail("cannot register with etcd: " + registered.error().message);
  }
  m->broker_epoch_.store(*registered);

  auto brokers = client.range(brokers_prefix, etcd::prefix_end(brokers_prefix));
  if (!brokers) return fail("cannot read the live brokers from etcd: " + brokers.error().message);
  {
    std::lock_guard g(m->mu_);
    for (const auto& kv : brokers->kvs) {
      auto r = decode_broker_registration(kv.value);
      if (!r || r->node_id != node_id_of_key(kv.key, brokers_prefix)) continue;
      r->epoch = kv.create_revision;
      m->brokers_[r->node_id] = std::move(*r);
    }
  }
  cluster_membership* self = m.get();
  m->watch_ = std::make_unique<etcd::etcd_watch>(
      o.session.client, brokers_prefix, etcd::prefix_end(brokers_prefix), brokers->revision + 1,
      [self](const etcd::watch_response& w) { self->on_brokers(w); },
      [](const etcd::etcd_error&) {});
  m->start_election(m->session_->lease_id(), 0);
  m->rejoin_thread_ = std::thread([self] { self->run_rejoin(); });
  return m;
}

result<std::unique_ptr<etcd::etcd_session>, etcd::etcd_error> cluster_membership::open_session() {
  return etcd::etcd_session::open(options_.session, [this](const etcd::etcd_error& e) {
    std::lock_guard g(rejoin_mu_);
    session_lost_ = true;
    lost_why_ = e.message;
    rejoin_cv_.notify_all();
  });
}

result<int64_t, etcd::etcd_error> cluster_membership::register_on(etcd::etcd_session& session) {
  const std::string key = options_.prefix + "brokers/" + std::to_string(options_.self.node_id);
  return etcd::create_on_lease(session.client(), key, encode_broker_registration(options_.self),
                               session.lease_id());
}

void cluster_membership::start_election(int64_t lease, uint64_t generation) {
  election_ = std::make_unique<etcd::controller_election>(
      options_.session.client, options_.prefix + "controller",
      std::to_string(options_.self.node_id), lease,
      [this, generation](bool is_controller, const std::string& controller, int64_t epoch) {
        int32_t id = -1;
        std::from_chars(controller.data(), controller.data() + controller.size(), id);
        {
          std::lock_guard g(role_mu_);
          if (generation != generation_) return;  // the candidacy of a fenced session
          controller_epoch_.store(epoch);
          is_controller_.store(is_controller);
          controller_id_.store(id);
        }
        notify_listener();
      });
}

void cluster_membership::run_rejoin() {
  while (true) {
    std::string why;
    {
      std::unique_lock lock(rejoin_mu_);
      rejoin_cv_.wait(lock, [this] { return stopping_ || session_lost_; });
      if (stopping_) return;
      session_lost_ = false;
      why = lost_why_;
    }
    // Fenced: no longer the controller (its writes would be refused anyway: they compare the
    // controller key's create revision), and the broker leads nothing until it registers again.
    fenced_.store(true);
    {
      std::lock_guard g(role_mu_);
      ++generation_;
      is_controller_.store(false);
    }
    notify_listener();
    if (events_.fenced) events_.fenced(why);
    int64_t old_lease = 0;
    {
      std::unique_ptr<etcd::controller_election> election;
      std::unique_ptr<etcd::etcd_session> session;
      {
        std::lock_guard g(session_mu_);
        election = std::move(election_);
        session = std::move(session_);
      }
      if (session) old_lease = session->lease_id();
      election.reset();  // joins its thread; its late verdicts are ignored (generation)
      session.reset();   // its thread has ended; a lost session revokes nothing
    }
    while (!rejoin_once(old_lease)) {
      std::unique_lock lock(rejoin_mu_);
      if (rejoin_cv_.wait_for(lock, std::chrono::milliseconds(250), [this] { return stopping_; })) {
        return;
      }
    }
  }
}

bool cluster_membership::rejoin_once(int64_t old_lease) {
  {
    std::lock_guard g(rejoin_mu_);
    if (stopping_) return true;
  }
  auto session = open_session();
  if (!session) return false;  // etcd still unreachable
  // The old lease may outlive the loss noticed here by up to a second (etcd's TTLs are whole
  // seconds): given up now, so that the old registration does not hold the key.
  if (old_lease != 0) (void)(*session)->client().lease_revoke(old_lease);
  {
    // This process kept its logs through the loss: the registration it had ended cleanly, as
    // Kafka's broker that is fenced and unfenced keeps its epoch and its ELR places (KIP-966).
    std::lock_guard g(session_mu_);
    options_.self.previous_broker_epoch = broker_epoch_.load();
  }
  auto registered = register_on(**session);
  if (!registered) {
    if (registered.error().code != etcd::etcd_error::failed_precondition) return false;
    // The key is held. By the old lease (its revocation got lost; it expires within a second):
    // try again. By another: a live broker registered under this node.id while this one was
    // fenced, and this one cannot come back (Kafka's DUPLICATE_BROKER_REGISTRATION).
    const std::string key = options_.prefix + "brokers/" + std::to_string(options_.self.node_id);
    auto held = (*session)->client().range(key);
    if (!held || held->kvs.empty() || held->kvs[0].lease == old_lease) return false;
    if (events_.fatal) {
      events_.fatal(
          fmt::format("broker {} cannot register again: another live broker holds its node.id "
                      "(DUPLICATE_BROKER_REGISTRATION: {})",
                      options_.self.node_id, registered.error().message));
    }
    return true;
  }
  const int64_t lease = (*session)->lease_id();
  {
    // Only the new session can be lost from now on (a discarded attempt's never reports).
    std::lock_guard g(rejoin_mu_);
    session_lost_ = false;
  }
  uint64_t generation = 0;
  {
    std::lock_guard g(role_mu_);
    generation = ++generation_;
  }
  {
    std::lock_guard g(session_mu_);
    session_ = std::move(*session);
    broker_epoch_.store(*registered);
    start_election(lease, generation);
  }
  fenced_.store(false);
  if (events_.unfenced) events_.unfenced(*registered);
  notify_listener();
  return true;
}

cluster_membership::~cluster_membership() {
  {
    std::lock_guard g(rejoin_mu_);
    stopping_ = true;
    rejoin_cv_.notify_all();
  }
  if (rejoin_thread_.joinable()) rejoin_thread_.join();
  set_listener({});
  std::lock_guard g(session_mu_);
  election_.reset();
  watch_.reset();
  session_.reset();  // revokes the lease: the registration and a held controller key go with it
}

result<void, std::string> cluster_membership::begin_controlled_shutdown() {
  const std::string key = options_.prefix + "brokers/" + std::to_string(options_.self.node_id);
  broker_registration self = options_.self;
  self.in_controlled_shutdown = true;
  std::lock_guard g(session_mu_);
  if (!session_ || fenced_.load()) return fail(std::string("the broker is fenced (session lost)"));
  etcd::txn_request t;
  t.compares.push_back({key,
                        etcd::compare::target_kind::create_revision,
                        etcd::compare::result_kind::equal,
                        broker_epoch_.load(),
                        {}});
  t.success.push_back(
      etcd::request_op::put(key, encode_broker_registration(self), session_->lease_id()));
  auto written = session_->client().txn(t);
  if (!written) return fail("etcd: " + written.error().message);
  if (!written->succeeded) return fail(std::string("the registration is gone (session lost)"));
  return {};
}

void cluster_membership::set_listener(std::function<void()> listener) {
  std::lock_guard g(listener_mu_);
  listener_ = std::move(listener);
  if (listener_) listener_();
}

void cluster_membership::notify_listener() {
  std::lock_guard g(listener_mu_);
  if (listener_) listener_();
}

void cluster_membership::on_brokers(const etcd::watch_response& w) {
  const std::string brokers_prefix = options_.prefix + "brokers/";
  on_brokers_locked(w, brokers_prefix);
  notify_listener();
}

void cluster_membership::on_brokers_locked(const etcd::watch_response& w,
                                           const std::string& brokers_prefix) {
  std::lock_guard g(mu_);
  for (const auto& e : w.events) {
    const int32_t id = node_id_of_key(e.kv.key, brokers_prefix);
    if (id < 0) continue;
    if (e.type == etcd::watch_event::kind::delete_key) {
      brokers_.erase(id);
      continue;
    }
    auto r = decode_broker_registration(e.kv.value);
    if (!r || r->node_id != id) continue;
    r->epoch = e.kv.create_revision;
    brokers_[id] = std::move(*r);
  }
}

int32_t cluster_membership::controller_id() const {
  const int32_t last = controller_id_.load();
  if (!fenced_.load()) return last;
  const int32_t self = options_.self.node_id;
  std::lock_guard g(mu_);
  if (last != self && brokers_.contains(last)) return last;
  for (const auto& [id, r] : brokers_) {
    if (id != self) return id;
  }
  return -1;
}

std::vector<broker_registration> cluster_membership::live_brokers() const {
  // Fenced, this broker's registration went with its lease, though a watch cut off from etcd
  // never saw it go: it is not live (Kafka leaves fenced brokers out of Metadata).
  const bool fenced = fenced_.load();
  std::lock_guard g(mu_);
  std::vector<broker_registration> out;
  out.reserve(brokers_.size());
  for (const auto& [id, r] : brokers_) {
    if (fenced && id == options_.self.node_id) continue;
    out.push_back(r);
  }
  return out;
}

result<std::string, std::string> agree_cluster_id(const std::vector<std::string>& endpoints,
                                                  const std::string& root,
                                                  const std::string& proposed) {
  auto client = etcd::etcd_client::create({endpoints});
  if (!client) return fail("etcd.connect: " + (client.error().message));
  const std::string key = root + "cluster/id";
  etcd::txn_request t;
  t.compares.push_back(
      {key, etcd::compare::target_kind::create_revision, etcd::compare::result_kind::equal, 0, {}});
  t.success.push_back(etcd::request_op::put(key, proposed));
  t.failure.push_back(etcd::request_op::range(key));
  auto r = (*client)->txn(t);
  if (!r) return fail("cannot read the cluster id from etcd: " + r.error().message);
  if (r->succeeded) return proposed;
  if (r->responses.empty() || r->responses[0].kvs.empty()) {
    return fail("cannot read the cluster id from etcd: " + key + " vanished");
  }
  return r->responses[0].kvs[0].value;
}

std::vector<std::string> etcd_endpoint_urls(const std::vector<std::string>& connect) {
  std::vector<std::string> out;
  for (const auto& c : connect) {
    out.push_back(c.find("://") == std::string::npos ? "http://" + c : c);
  }
  return out;
}

}  // namespace tarn::cluster
