// SASL/OAUTHBEARER on the server (KIP-255, KIP-768): the client's first message
// (`n,[a=<authzid>],\x01auth=Bearer <jwt>\x01[key=value\x01...]\x01`), Kafka's failure exchange
// (a `{"status":"invalid_token"}` challenge, the client's `\x01`, then
// SASL_AUTHENTICATION_FAILED), and the two validators Kafka has: the unsecured one
// (OAuthBearerUnsecuredValidatorCallbackHandler: alg "none" tokens, options from the JAAS config)
// and the JWT one (OAuthBearerValidatorCallbackHandler: signatures checked against a JWKS read
// from a file: URL or a loopback http:// URL and refreshed on a thread of its own). JSON is
// nlohmann's, signatures OpenSSL's EVP; no sockets but the JWKS fetch.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "security/sasl_authenticator.h"

namespace tarn::security {

// What a valid token says (Kafka's OAuthBearerToken).
struct oauthbearer_token {
  std::string principal_name;
  std::vector<std::string> scope;
  int64_t expires_at_ms = 0;  // the exp claim, in ms since the epoch (KIP-368's session end)
  std::optional<int64_t> issued_at_ms;
};

// Why a token is refused: `status` and `scope` go to the client in the JSON challenge (RFC 7628
// section 3.2.2); `detail` only to the broker's log.
struct oauthbearer_failure {
  std::string status = "invalid_token";
  std::optional<std::string> scope;
  std::string detail;
};

class oauthbearer_validator {
 public:
  virtual ~oauthbearer_validator() = default;
  // `now_ms`: wall-clock milliseconds since the epoch. Thread-safe.
  virtual result<oauthbearer_token, oauthbearer_failure> validate(std::string_view token,
                                                                  int64_t now_ms) = 0;
};

// The unsecured validator's JAAS options (OAuthBearerLoginModule's unsecuredValidator*).
struct unsecured_validator_options {
  std::string principal_claim_name = "sub";  // unsecuredValidatorPrincipalClaimName
  std::string scope_claim_name = "scope";    // unsecuredValidatorScopeClaimName
  std::vector<std::string> required_scope;   // unsecuredValidatorRequiredScope
  int64_t allowable_clock_skew_ms = 0;       // unsecuredValidatorAllowableClockSkewMs

  // From the options of the OAuthBearerLoginModule entry, or Kafka's error text for a bad one.
  static result<unsecured_validator_options, std::string> from_jaas(
      const std::map<std::string, std::string>& options);
};
std::shared_ptr<oauthbearer_validator> make_unsecured_validator(unsecured_validator_options o);

// KIP-768's broker keys (sasl.oauthbearer.*).
struct jwt_validator_options {
  std::string jwks_endpoint_url;               // sasl.oauthbearer.jwks.endpoint.url
  int64_t jwks_endpoint_refresh_ms = 3600000;  // sasl.oauthbearer.jwks.endpoint.refresh.ms
  // sasl.oauthbearer.jwks.endpoint.retry.backoff.ms: the least time between two refreshes asked
  // for by a token whose key id is not in the set.
  int64_t jwks_endpoint_retry_backoff_ms = 100;
  std::vector<std::string> expected_audience;  // sasl.oauthbearer.expected.audience
  std::optional<std::string> expected_issuer;  // sasl.oauthbearer.expected.issuer
  std::string sub_claim_name = "sub";          // sasl.oauthbearer.sub.claim.name
  std::string scope_claim_name = "scope";      // sasl.oauthbearer.scope.claim.name
  int64_t clock_skew_seconds = 30;             // sasl.oauthbearer.clock.skew.seconds
};

// Where a JWKS comes from: the text, or why it could not be read.
using jwks_fetcher = std::function<result<std::string, std::string>()>;
// file:<path> or http://127.0.0.1|localhost|[::1]:<port>/<path> (2 s timeout); other URLs are
// refused at startup.
result<jwks_fetcher, std::string> make_jwks_fetcher(const std::string& url);

// The JWT validator. The first fetch happens here (a JWKS that does not load fails startup);
// with `refresh_thread` a thread refetches every jwks_endpoint_refresh_ms, and sooner when a
// token names a key id the set lacks. A failed refresh keeps the previous keys.
result<std::shared_ptr<oauthbearer_validator>, std::string> make_jwt_validator(
    jwt_validator_options o, jwks_fetcher fetch, bool refresh_thread = true);

// A listener's validator, chosen as Kafka's SaslChannelBuilder does: the JWT one when
// oauthbearer.sasl.server.callback.handler.class names OAuthBearerValidatorCallbackHandler (or,
// unlike Kafka, when a JWKS URL is set), else the unsecured one with the JAAS options.
result<std::shared_ptr<oauthbearer_validator>, std::string> make_oauthbearer_validator(
    const sasl_config& config, const std::string& listener);

// The mechanism's server side for one connection. `wall_clock_ms` gives now (tests pin it).
std::unique_ptr<sasl_mechanism_server> make_oauthbearer_server(
    std::shared_ptr<oauthbearer_validator> validator, std::function<int64_t()> wall_clock_ms = {});

}  // namespace tarn::security
