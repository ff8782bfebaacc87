// AlterUserScramCredentials (key 51): adds, replaces and removes users' SCRAM credentials
// (kafka-configs.sh --alter --add-config 'SCRAM-SHA-256=[iterations=8192,password=...]'
// --entity-type users --entity-name alice; docs/security.md).
//
// Versions served: 0 (as Kafka 4.4; flexible). ALTER on the cluster first, else every user named
// answers CLUSTER_AUTHORIZATION_FAILED. Validated as Kafka's ScramControlManager: a user
// named twice in one request (deletions and upsertions together) = DUPLICATE_RESOURCE "A user
// credential cannot be altered twice in the same request"; a mechanism other than 1
// (SCRAM-SHA-256) or 2 (SCRAM-SHA-512) = UNSUPPORTED_SASL_MECHANISM "Unknown SCRAM mechanism";
// an empty name = UNACCEPTABLE_CREDENTIAL "Username must not be empty"; iterations outside
// [4096, 16384] = UNACCEPTABLE_CREDENTIAL "Too few iterations" / "Too many iterations"; deleting
// a credential that does not exist = RESOURCE_NOT_FOUND "Attempt to delete a user credential that
// does not exist". The accepted changes are one metadata-log entry (durable before the answer):
// an upsertion stores the salt, StoredKey and ServerKey derived from the client's salted password
// (never the password). Results sorted by user (Kafka: its hash map's order). A body that does not
// decode closes the connection.
#include <spdlog/spdlog.h>

#include <map>
#include <set>
#include <string>

#include "broker/authorization.h"
#include "broker/handler.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/error_codes.h"
#include "protocol/messages/alter_user_scram_credentials_request.h"
#include "protocol/messages/alter_user_scram_credentials_response.h"
#include "security/scram.h"

namespace tarn::broker {

namespace {

struct outcome {
  protocol::error_code code = protocol::error_code::none;
  std::optional<std::string> message;
};

asio::awaitable<handler_outcome> handle_alter_user_scram_credentials(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::alter_user_scram_credentials_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: AlterUserScramCredentials v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad AlterUserScramCredentials request"};
  }
  if (!authorize_cluster(request, security::acl_operation::alter)) {
    // As Kafka's authorizeClusterOperation(ALTER): every user named answers
    // CLUSTER_AUTHORIZATION_FAILED (AlterUserScramCredentialsRequest.getErrorResponse), sorted.
    std::set<std::string> users;
    for (const auto& d : decoded->deletions) users.emplace(d.name);
    for (const auto& u : decoded->upsertions) users.emplace(u.name);
    const auto e = protocol::error_code::cluster_authorization_failed;
    protocol::alter_user_scram_credentials_response denied;
    for (const auto& user : users) {
      auto& res = denied.results.emplace_back();
      res.user = user;
      res.error_code = protocol::code(e);
      res.error_message = protocol::describe(e).message;
    }
    co_return encode_response(denied, version);
  }
  using deletion = protocol::alter_user_scram_credentials_request::scram_credential_deletion;
  using upsertion = protocol::alter_user_scram_credentials_request::scram_credential_upsertion;
  const outcome twice{protocol::error_code::duplicate_resource,
                      "A user credential cannot be altered twice in the same request"};
  std::map<std::string, outcome> results;
  std::map<std::string, const deletion*> deletions;
  std::map<std::string, const upsertion*> upsertions;
  for (const auto& d : decoded->deletions) {
    const std::string name(d.name);
    if (results.count(name)) continue;
    if (deletions.erase(name)) {
      results[name] = twice;
    } else {
      deletions[name] = &d;
    }
  }
  for (const auto& u : decoded->upsertions) {
    const std::string name(u.name);
    if (results.count(name)) continue;
    if (deletions.erase(name) + upsertions.erase(name) > 0) {
      results[name] = twice;
    } else {
      upsertions[name] = &u;
    }
  }
  auto check_name_and_mechanism = [](const std::string& name, int8_t mechanism) -> outcome {
    if (mechanism != 1 && mechanism != 2) {
      return {protocol::error_code::unsupported_sasl_mechanism, "Unknown SCRAM mechanism"};
    }
    if (name.empty()) {
      return {protocol::error_code::unacceptable_credential, "Username must not be empty"};
    }
    return {};
  };
  cluster::metadata_store& store = request.services.topics->metadata();
  std::vector<cluster::metadata_record> records;
  for (const auto& [name, d] : deletions) {
    outcome o = check_name_and_mechanism(name, d->mechanism);
    if (o.code == protocol::error_code::none && !store.scram_credential(name, d->mechanism)) {
      o = {protocol::error_code::resource_not_found,
           "Attempt to delete a user credential that does not exist"};
    }
    if (o.code == protocol::error_code::none) {
      records.push_back(cluster::remove_user_scram_credential_record{name, d->mechanism});
    }
    results[name] = o;
  }
  for (const auto& [name, u] : upsertions) {
    outcome o = check_name_and_mechanism(name, u->mechanism);
    if (o.code == protocol::error_code::none) {
      if (u->iterations < security::scram_min_iterations) {
        o = {protocol::error_code::unacceptable_credential, "Too few iterations"};
      } else if (u->iterations > security::scram_max_iterations) {
        o = {protocol::error_code::unacceptable_credential, "Too many iterations"};
      }
    }
    if (o.code == protocol::error_code::none) {
      const auto mechanism = static_cast<security::scram_mechanism>(u->mechanism);
      auto credential = security::scram_credential_from_salted(
          mechanism, security::bytes(u->salt.begin(), u->salt.end()), u->salted_password,
          u->iterations);
      cluster::user_scram_credential_record rec;
      rec.name = name;
      rec.mechanism = u->mechanism;
      rec.salt = std::move(credential.salt);
      rec.stored_key = std::move(credential.stored_key);
      rec.server_key = std::move(credential.server_key);
      rec.iterations = u->iterations;
      records.push_back(std::move(rec));
    }
    results[name] = o;
  }
  if (!records.empty()) {
    if (auto done = store.change_scram_credentials(std::move(records)); !done) {
      spdlog::error("AlterUserScramCredentials: writing the metadata log failed: {}",
                    done.error().message);
      for (auto& [name, o] : results) {
        if (o.code == protocol::error_code::none) {
          o = {protocol::error_code::unknown_server_error, "writing the metadata log failed"};
        }
      }
    }
  }
  protocol::alter_user_scram_credentials_response reply;
  for (const auto& [name, o] : results) {
    auto& res = reply.results.emplace_back();
    res.user = name;
    res.error_code = protocol::code(o.code);
    if (o.message) res.error_message = *o.message;
  }
  co_return encode_response(reply, version);
}

}  // namespace

void register_alter_user_scram_credentials_handler(handler_registry& registry) {
  registry.register_handler(protocol::alter_user_scram_credentials_request::api_key,
                            protocol::alter_user_scram_credentials_request::min_version,
                            protocol::alter_user_scram_credentials_request::max_version,
                            handle_alter_user_scram_credentials);
}

}  // namespace tarn::broker
