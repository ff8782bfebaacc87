// Kafka's SecurityProtocol names.
#include "base/security_protocol.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace tarn {

std::optional<security_protocol> parse_security_protocol(std::string_view name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (upper == "PLAINTEXT") return security_protocol::plaintext;
  if (upper == "SSL") return security_protocol::ssl;
  if (upper == "SASL_PLAINTEXT") return security_protocol::sasl_plaintext;
  if (upper == "SASL_SSL") return security_protocol::sasl_ssl;
  return std::nullopt;
}

std::string_view to_string(security_protocol p) {
  switch (p) {
    case security_protocol::plaintext:
      return "PLAINTEXT";
    case security_protocol::ssl:
      return "SSL";
    case security_protocol::sasl_plaintext:
      return "SASL_PLAINTEXT";
    case security_protocol::sasl_ssl:
      return "SASL_SSL";
  }
  return "PLAINTEXT";
}

}  // namespace tarn
