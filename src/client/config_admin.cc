// Config and client-quota administration over one broker connection (see config_admin.h).
#include "client/config_admin.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "protocol/messages/alter_client_quotas_request.h"
#include "protocol/messages/alter_client_quotas_response.h"
#include "protocol/messages/alter_user_scram_credentials_request.h"
#include "protocol/messages/alter_user_scram_credentials_response.h"
#include "protocol/messages/describe_client_quotas_request.h"
#include "protocol/messages/describe_client_quotas_response.h"
#include "protocol/messages/describe_cluster_request.h"
#include "protocol/messages/describe_cluster_response.h"
#include "protocol/messages/describe_configs_request.h"
#include "protocol/messages/describe_configs_response.h"
#include "protocol/messages/describe_user_scram_credentials_request.h"
#include "protocol/messages/describe_user_scram_credentials_response.h"
#include "protocol/messages/incremental_alter_configs_request.h"
#include "protocol/messages/incremental_alter_configs_response.h"
#include "protocol/messages/metadata_request.h"
#include "protocol/messages/metadata_response.h"

namespace tarn::client {

namespace {

constexpr int16_t describe_configs_version = 4;
constexpr int16_t alter_configs_version = 1;
constexpr int16_t describe_quotas_version = 1;
constexpr int16_t alter_quotas_version = 1;
constexpr int16_t describe_scram_version = 0;
constexpr int16_t alter_scram_version = 0;
constexpr int16_t describe_cluster_version = 0;
constexpr int16_t metadata_version = 12;
constexpr int16_t resource_not_found = 91;

client_error transport(std::string message) { return client_error{-1, std::move(message)}; }

std::optional<std::string> copy(std::optional<std::string_view> s) {
  if (!s) return std::nullopt;
  return std::string(*s);
}

std::optional<std::string_view> view(const std::optional<std::string>& s) {
  if (!s) return std::nullopt;
  return std::string_view(*s);
}

}  // namespace

const char* config_source_name(int8_t source) {
  switch (static_cast<config_source>(source)) {
    case config_source::dynamic_topic_config:
      return "DYNAMIC_TOPIC_CONFIG";
    case config_source::dynamic_broker_config:
      return "DYNAMIC_BROKER_CONFIG";
    case config_source::dynamic_default_broker_config:
      return "DYNAMIC_DEFAULT_BROKER_CONFIG";
    case config_source::static_broker_config:
      return "STATIC_BROKER_CONFIG";
    case config_source::default_config:
      return "DEFAULT_CONFIG";
    case config_source::dynamic_broker_logger_config:
      return "DYNAMIC_BROKER_LOGGER_CONFIG";
    case config_source::client_metrics_config:
      return "CLIENT_METRICS_CONFIG";
    case config_source::group_config:
      return "GROUP_CONFIG";
    case config_source::unknown:
      break;
  }
  return "UNKNOWN";
}

result<std::unique_ptr<config_admin>, client_error> config_admin::connect(
    const std::string& bootstrap, std::chrono::milliseconds timeout, std::string client_id,
    const security_config& security) {
  auto c = blocking_client::connect(bootstrap, timeout, std::move(client_id), security);
  if (!c) return fail(transport(c.error()));
  return std::unique_ptr<config_admin>(new config_admin(std::move(*c)));
}

result<std::vector<config_entry>, client_error> config_admin::describe_configs(
    config_resource_type type, const std::string& name, bool include_synonyms) {
  protocol::describe_configs_request req;
  protocol::describe_configs_request::describe_configs_resource res;
  res.resource_type = static_cast<int8_t>(type);
  res.resource_name = name;
  res.configuration_keys = std::nullopt;
  req.resources.push_back(res);
  req.include_synonyms = include_synonyms;
  std::vector<uint8_t> buffer;
  auto resp = call<protocol::describe_configs_response>(*connection_, req, describe_configs_version,
                                                        buffer);
  if (!resp) return fail(transport(resp.error()));
  std::vector<config_entry> out;
  for (const auto& r : resp->results) {
    if (r.error_code != 0) return fail(kafka_error(r.error_code, r.error_message));
    for (const auto& c : r.configs) {
      config_entry& e = out.emplace_back();
      e.name = std::string(c.name);
      e.value = copy(c.value);
      e.read_only = c.read_only;
      e.sensitive = c.is_sensitive;
      e.source = c.config_source;
      for (const auto& s : c.synonyms) {
        e.synonyms.push_back({std::string(s.name), copy(s.value), s.source});
      }
    }
  }
  return out;
}

result<void, client_error> config_admin::alter_configs(config_resource_type type,
                                                       const std::string& name,
                                                       const std::vector<config_change>& changes) {
  protocol::incremental_alter_configs_request req;
  protocol::incremental_alter_configs_request::alter_configs_resource res;
  res.resource_type = static_cast<int8_t>(type);
  res.resource_name = name;
  for (const auto& c : changes) {
    res.configs.push_back({c.name, static_cast<int8_t>(c.op), view(c.value)});
  }
  req.resources.push_back(std::move(res));
  std::vector<uint8_t> buffer;
  auto resp = call<protocol::incremental_alter_configs_response>(*connection_, req,
                                                                 alter_configs_version, buffer);
  if (!resp) return fail(transport(resp.error()));
  for (const auto& r : resp->responses) {
    if (r.error_code != 0) return fail(kafka_error(r.error_code, r.error_message));
  }
  return {};
}

result<std::vector<quota_description>, client_error> config_admin::describe_client_quotas(
    const std::vector<quota_filter_component>& components, bool strict) {
  protocol::describe_client_quotas_request req;
  for (const auto& c : components) {
    protocol::describe_client_quotas_request::component_data d;
    d.entity_type = c.entity_type;
    d.match_type = c.match_type;
    d.match = view(c.match);
    req.components.push_back(d);
  }
  req.strict = strict;
  std::vector<uint8_t> buffer;
  auto resp = call<protocol::describe_client_quotas_response>(*connection_, req,
                                                              describe_quotas_version, buffer);
  if (!resp) return fail(transport(resp.error()));
  if (resp->error_code != 0) return fail(kafka_error(resp->error_code, resp->error_message));
  std::vector<quota_description> out;
  if (!resp->entries) return out;
  for (const auto& e : *resp->entries) {
    quota_description& d = out.emplace_back();
    for (const auto& part : e.entity) {
      d.entity.push_back({std::string(part.entity_type), copy(part.entity_name)});
    }
    for (const auto& v : e.values) d.values.emplace_back(std::string(v.key), v.value);
  }
  return out;
}

result<void, client_error> config_admin::alter_client_quotas(
    const quota_entity& entity, const std::vector<quota_change>& changes) {
  protocol::alter_client_quotas_request req;
  protocol::alter_client_quotas_request::entry_data entry;
  for (const auto& part : entity) entry.entity.push_back({part.entity_type, view(part.name)});
  for (const auto& c : changes) entry.ops.push_back({c.key, c.value, c.remove});
  req.entries.push_back(std::move(entry));
  req.validate_only = false;
  std::vector<uint8_t> buffer;
  auto resp =
      call<protocol::alter_client_quotas_response>(*connection_, req, alter_quotas_version, buffer);
  if (!resp) return fail(transport(resp.error()));
  for (const auto& r : resp->entries) {
    if (r.error_code != 0) return fail(kafka_error(r.error_code, r.error_message));
  }
  return {};
}

result<std::vector<std::pair<std::string, std::vector<scram_credential_info>>>, client_error>
config_admin::describe_scram_credentials(const std::vector<std::string>& users) {
  protocol::describe_user_scram_credentials_request req;
  req.users.emplace();
  for (const auto& u : users) {
    protocol::describe_user_scram_credentials_request::user_name n;
    n.name = u;
    req.users->push_back(n);
  }
  std::vector<uint8_t> buffer;
  auto resp = call<protocol::describe_user_scram_credentials_response>(
      *connection_, req, describe_scram_version, buffer);
  if (!resp) return fail(transport(resp.error()));
  if (resp->error_code != 0) return fail(kafka_error(resp->error_code, resp->error_message));
  std::vector<std::pair<std::string, std::vector<scram_credential_info>>> out;
  for (const auto& r : resp->results) {
    if (r.error_code == resource_not_found) continue;
    if (r.error_code != 0) return fail(kafka_error(r.error_code, r.error_message));
    auto& [user, infos] = out.emplace_back();
    user = std::string(r.user);
    for (const auto& i : r.credential_infos) infos.push_back({i.mechanism, i.iterations});
  }
  return out;
}

result<void, client_error> config_admin::alter_scram_credentials(
    const std::string& user, const std::vector<scram_credential_change>& changes) {
  protocol::alter_user_scram_credentials_request req;
  // The salts and salted passwords the request's views point into.
  std::vector<std::vector<uint8_t>> salts, salted;
  salts.reserve(changes.size());
  salted.reserve(changes.size());
  for (const auto& c : changes) {
    if (c.remove) {
      auto& d = req.deletions.emplace_back();
      d.name = user;
      d.mechanism = c.mechanism;
      continue;
    }
    // As Kafka's Admin client: a random salt, SaltedPassword = Hi(password, salt, iterations).
    const EVP_MD* md = c.mechanism == 1 ? EVP_sha256() : EVP_sha512();
    auto& salt = salts.emplace_back(32);
    RAND_bytes(salt.data(), static_cast<int>(salt.size()));
    auto& key = salted.emplace_back(static_cast<size_t>(EVP_MD_get_size(md)));
    PKCS5_PBKDF2_HMAC(c.password.data(), static_cast<int>(c.password.size()), salt.data(),
                      static_cast<int>(salt.size()), c.iterations, md, static_cast<int>(key.size()),
                      key.data());
    auto& u = req.upsertions.emplace_back();
    u.name = user;
    u.mechanism = c.mechanism;
    u.iterations = c.iterations;
    u.salt = salt;
    u.salted_password = key;
  }
  std::vector<uint8_t> buffer;
  auto resp = call<protocol::alter_user_scram_credentials_response>(*connection_, req,
                                                                    alter_scram_version, buffer);
  if (!resp) return fail(transport(resp.error()));
  for (const auto& r : resp->results) {
    if (r.error_code != 0) return fail(kafka_error(r.error_code, r.error_message));
  }
  return {};
}

result<std::vector<int32_t>, client_error> config_admin::broker_ids() {
  protocol::describe_cluster_request req;
  std::vector<uint8_t> buffer;
  auto resp = call<protocol::describe_cluster_response>(*connection_, req, describe_cluster_version,
                                                        buffer);
  if (!resp) return fail(transport(resp.error()));
  if (resp->error_code != 0) return fail(kafka_error(resp->error_code, resp->error_message));
  std::vector<int32_t> out;
  for (const auto& b : resp->brokers) out.push_back(b.broker_id);
  return out;
}

result<std::vector<std::string>, client_error> config_admin::topic_names() {
  protocol::metadata_request req;
  req.allow_auto_topic_creation = false;
  req.topics = std::nullopt;
  std::vector<uint8_t> buffer;
  auto resp = call<protocol::metadata_response>(*connection_, req, metadata_version, buffer);
  if (!resp) return fail(transport(resp.error()));
  std::vector<std::string> out;
  for (const auto& t : resp->topics) {
    if (t.error_code == 0 && t.name) out.emplace_back(*t.name);
  }
  return out;
}

}  // namespace tarn::client
