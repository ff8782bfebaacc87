// The client's security settings (librdkafka's names: security.protocol, ssl.*, sasl.*) and the
// client side of SASL: PLAIN and SCRAM-SHA-256/512 (RFC 5802/7677) on OpenSSL's HMAC, digest and
// PBKDF2, plus the OpenSSL context both transports (broker_connection, blocking_client) share.
#pragma once

#include <openssl/ssl.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/security_protocol.h"

namespace tarn::client {

using tarn::security_protocol;  // the broker's listeners use the same (src/base)
enum class sasl_mechanism { plain, scram_sha_256, scram_sha_512 };

std::string_view sasl_mechanism_name(sasl_mechanism m);  // "SCRAM-SHA-512", ...

struct security_config {
  security_protocol protocol = security_protocol::plaintext;
  std::string ssl_ca_location;           // PEM file or directory; empty: the system's CAs
  std::string ssl_certificate_location;  // PEM client certificate (chain), for mTLS
  std::string ssl_key_location;          // PEM private key
  std::string ssl_key_password;
  bool ssl_endpoint_identification = true;  // "https" (librdkafka 2.x's default) or "none"
  sasl_mechanism mechanism = sasl_mechanism::plain;
  std::string sasl_username;
  std::string sasl_password;

  bool tls() const { return uses_tls(protocol); }
  bool sasl() const { return uses_sasl(protocol); }

  // Applies one librdkafka setting: nullopt when `key` is not a security key, else whether its
  // value was valid (an error message as the other keys give). sasl.jaas.config (Java's
  // ScramLoginModule / PlainLoginModule line) supplies username and password too.
  std::optional<result<void, std::string>> set(std::string_view key, std::string_view value);
  // The combinations: SASL needs a username; a key needs a certificate and the reverse.
  result<void, std::string> validate() const;
};

// An OpenSSL client context verifying the broker against ssl.ca.location (or the system's CAs),
// with the client certificate and key when set. Shared by every connection of a client.
struct ssl_ctx_deleter {
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
using ssl_ctx_ptr = std::unique_ptr<SSL_CTX, ssl_ctx_deleter>;
result<ssl_ctx_ptr, std::string> make_ssl_context(const security_config& config);

// Prepares `ssl` for a connection to `host`: SNI and, with endpoint identification, the
// hostname (or IP address) the certificate must name.
result<void, std::string> prepare_ssl(SSL* ssl, const std::string& host,
                                      const security_config& config);

// Why a handshake failed, in words: the verification result when the certificate was refused,
// else OpenSSL's error queue (emptied).
std::string ssl_failure(SSL* ssl, const std::string& host, int port);

// The client side of RFC 5802's SCRAM exchange: client-first, then client-final (with the proof)
// from the server-first message, then the server's signature checked.
class scram_client {
 public:
  // `nonce` empty: 24 random bytes, base64 (tests pass RFC 7677's fixed nonce).
  scram_client(sasl_mechanism mechanism, std::string username, std::string password,
               std::string nonce = {});

  std::string client_first() const;
  result<std::string, std::string> client_final(std::string_view server_first);
  result<void, std::string> verify_server_final(std::string_view server_final) const;

 private:
  sasl_mechanism mechanism_;
  std::string username_;
  std::string password_;
  std::string nonce_;
  std::string client_first_bare_;
  std::string server_signature_;  // expected, set by client_final
};

// The SASL exchange of one connection: the messages to send in SaslAuthenticate, one after
// another, each from the server's last answer (empty for the first).
class sasl_session {
 public:
  explicit sasl_session(const security_config& config);
  // The next client message, or nullopt once the exchange is complete (verified).
  result<std::optional<std::string>, std::string> next(std::string_view server_message);

 private:
  security_config config_;
  std::optional<scram_client> scram_;
  int step_ = 0;
};

// base64 (RFC 4648, with padding); decode fails on anything else.
std::string base64_encode(std::string_view bytes);
result<std::string, std::string> base64_decode(std::string_view text);

}  // namespace tarn::client
