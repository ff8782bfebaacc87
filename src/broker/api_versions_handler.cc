// ApiVersions (key 18): which APIs and versions this broker serves.
//
// Versions served: 0-5. The body is decoded with protocol::api_versions_request.
// Behaviour:
//   - The ApiKeys list is exactly the handler registry: every registered API with the versions
//     its handler serves, by key. Produce is listed from v0 (KAFKA-18659; see handler.h).
//   - v3+: ClientSoftwareName and ClientSoftwareVersion must match Kafka's pattern
//     [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?, else INVALID_REQUEST (42) with no ApiKeys,
//     as Kafka answers.
//   - v5 (KIP-1242), as Kafka 4.4's ApiVersionsRequest.isValid and
//     KafkaApis.handleApiVersionsRequest: ClusterId and NodeId come together or not at all, so a
//     null ClusterId with a NodeId other than -1, or a ClusterId with NodeId -1, is
//     INVALID_REQUEST (42) with no ApiKeys. Then a ClusterId that is not ours, or a NodeId that is
//     not our node.id, is REBOOTSTRAP_REQUIRED (129) with no ApiKeys: the client is talking to
//     another broker than the one its metadata names. With neither (null, -1) nothing is checked.
//   - A version above 5 never reaches this handler: the connection answers it in the v0 layout
//     with UNSUPPORTED_VERSION (35) and [{18, 0, 5}] (KIP-511), see
//     unsupported_api_versions_outcome below.
//   - A body that does not decode closes the connection (Kafka's InvalidRequestException).
//   - v3+: SupportedFeatures and FinalizedFeatures (features.h): metadata.version 7-33 (3.3-IV3 to
//     4.4-IV2, finalized 33), group.version 0-1 (finalized 1: KIP-848 groups are served),
//     transaction.version 0-2 (finalized 2) and share.version 0-2 (finalized 2: KIP-932 share
//     groups are served), as Kafka 4.4.0 reports them; the finalized levels come from the metadata
//     log (a FeatureLevelRecord overrides the default), the epoch is its last offset. Below v4 a
//     supported feature whose minimum is 0 is left out (KAFKA-17011), as Kafka does. Features
//     tarn does not implement (streams.version, kraft.version, ELR) are not
//     listed, so clients do not use them.
// Not supported: quotas (ThrottleTimeMs is always 0); UpdateFeatures.
#include <spdlog/spdlog.h>

#include "broker/features.h"
#include "broker/handler.h"
#include "broker/topic_manager.h"
#include "protocol/error_codes.h"
#include "protocol/messages/api_versions_request.h"
#include "protocol/messages/api_versions_response.h"

namespace tarn::broker {

namespace {

constexpr int16_t api_versions_key = protocol::api_versions_request::api_key;

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// Kafka's ApiVersionsRequest.isValid pattern for the client software name and version.
bool valid_software_field(std::string_view s) {
  if (s.empty() || !is_alnum(s.front()) || !is_alnum(s.back())) return false;
  for (char c : s) {
    if (!is_alnum(c) && c != '-' && c != '.') return false;
  }
  return true;
}

response encode(const protocol::api_versions_response& r, int16_t version) {
  response out;
  out.body.reserve(r.encoded_size(version));
  protocol::writer w(out.body);
  r.encode(w, version);
  return out;
}

protocol::api_versions_response::api_version own_range(const handler_registry& registry) {
  const handler_entry* e = registry.find(api_versions_key);
  return {api_versions_key, e ? e->min_version : int16_t{0}, e ? e->max_version : int16_t{0}};
}

std::string_view own_cluster_id(const broker_services& services) {
  return services.topics != nullptr ? std::string_view(services.topics->cluster_id())
                                    : std::string_view();
}

asio::awaitable<handler_outcome> handle_api_versions(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::api_versions_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: ApiVersions v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad ApiVersions request"};
  }
  protocol::api_versions_response reply;
  const bool ids_paired = !decoded->cluster_id.has_value() == (decoded->node_id == -1);
  if ((version >= 5 && !ids_paired) ||
      (version >= 3 && (!valid_software_field(decoded->client_software_name) ||
                        !valid_software_field(decoded->client_software_version)))) {
    spdlog::info(
        "connection {} from {}: invalid ApiVersions v{}: client software '{}' '{}', cluster id "
        "{}, node id {}",
        request.connection.id, request.connection.peer, version, decoded->client_software_name,
        decoded->client_software_version,
        decoded->cluster_id ? fmt::format("'{}'", *decoded->cluster_id) : std::string("null"),
        decoded->node_id);
    reply.error_code = static_cast<int16_t>(protocol::error_code::invalid_request);
    co_return encode(reply, version);
  }
  if (version >= 5 && decoded->cluster_id.has_value() &&
      (*decoded->cluster_id != own_cluster_id(request.services) ||
       decoded->node_id != request.services.config.node_id)) {
    spdlog::info(
        "connection {} from {}: ApiVersions for cluster '{}' node {}, this is '{}' node {}",
        request.connection.id, request.connection.peer, *decoded->cluster_id, decoded->node_id,
        own_cluster_id(request.services), request.services.config.node_id);
    reply.error_code = static_cast<int16_t>(protocol::error_code::rebootstrap_required);
    co_return encode(reply, version);
  }
  for (const auto& range : request.services.handlers.advertised()) {
    reply.api_keys.push_back({range.api_key, range.min_version, range.max_version});
  }
  cluster::feature_map finalized;  // backs the names in `reply` until it is encoded
  if (version >= 3 && request.services.topics != nullptr) {
    cluster::metadata_store& store = request.services.topics->metadata();
    finalized = finalized_features(store);
    for (const supported_feature& f : tarn_supported_features) {
      if (version < 4 && f.min_version == 0) continue;
      reply.supported_features.push_back({f.name, f.min_version, f.max_version});
    }
    reply.finalized_features_epoch = store.finalized_features_epoch();
    for (const auto& [name, level] : finalized) {
      // Kafka reports min = max = the finalized level.
      reply.finalized_features.push_back({name, level, level});
    }
  }
  co_return encode(reply, version);
}

}  // namespace

handler_outcome unsupported_api_versions_outcome(const handler_registry& registry) {
  protocol::api_versions_response reply;
  reply.error_code = static_cast<int16_t>(protocol::error_code::unsupported_version);
  reply.api_keys.push_back(own_range(registry));
  return encode(reply, 0);
}

void register_api_versions_handler(handler_registry& registry) {
  registry.register_handler(api_versions_key, protocol::api_versions_request::min_version,
                            protocol::api_versions_request::max_version, handle_api_versions);
}

}  // namespace tarn::broker
