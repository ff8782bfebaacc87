// Kafka's request quota (KIP-124, ClientRequestQuotaManager) as a broker applies it to every
// request it answers: which APIs are exempt, and how a request's handling time becomes the
// percentage of one thread that `request_percentage` bounds.
#pragma once

#include <cstdint>

namespace tarn::quota {

// The APIs Kafka 4.4's broker answers without charging the client's request quota
// (RequestHandlerHelper.sendResponseExemptThrottle in KafkaApis): LeaderAndIsr, StopReplica,
// UpdateMetadata, ControlledShutdown, WriteTxnMarkers, AlterPartition, the requests brokers and
// controllers send each other. Every API a client sends is charged, ApiVersions and
// DescribeQuorum included; Produce with acks=0 and a follower's Fetch are exempt in their
// handlers, which know the request.
bool exempt_from_request_quota(int16_t api_key);

// A request's handling time as a percentage of one thread for a second: what a request records
// against `request_percentage` (ClientRequestQuotaManager.nanosToPercentage). A quota of 100 is
// one thread's whole time.
constexpr double nanos_to_percentage(int64_t nanos) {
  return static_cast<double>(nanos) * 100.0 / 1e9;
}

}  // namespace tarn::quota
