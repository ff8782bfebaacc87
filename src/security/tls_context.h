// The server side of TLS for a listener: an OpenSSL context built from Kafka's ssl.* settings
// (keystore PEM or PKCS12, truststore, ssl.client.auth, ssl.enabled.protocols,
// ssl.cipher.suites), and the subject of a client certificate in the form Kafka's
// DefaultKafkaPrincipalBuilder reads it (X500Principal.getName(), RFC 2253). No I/O but reading
// the keystore and truststore files; the broker wraps the context in Asio's ssl streams.
#pragma once

#include <openssl/ssl.h>

#include <memory>
#include <optional>
#include <string>

#include "base/result.h"
#include "security/security_config.h"

namespace tarn::security {

struct ssl_ctx_free {
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
using ssl_ctx_ptr = std::unique_ptr<SSL_CTX, ssl_ctx_free>;

// A server context for `config`, or a sentence for the operator naming the key at fault.
result<ssl_ctx_ptr, std::string> make_server_tls_context(const ssl_config& config);

// The subject of the certificate the peer presented on `ssl` (a completed handshake), as RFC 2253
// text ("CN=client,OU=eng,O=tarn"); nullopt when it presented none.
std::optional<std::string> peer_subject_dn(const SSL* ssl);

}  // namespace tarn::security
