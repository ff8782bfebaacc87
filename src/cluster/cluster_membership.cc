// cluster_membership: a broker's session, registration, controller candidacy and the live
// brokers it follows (cluster_membership.h); the cluster id agreed in etcd.
#include "cluster/cluster_membership.h"

#include <fmt/format.h>

#include <charconv>
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
    membership_options options, lost_handler on_lost) {
  std::unique_ptr<cluster_membership> m(new cluster_membership(std::move(options)));
  const membership_options& o = m->options_;
  auto session = etcd::etcd_session::open(o.session, [on_lost](const etcd::etcd_error& e) {
    if (on_lost) on_lost(e.message);
  });
  if (!session) return fail("cannot open a session with etcd: " + session.error().message);
  m->session_ = std::move(*session);
  etcd::etcd_client& client = m->session_->client();

  const std::string brokers_prefix = o.prefix + "brokers/";
  const std::string key = brokers_prefix + std::to_string(o.self.node_id);
  auto registered = etcd::create_on_lease(client, key, encode_broker_registration(o.self),
                                          m->session_->lease_id());
  if (!registered) {
    if (registered.error().code == etcd::etcd_error::failed_precondition) {
      return fail(fmt::format(
          "broker {} is already registered by a live broker (DUPLICATE_BROKER_REGISTRATION: {}); "
          "node.id must be unique in the cluster",
          o.self.node_id, registered.error().message));
    }
    return fail("cannot register with etcd: " + registered.error().message);
  }
  m->broker_epoch_ = *registered;

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
  m->election_ = std::make_unique<etcd::controller_election>(
      o.session.client, o.prefix + "controller", std::to_string(o.self.node_id),
      m->session_->lease_id(),
      [self](bool is_controller, const std::string& controller, int64_t epoch) {
        int32_t id = -1;
        std::from_chars(controller.data(), controller.data() + controller.size(), id);
        self->controller_epoch_.store(epoch);
        self->is_controller_.store(is_controller);
        self->controller_id_.store(id);
        self->notify_listener();
      });
  return m;
}

cluster_membership::~cluster_membership() {
  set_listener({});
  election_.reset();
  watch_.reset();
  session_.reset();  // revokes the lease: the registration and a held controller key go with it
}

result<void, std::string> cluster_membership::begin_controlled_shutdown() {
  const std::string key = options_.prefix + "brokers/" + std::to_string(options_.self.node_id);
  broker_registration self = options_.self;
  self.in_controlled_shutdown = true;
  etcd::txn_request t;
  t.compares.push_back({key,
                        etcd::compare::target_kind::create_revision,
                        etcd::compare::result_kind::equal,
                        broker_epoch_,
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

std::vector<broker_registration> cluster_membership::live_brokers() const {
  std::lock_guard g(mu_);
  std::vector<broker_registration> out;
  out.reserve(brokers_.size());
  for (const auto& [id, r] : brokers_) out.push_back(r);
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
