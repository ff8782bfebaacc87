// DescribeUserScramCredentials (key 50): the SCRAM credentials of users (kafka-configs.sh
// --describe --entity-type users calls it beside DescribeClientQuotas).
//
// Versions served: 0 (as Kafka 4.4; flexible). Answered as Kafka's ScramImage.describe answers
// from the credentials of the metadata log (UserScramCredentialRecords, written by
// AlterUserScramCredentials): no users listed = every user with credentials; a named user
// with none = RESOURCE_NOT_FOUND "Attempt to describe a user credential that does not exist:
// <user>"; a user named twice = DUPLICATE_RESOURCE. Each user's mechanisms and iterations, by
// mechanism type. Users are answered sorted; Kafka in its hash map's order.
// A body that does not decode closes the connection.
#include <spdlog/spdlog.h>

#include <map>
#include <string>

#include "broker/authorization.h"
#include "broker/handler.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/error_codes.h"
#include "protocol/messages/describe_user_scram_credentials_request.h"
#include "protocol/messages/describe_user_scram_credentials_response.h"

namespace tarn::broker {

namespace {

asio::awaitable<handler_outcome> handle_describe_user_scram_credentials(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::describe_user_scram_credentials_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: DescribeUserScramCredentials v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad DescribeUserScramCredentials request"};
  }
  // As Kafka: DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
  if (auto denied = cluster_denied<protocol::describe_user_scram_credentials_response>(
          request, security::acl_operation::describe)) {
    co_return std::move(*denied);
  }
  const auto credentials = request.services.topics->metadata().scram_credentials();
  std::map<std::string, bool> users;  // name -> named twice
  if (!decoded->users || decoded->users->empty()) {
    for (const auto& [key, credential] : credentials) users.try_emplace(key.first, false);
  } else {
    for (const auto& u : *decoded->users) {
      auto [it, fresh] = users.try_emplace(std::string(u.name), false);
      if (!fresh) it->second = true;
    }
  }
  std::vector<std::string> messages;
  messages.reserve(users.size());
  protocol::describe_user_scram_credentials_response reply;
  for (const auto& [name, twice] : users) {
    auto& res = reply.results.emplace_back();
    res.user = name;
    if (twice) {
      res.error_code = protocol::code(protocol::error_code::duplicate_resource);
      res.error_message = messages.emplace_back(
          "Cannot describe SCRAM credentials for the same user twice in a single request: " + name);
    } else if (auto it = credentials.lower_bound({name, INT8_MIN});
               it != credentials.end() && it->first.first == name) {
      for (; it != credentials.end() && it->first.first == name; ++it) {
        auto& info = res.credential_infos.emplace_back();
        info.mechanism = it->first.second;
        info.iterations = it->second.iterations;
      }
    } else {
      res.error_code = protocol::code(protocol::error_code::resource_not_found);
      res.error_message = messages.emplace_back(
          "Attempt to describe a user credential that does not exist: " + name);
    }
  }
  co_return encode_response(reply, version);
}

}  // namespace

void register_describe_user_scram_credentials_handler(handler_registry& registry) {
  registry.register_handler(protocol::describe_user_scram_credentials_request::api_key,
                            protocol::describe_user_scram_credentials_request::min_version,
                            protocol::describe_user_scram_credentials_request::max_version,
                            handle_describe_user_scram_credentials);
}

}  // namespace tarn::broker
