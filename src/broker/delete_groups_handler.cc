// DeleteGroups (key 42): deletes empty groups and their committed offsets, and empty share
// groups with their share-partitions (the share coordinator's answer replaces the group
// coordinator's GROUP_ID_NOT_FOUND for a share group).
//
// Versions served: the schema's, 0-3. The body is decoded with protocol::delete_groups_request
// and handed to the group coordinator, which decides each group's error and writes the
// tombstones; its answer is encoded at the request's version, in a cluster once each deleted
// group's tombstones are committed (group_write_wait.h).
// A body that does not decode closes the connection.
// Authorization: as Kafka's KafkaApis (see the handler).
// Not supported: quotas.
#include <asio/this_coro.hpp>
#include <memory>
#include <utility>
#include <vector>

#include "broker/group_handler_util.h"
#include "broker/share_handler_util.h"
#include "broker/topic_manager.h"
#include "coordinator/share_coordinator.h"
#include "protocol/messages/delete_groups_request.h"
#include "protocol/messages/delete_groups_response.h"

namespace tarn::broker {

namespace {

asio::awaitable<handler_outcome> handle_delete_groups(request_context& request) {
  coordinator::group_coordinator& groups = *request.services.groups;
  auto decoded = decode_group_request<protocol::delete_groups_request>(request, "DeleteGroups");
  if (!decoded) co_return close_connection{"bad DeleteGroups request"};
  const int16_t version = request.header.api_version;
  // In a cluster a share group's share-partitions' state may be kept by other brokers' share
  // coordinators: the group's answer waits for their deletion (by result index).
  const auto executor = co_await asio::this_coro::executor;
  std::vector<std::pair<size_t, std::unique_ptr<share_write_wait>>> waiting;
  auto delete_all = [&](const protocol::delete_groups_request& req) {
    auto with_share_groups = [&](auto reply) {
      if (request.services.shares == nullptr) return reply;
      for (size_t i = 0; i < reply.message.results.size(); ++i) {
        auto& d = reply.message.results[i];
        if (d.error_code == protocol::code(protocol::error_code::group_id_not_found) &&
            request.services.shares->has_group(d.group_id)) {
          auto wait = std::make_unique<share_write_wait>(executor);
          auto e = request.services.shares->delete_group(d.group_id, wait->later());
          if (e) {
            d.error_code = protocol::code(*e);
          } else {
            d.error_code = 0;
            waiting.emplace_back(i, std::move(wait));
          }
        }
      }
      return reply;
    };
    if (request.services.authorizer == nullptr) {
      return with_share_groups(groups.delete_groups(req, version, wall_clock_ms()));
    }
    // As Kafka: DELETE on each group; the others answer GROUP_AUTHORIZATION_FAILED after the
    // deleted ones.
    protocol::delete_groups_request allowed = req;
    std::vector<std::string_view> denied;
    std::erase_if(allowed.groups_names, [&](std::string_view g) {
      if (authorize_group(request, security::acl_operation::delete_, g)) return false;
      denied.push_back(g);
      return true;
    });
    auto reply = with_share_groups(groups.delete_groups(allowed, version, wall_clock_ms()));
    for (std::string_view g : denied) {
      auto& d = reply.message.results.emplace_back();
      d.group_id = g;
      d.error_code = protocol::code(protocol::error_code::group_authorization_failed);
    }
    return reply;
  };
  auto reply = delete_all(*decoded);
  for (auto& [at, wait] : waiting) {
    const std::optional<protocol::error_code> e = co_await wait->answer(request);
    if (!e) co_return close_connection{"connection closed during DeleteGroups"};
    reply.message.results[at].error_code = protocol::code(*e);
  }
  // In a cluster a group is answered deleted once its tombstones are committed
  // (group_write_wait.h); the groups of a request may live in different partitions.
  for (auto& d : reply.message.results) {
    if (d.error_code != 0) continue;
    const protocol::error_code e = co_await await_group_write_committed(request, d.group_id);
    if (e != protocol::error_code::none) d.error_code = protocol::code(e);
  }
  co_return encode_response(reply.message, version);
}

}  // namespace

void register_delete_groups_handler(handler_registry& registry) {
  registry.register_handler(protocol::delete_groups_request::api_key,
                            protocol::delete_groups_request::min_version,
                            protocol::delete_groups_request::max_version, handle_delete_groups);
}

}  // namespace tarn::broker
