// What one listener's security is made of, as the broker's configuration resolved it (Kafka's
// ssl.* and sasl.* keys, each possibly overridden per listener by listener.name.<name>.<key>).
// Plain values only: the TLS context and the SASL mechanisms are built from them elsewhere.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/security_protocol.h"

namespace tarn::security {

// Kafka's SecurityProtocol: what a listener speaks (listener.security.protocol.map); shared with
// the client library through src/base.
using tarn::parse_security_protocol;
using tarn::security_protocol;
using tarn::to_string;
using tarn::uses_sasl;
using tarn::uses_tls;

// ssl.client.auth
enum class ssl_client_auth { none, requested, required };

// The ssl.* keys a server-side TLS context is built from.
struct ssl_config {
  std::string keystore_type = "JKS";
  std::optional<std::string> keystore_location;
  std::optional<std::string> keystore_password;
  std::optional<std::string> key_password;
  std::optional<std::string> keystore_certificate_chain;  // PEM text (ssl.keystore.type=PEM)
  std::optional<std::string> keystore_key;                // PEM text (ssl.keystore.type=PEM)
  std::string truststore_type = "JKS";
  std::optional<std::string> truststore_location;
  std::optional<std::string> truststore_password;
  std::optional<std::string> truststore_certificates;  // PEM text (ssl.truststore.type=PEM)
  ssl_client_auth client_auth = ssl_client_auth::none;
  std::vector<std::string> enabled_protocols = {"TLSv1.2", "TLSv1.3"};
  std::vector<std::string> cipher_suites;  // empty: OpenSSL's defaults
  std::string principal_mapping_rules = "DEFAULT";
};

// OAUTHBEARER's validator settings (KIP-768's sasl.oauthbearer.* and the listener's
// oauthbearer.sasl.server.callback.handler.class).
struct oauthbearer_config {
  std::optional<std::string> server_callback_handler_class;
  std::optional<std::string> jwks_endpoint_url;
  int64_t jwks_endpoint_refresh_ms = 3600000;
  int64_t jwks_endpoint_retry_backoff_ms = 100;
  std::vector<std::string> expected_audience;
  std::optional<std::string> expected_issuer;
  std::string sub_claim_name = "sub";
  std::string scope_claim_name = "scope";
  int64_t clock_skew_seconds = 30;
};

// The SASL side of a SASL_PLAINTEXT or SASL_SSL listener.
struct sasl_config {
  std::vector<std::string> enabled_mechanisms = {"GSSAPI"};
  // The JAAS text per mechanism in upper case ("PLAIN" -> "...PlainLoginModule required ...;"):
  // listener.name.<l>.<mechanism>.sasl.jaas.config, else sasl.jaas.config.
  std::map<std::string, std::string> jaas_config;
  int32_t server_max_receive_size = 524288;      // sasl.server.max.receive.size
  int32_t failed_authentication_delay_ms = 100;  // connection.failed.authentication.delay.ms
  int64_t connections_max_reauth_ms = 0;         // connections.max.reauth.ms (0: no expiry)
  oauthbearer_config oauthbearer;
};

}  // namespace tarn::security
