// The SASL side of a connection on a SASL_PLAINTEXT or SASL_SSL listener, as Kafka's
// SaslServerAuthenticator: which requests are admitted before authentication (ApiVersions, then
// SaslHandshake, then SaslAuthenticate tokens; anything else closes the connection), the
// mechanisms (PLAIN with users from the JAAS config, SCRAM-SHA-256 and SCRAM-SHA-512 with
// credentials from the metadata log), the legacy framing after SaslHandshake v0 (raw tokens),
// and the principal it ends with. No sockets: the broker's connection feeds it requests and
// tokens and writes what it answers.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "security/principal.h"
#include "security/scram.h"
#include "security/security_config.h"

namespace tarn::security {

class oauthbearer_validator;

// The credential store SCRAM reads (the metadata log's UserScramCredentialRecords).
using scram_credential_lookup =
    std::function<std::optional<scram_credential>(scram_mechanism, const std::string& user)>;

// A listener's SASL settings, checked once at startup.
struct sasl_settings {
  std::vector<std::string> enabled_mechanisms;
  std::map<std::string, std::string> plain_users;  // user_<name>="<password>" of PLAIN's JAAS
  int32_t server_max_receive_size = 524288;
  int32_t failed_authentication_delay_ms = 100;
  int64_t connections_max_reauth_ms = 0;
  // OAUTHBEARER's validator (shared by the listener's connections), when it is enabled.
  std::shared_ptr<oauthbearer_validator> oauthbearer;

  // Refuses mechanisms tarn does not serve (GSSAPI), a PLAIN without a PlainLoginModule JAAS
  // entry and an OAUTHBEARER whose validator cannot be built (a JWKS that does not load),
  // naming the key to set.
  static result<sasl_settings, std::string> make(const sasl_config& config,
                                                 const std::string& listener);
};

// One mechanism's server side: tokens in, tokens out.
class sasl_mechanism_server {
 public:
  virtual ~sasl_mechanism_server() = default;
  struct step {
    enum class outcome { challenge, complete, failed } result = outcome::failed;
    std::vector<uint8_t> token;
    // On failure: Kafka's SaslAuthenticationException text, sent as is, or empty for a
    // SaslException, which Kafka answers with its generic "invalid credentials" sentence.
    std::string error;
    std::string detail;  // why, for the broker's log (never sent)
  };
  virtual step evaluate(std::span<const uint8_t> token) = 0;
  // The authenticated user, once complete.
  virtual const std::string& authorization_id() const = 0;
  // How long the credential stays valid from completion (OAUTHBEARER: the token's exp), which
  // bounds the KIP-368 session; nullopt for credentials that do not expire.
  virtual std::optional<int64_t> credential_lifetime_ms() const { return std::nullopt; }
};

std::unique_ptr<sasl_mechanism_server> make_plain_server(const sasl_settings& settings);
// `nonce` replaces the random server nonce (RFC 7677's test vector); empty for a random one.
std::unique_ptr<sasl_mechanism_server> make_scram_server(scram_mechanism m,
                                                         scram_credential_lookup lookup,
                                                         std::string nonce = {});

class sasl_authenticator {
 public:
  sasl_authenticator(std::shared_ptr<const sasl_settings> settings,
                     scram_credential_lookup scram_lookup);

  enum class state { initial, handshake, authenticate, legacy_token, complete, failed };
  state current() const { return state_; }
  bool complete() const { return state_ == state::complete; }
  bool expects_raw_token() const { return state_ == state::legacy_token; }
  const sasl_settings& settings() const { return *settings_; }

  // Whether a Kafka request with this API key may be handled now. False: Kafka's
  // IllegalSaslStateException, the connection is closed at once without an answer; the reason is
  // in *why.
  bool admit(int16_t api_key, std::string* why);

  struct handshake_answer {
    int16_t error_code = 0;
    std::vector<std::string> mechanisms;
  };
  // SaslHandshake vN with the client's mechanism.
  handshake_answer handshake(int16_t version, std::string_view mechanism);

  struct token_answer {
    int16_t error_code = 0;
    std::optional<std::string> error_message;
    std::vector<uint8_t> token;
    int64_t session_lifetime_ms = 0;
    std::string detail;  // why it failed, for the broker's log (never sent to the client)
  };
  // A SaslAuthenticate token (KIP-152) or a raw one (after SaslHandshake v0). After a failure the
  // state is `failed`: the answer is written after the delay and the connection closed.
  token_answer authenticate(std::span<const uint8_t> token,
                            std::chrono::steady_clock::time_point now);

  // KIP-368: a SaslHandshake on an authenticated connection whose session expires
  // (connections.max.reauth.ms, or an OAUTHBEARER token's exp) starts a re-authentication
  // (false, and nothing changes, when the session does not expire). Until it completes only
  // SaslHandshake and SaslAuthenticate are admitted; the mechanism and the principal must stay the
  // same, and the session gets a new lifetime.
  bool begin_reauthentication();
  bool reauthenticating() const { return reauthenticating_; }

  // The principal, once complete (during a re-authentication: the one authenticated before).
  const kafka_principal& principal() const { return principal_; }
  // When the session ends (connections.max.reauth.ms, a token's exp); nullopt without expiry.
  std::optional<std::chrono::steady_clock::time_point> session_expires_at() const {
    return expires_at_;
  }
  std::string_view mechanism() const { return mechanism_; }

 private:
  std::shared_ptr<const sasl_settings> settings_;
  scram_credential_lookup scram_lookup_;
  state state_ = state::initial;
  std::string mechanism_;
  std::unique_ptr<sasl_mechanism_server> server_;
  kafka_principal principal_ = kafka_principal::anonymous();
  std::optional<std::chrono::steady_clock::time_point> expires_at_;
  bool reauthenticating_ = false;
};

}  // namespace tarn::security
