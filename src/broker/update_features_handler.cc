// UpdateFeatures (key 57): upgrades and downgrades of the finalized features (kafka-features.sh
// upgrade/downgrade/disable, Admin.updateFeatures).
//
// Versions served: 0-2 (Kafka 4.4's range; flexible). Behaviour, as a single-node Kafka 4.4
// (ControllerApis.handleUpdateFeatures, QuorumController.updateFeatures):
//   - The decisions are feature_updates.h's; the first failing update fails the request with its
//     INVALID_UPDATE_VERSION at the top level, message "The update failed for all features since
//     the following feature had an error: <why>", and nothing changes.
//   - Success records every update's level in the metadata log as one change (level 0: no longer
//     finalized), unless ValidateOnly (v1+); ApiVersions then reports the new levels and epoch.
//   - v0 is always an upgrade: Kafka 4.4 ignores its AllowDowngrade (a downgrade at v0 fails).
//   - v0-1 answer one result per feature on success (code 0, message "NONE" as Kafka's); v2
//     none.
//   - A body that does not decode closes the connection; a metadata log that cannot be written
//     is KAFKA_STORAGE_ERROR.
#include <spdlog/spdlog.h>

#include <string>
#include <vector>

#include "broker/authorization.h"
#include "broker/dynamic_config.h"
#include "broker/feature_updates.h"
#include "broker/features.h"
#include "broker/handler.h"
#include "broker/topic_manager.h"
#include "protocol/error_codes.h"
#include "protocol/messages/update_features_request.h"
#include "protocol/messages/update_features_response.h"

namespace tarn::broker {

namespace {

using protocol::error_code;

asio::awaitable<handler_outcome> handle_update_features(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::update_features_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: UpdateFeatures v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad UpdateFeatures request"};
  }
  // As Kafka: ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
  if (auto denied = cluster_denied<protocol::update_features_response>(
          request, security::acl_operation::alter)) {
    co_return std::move(*denied);
  }
  std::vector<feature_update> updates;
  for (const auto& u : decoded->feature_updates) {
    feature_update& f = updates.emplace_back();
    f.name = std::string(u.feature);
    f.level = u.max_version_level;
    // v0 has no UpgradeType: Kafka 4.4's controller reads the field's default (UPGRADE) and
    // ignores AllowDowngrade.
    f.type = version == 0 ? static_cast<int8_t>(upgrade_type::upgrade) : u.upgrade_type;
  }
  cluster::metadata_store& store = request.services.topics->metadata();
  std::string message;
  int16_t code = 0;
  auto decided =
      decide_feature_updates(finalized_features(store), updates, request.services.config.node_id);
  if (!decided) {
    code = decided.error().code;
    message = "The update failed for all features since the following feature had an error: " +
              decided.error().message;
  } else if (!decoded->validate_only && !decided->empty()) {
    if (auto w = store.set_feature_levels(*decided); !w) {
      spdlog::error("UpdateFeatures: the metadata log cannot be written: {}", w.error().message);
      code = static_cast<int16_t>(error_code::kafka_storage_error);
      message = "The update failed for all features since the metadata log cannot be written";
    } else {
      for (const auto& [name, level] : *decided) {
        spdlog::info("UpdateFeatures: {} finalized at level {}", name, level);
      }
      // ELR turned on: min.insync.replicas becomes a cluster default, as Kafka's controller
      // records it in the same change (the configs reach every broker as any other change).
      if (auto elr = record_elr_min_isr_default(store, request.services.config); !elr) {
        spdlog::error("UpdateFeatures: min.insync.replicas not recorded as the cluster default: {}",
                      elr.error());
      } else if (!elr->empty()) {
        spdlog::info("UpdateFeatures: eligible leader replicas on (KIP-966): {}", *elr);
      }
    }
  }
  protocol::update_features_response reply;
  reply.error_code = code;
  reply.error_message = std::nullopt;  // null on success, as Kafka's ApiError.NONE
  if (code != 0) reply.error_message = message;
  if (version <= 1 && code == 0) {
    for (const auto& u : decoded->feature_updates) {
      auto& res = reply.results.emplace_back();
      res.feature = u.feature;
      res.error_code = 0;
      res.error_message = "NONE";  // Kafka 4.4's ApiError.NONE.message(), for each feature
    }
  }
  co_return encode_response(reply, version);
}

}  // namespace

void register_update_features_handler(handler_registry& registry) {
  registry.register_handler(protocol::update_features_request::api_key,
                            protocol::update_features_request::min_version,
                            protocol::update_features_request::max_version, handle_update_features);
}

}  // namespace tarn::broker
