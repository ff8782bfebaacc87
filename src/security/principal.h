// Who a connection is, as Kafka's KafkaPrincipal: a type ("User") and a name. A PLAINTEXT or SSL
// connection without a client certificate is User:ANONYMOUS; TLS client certificates and SASL set
// the name once the connection has authenticated.
#pragma once

#include <string>

namespace tarn::security {

struct kafka_principal {
  std::string type = "User";
  std::string name = "ANONYMOUS";

  static kafka_principal anonymous() { return {}; }
  static kafka_principal user(std::string name) { return {"User", std::move(name)}; }

  // "User:alice", the form of super.users, kafka-acls.sh and the authorizer log.
  std::string to_string() const { return type + ":" + name; }
  bool operator==(const kafka_principal&) const = default;
};

}  // namespace tarn::security
