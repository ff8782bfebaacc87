// Topic administration over one broker connection (see topic_admin.h).
#include "client/topic_admin.h"

#include "base/uuid_text.h"
#include "protocol/messages/create_partitions_request.h"
#include "protocol/messages/create_partitions_response.h"
#include "protocol/messages/create_topics_request.h"
#include "protocol/messages/create_topics_response.h"
#include "protocol/messages/delete_topics_request.h"
#include "protocol/messages/delete_topics_response.h"
#include "protocol/messages/describe_configs_request.h"
#include "protocol/messages/describe_configs_response.h"
#include "protocol/messages/incremental_alter_configs_request.h"
#include "protocol/messages/incremental_alter_configs_response.h"
#include "protocol/messages/metadata_request.h"
#include "protocol/messages/metadata_response.h"

namespace tarn::client {

namespace {

constexpr int16_t metadata_version = 12;
constexpr int16_t create_topics_version = 7;
constexpr int16_t delete_topics_version = 6;
constexpr int16_t describe_configs_version = 4;
constexpr int16_t alter_configs_version = 1;
constexpr int16_t create_partitions_version = 3;
constexpr int8_t topic_resource = 2;
constexpr int8_t default_config_source = 5;

client_error transport(std::string message) { return client_error{-1, std::move(message)}; }

}  // namespace

result<std::unique_ptr<topic_admin>, client_error> topic_admin::connect(
    const std::string& bootstrap, std::chrono::milliseconds timeout, std::string client_id,
    const security_config& security) {
  auto c = blocking_client::connect(bootstrap, timeout, std::move(client_id), security);
  if (!c) return fail(transport(c.error()));
  return std::unique_ptr<topic_admin>(new topic_admin(std::move(*c)));
}

result<void, client_error> topic_admin::create_topic(const new_topic& topic) {
  protocol::create_topics_request req;
  protocol::create_topics_request::creatable_topic t;
  t.name = topic.name;
  t.num_partitions = topic.partitions;
  t.replication_factor = topic.replication_factor;
  for (const auto& [k, v] : topic.configs) t.configs.push_back({k, v});
  req.topics.push_back(std::move(t));
  std::vector<uint8_t> buffer;
  auto resp =
      call<protocol::create_topics_response>(*connection_, req, create_topics_version, buffer);
  if (!resp) return fail(transport(resp.error()));
  for (const auto& r : resp->topics) {
    if (r.error_code != 0) return fail(kafka_error(r.error_code, r.error_message));
  }
  return {};
}

result<std::vector<topic_description>, client_error> topic_admin::describe_topics(
    const std::optional<std::string>& topic) {
  protocol::metadata_request req;
  req.allow_auto_topic_creation = false;
  if (topic) {
    req.topics.emplace();
    protocol::metadata_request::metadata_request_topic t;
    t.name = *topic;
    req.topics->push_back(t);
  }
  std::vector<uint8_t> buffer;
  auto resp = call<protocol::metadata_response>(*connection_, req, metadata_version, buffer);
  if (!resp) return fail(transport(resp.error()));
  std::vector<topic_description> out;
  out.reserve(resp->topics.size());
  for (const auto& t : resp->topics) {
    topic_description& d = out.emplace_back();
    d.name = std::string(t.name.value_or(""));
    d.error_code = t.error_code;
    d.topic_id = uuid_text(t.topic_id.bytes);
    for (const auto& p : t.partitions) {
      d.partitions.push_back({p.partition_index, p.leader_id, p.replica_nodes, p.isr_nodes});
    }
  }
  return out;
}

result<std::vector<topic_config>, client_error> topic_admin::describe_configs(
    const std::string& topic) {
  protocol::describe_configs_request req;
  protocol::describe_configs_request::describe_configs_resource res;
  res.resource_type = topic_resource;
  res.resource_name = topic;
  res.configuration_keys = std::nullopt;
  req.resources.push_back(res);
  std::vector<uint8_t> buffer;
  auto resp = call<protocol::describe_configs_response>(*connection_, req, describe_configs_version,
                                                        buffer);
  if (!resp) return fail(transport(resp.error()));
  std::vector<topic_config> out;
  for (const auto& r : resp->results) {
    if (r.error_code != 0) return fail(kafka_error(r.error_code, r.error_message));
    for (const auto& c : r.configs) {
      topic_config& tc = out.emplace_back();
      tc.name = std::string(c.name);
      if (c.value) tc.value = std::string(*c.value);
      tc.is_default = c.config_source == default_config_source;
    }
  }
  return out;
}

result<void, client_error> topic_admin::delete_topic(const std::string& topic) {
  protocol::delete_topics_request req;
  protocol::delete_topics_request::delete_topic_state t;
  t.name = topic;
  req.topics.push_back(t);
  req.timeout_ms = 30000;
  std::vector<uint8_t> buffer;
  auto resp =
      call<protocol::delete_topics_response>(*connection_, req, delete_topics_version, buffer);
  if (!resp) return fail(transport(resp.error()));
  for (const auto& r : resp->responses) {
    if (r.error_code != 0) return fail(kafka_error(r.error_code, r.error_message));
  }
  return {};
}

result<void, client_error> topic_admin::create_partitions(const std::string& topic, int32_t count,
                                                          bool validate_only) {
  protocol::create_partitions_request req;
  protocol::create_partitions_request::create_partitions_topic t;
  t.name = topic;
  t.count_ = count;
  t.assignments = std::nullopt;
  req.topics.push_back(std::move(t));
  req.timeout_ms = 30000;
  req.validate_only = validate_only;
  std::vector<uint8_t> buffer;
  auto resp = call<protocol::create_partitions_response>(*connection_, req,
                                                         create_partitions_version, buffer);
  if (!resp) return fail(transport(resp.error()));
  for (const auto& r : resp->results) {
    if (r.error_code != 0) return fail(kafka_error(r.error_code, r.error_message));
  }
  return {};
}

result<void, client_error> topic_admin::alter_configs(const std::string& topic,
                                                      const std::vector<config_change>& changes) {
  protocol::incremental_alter_configs_request req;
  protocol::incremental_alter_configs_request::alter_configs_resource res;
  res.resource_type = topic_resource;
  res.resource_name = topic;
  for (const auto& c : changes) {
    res.configs.push_back({c.name, static_cast<int8_t>(c.op),
                           c.value ? std::optional<std::string_view>(*c.value) : std::nullopt});
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

}  // namespace tarn::client
