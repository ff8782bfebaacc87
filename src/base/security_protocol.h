// Kafka's SecurityProtocol (what a listener speaks, what a client's security.protocol asks for):
// one definition for the broker's listeners (src/security) and the client library (src/client).
#pragma once

#include <optional>
#include <string_view>

namespace tarn {

enum class security_protocol { plaintext, ssl, sasl_plaintext, sasl_ssl };

// "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL", case-insensitive as Kafka's and librdkafka's
// parsers are; nullopt for any other name.
std::optional<security_protocol> parse_security_protocol(std::string_view name);
// The upper-case name.
std::string_view to_string(security_protocol p);

inline bool uses_tls(security_protocol p) {
  return p == security_protocol::ssl || p == security_protocol::sasl_ssl;
}
inline bool uses_sasl(security_protocol p) {
  return p == security_protocol::sasl_plaintext || p == security_protocol::sasl_ssl;
}

}  // namespace tarn
