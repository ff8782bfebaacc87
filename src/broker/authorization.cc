// The handlers' authorization questions, the authorizer log and the ACL store (authorization.h).
#include "broker/authorization.h"

#include <spdlog/sinks/sink.h>
#include <spdlog/spdlog.h>

#include <set>

#include "broker/group_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/api_table.h"
#include "protocol/error_codes.h"

namespace tarn::broker {

namespace {

using security::acl_binding;

// Kafka's logger of authorization decisions. tarn logs through spdlog's default logger; this
// one shares its sinks under Kafka's name, so a denial reads as Kafka's line would.
spdlog::logger& authorizer_log() {
  static std::shared_ptr<spdlog::logger> log = [] {
    auto& root = *spdlog::default_logger_raw();
    auto l = std::make_shared<spdlog::logger>("kafka.authorizer.logger", root.sinks().begin(),
                                              root.sinks().end());
    l->set_level(spdlog::level::info);
    return l;
  }();
  return *log;
}

security::acl_with_id from_record(const cluster::access_control_entry_record& r) {
  return {r.id, acl_binding{security::resource_type_from_code(r.resource_type), r.resource_name,
                            security::pattern_type_from_code(r.pattern_type), r.principal, r.host,
                            security::acl_operation_from_code(r.operation),
                            security::acl_permission_type_from_code(r.permission_type)}};
}

cluster::access_control_entry_record to_record(const uuid& id, const acl_binding& b) {
  return {id,
          static_cast<int8_t>(b.type),
          b.resource_name,
          static_cast<int8_t>(b.pattern),
          b.principal,
          b.host,
          static_cast<int8_t>(b.operation),
          static_cast<int8_t>(b.permission)};
}

}  // namespace

broker_authorizer::broker_authorizer(const broker_config& config, cluster::metadata_store& store)
    : authorizer_(
          security::authorizer_config{config.super_users, config.allow_everyone_if_no_acl_found}),
      store_(store) {
  std::vector<security::acl_with_id> acls;
  for (const auto& [id, record] : store_.acls()) acls.push_back(from_record(record));
  authorizer_.load(std::move(acls));
}

std::vector<std::optional<broker_authorizer::failure>> broker_authorizer::create(
    const std::vector<acl_binding>& bindings) {
  std::lock_guard g(change_mu_);
  std::vector<std::optional<failure>> results(bindings.size());
  std::vector<security::acl_with_id> added;
  std::vector<cluster::metadata_record> records;
  std::set<acl_binding> seen;  // an ACL named twice in one request is created once
  for (size_t i = 0; i < bindings.size(); ++i) {
    if (auto why = security::validate_new_acl(bindings[i])) {
      results[i] = failure{protocol::error_code::invalid_request, std::move(*why)};
      continue;
    }
    if (authorizer_.find(bindings[i]) || !seen.insert(bindings[i]).second) continue;
    uuid id = uuid::random();
    added.push_back({id, bindings[i]});
    records.push_back(to_record(id, bindings[i]));
  }
  if (records.empty()) return results;
  if (auto done = store_.change_acls(std::move(records)); !done) {
    spdlog::error("CreateAcls: writing the metadata log failed: {}", done.error().message);
    for (size_t i = 0; i < bindings.size(); ++i) {
      if (!results[i]) {
        results[i] = failure{protocol::error_code::unknown_server_error,
                             "Unknown error while trying to create ACL"};
      }
    }
    return results;
  }
  authorizer_.apply(added, {});
  return results;
}

std::vector<broker_authorizer::delete_result> broker_authorizer::remove(
    const std::vector<security::acl_binding_filter>& filters) {
  std::lock_guard g(change_mu_);
  std::vector<delete_result> results(filters.size());
  std::set<uuid> removed;
  for (size_t i = 0; i < filters.size(); ++i) {
    if (auto why = security::validate_filter(filters[i])) {
      results[i].error = failure{protocol::error_code::invalid_request, std::move(*why)};
      continue;
    }
    // As Kafka's AclControlManager: every filter lists every ACL it matches, also one an earlier
    // filter of the request matched; each is removed once.
    for (auto& a : authorizer_.acls(filters[i])) {
      removed.insert(a.id);
      results[i].deleted.push_back(std::move(a.binding));
    }
  }
  if (removed.empty()) return results;
  std::vector<cluster::metadata_record> records;
  for (const uuid& id : removed) records.push_back(cluster::remove_access_control_entry_record{id});
  if (auto done = store_.change_acls(std::move(records)); !done) {
    spdlog::error("DeleteAcls: writing the metadata log failed: {}", done.error().message);
    for (auto& r : results) {
      if (!r.error) {
        r.error = failure{protocol::error_code::unknown_server_error, done.error().message};
        r.deleted.clear();
      }
    }
    return results;
  }
  std::vector<uuid> ids(removed.begin(), removed.end());
  authorizer_.apply({}, ids);
  return results;
}

std::string_view client_host(const connection_info& connection) {
  std::string_view peer = connection.peer;
  size_t colon = peer.rfind(':');
  return colon == std::string_view::npos ? peer : peer.substr(0, colon);
}

bool authorize_slow(const request_context& request, security::acl_operation op,
                    security::resource_type type, std::string_view name, int32_t ref_count,
                    bool log_if_allowed, bool log_if_denied) {
  const auto& principal = request.connection.principal;
  std::string_view host = client_host(request.connection);
  std::string ipv6;  // Kafka's getHostAddress form of an IPv6 client ("0:0:0:0:0:0:0:1")
  if (host.find(':') != std::string_view::npos) host = ipv6 = java_host_address(host);
  auto decision = request.services.authorizer->acls().authorize(principal, host, op, type, name);
  spdlog::logger& log = authorizer_log();
  spdlog::level::level_enum level;
  if (decision.allowed) {
    level = log_if_allowed ? spdlog::level::debug : spdlog::level::trace;
  } else {
    level = log_if_denied ? spdlog::level::info : spdlog::level::trace;
  }
  if (log.should_log(level)) {
    const auto* api = protocol::find_api(request.header.api_key);
    // The logger's name closes the line, as in Kafka's log4j layout ("... (%c)"): tarn's sinks
    // print no logger names.
    log.log(level, "{} (kafka.authorizer.logger)",
            security::audit_message(principal, host, op, type, name,
                                    api ? api->name : std::string_view("Unknown"), ref_count,
                                    decision));
  }
  return decision.allowed;
}

std::string topic_name_of(const request_context& request, const uuid& topic_id) {
  topic_manager& topics = *request.services.topics;
  auto guard = topics.read_lock();
  for (const storage::topic_info* t : topics.logs().topics()) {
    if (t->topic_id == topic_id) return t->name;
  }
  return {};
}

bool authorize_by_resource_type(const request_context& request, security::acl_operation op,
                                security::resource_type type) {
  if (request.services.authorizer == nullptr) return true;
  std::string host(client_host(request.connection));
  if (host.find(':') != std::string::npos) host = java_host_address(host);
  return request.services.authorizer->acls().authorize_by_resource_type(
      request.connection.principal, host, op, type);
}

int32_t authorized_operations(const request_context& request, security::resource_type type,
                              std::string_view name) {
  auto ops = security::supported_operations(type);
  if (request.services.authorizer == nullptr) {
    int32_t bits = 0;
    for (auto op : ops) bits |= int32_t{1} << static_cast<int>(op);
    return bits;
  }
  int32_t bits = 0;
  for (auto op : ops) {
    // Kafka asks with logIfAllowed and logIfDenied false: the answer grants nothing
    if (authorize_slow(request, op, type, name, 1, false, false)) {
      bits |= int32_t{1} << static_cast<int>(op);
    }
  }
  return bits;
}

}  // namespace tarn::broker
