// SaslServerAuthenticator's state machine and the PLAIN and SCRAM servers, with Kafka 4.4's
// error texts (PlainSaslServer, ScramSaslServer).
#include "security/sasl_authenticator.h"

#include <fmt/format.h>
#include <openssl/crypto.h>

#include <algorithm>

#include "protocol/error_codes.h"
#include "security/jaas_config.h"
#include "security/oauthbearer.h"

namespace tarn::security {

namespace {

constexpr int16_t api_versions_key = 18;
constexpr int16_t sasl_handshake_key = 17;
constexpr int16_t sasl_authenticate_key = 36;

bool equal_constant_time(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

class plain_server final : public sasl_mechanism_server {
 public:
  explicit plain_server(const sasl_settings& settings) : users_(settings.plain_users) {}

  step evaluate(std::span<const uint8_t> token) override {
    // [authzid] NUL authcid NUL passwd (RFC 4616), split as PlainSaslServer.extractTokens.
    std::string_view text(reinterpret_cast<const char*>(token.data()), token.size());
    std::vector<std::string_view> parts;
    size_t start = 0;
    for (int i = 0; i < 4; ++i) {
      size_t end = text.find('\0', start);
      if (end == std::string_view::npos) {
        parts.push_back(text.substr(start));
        break;
      }
      parts.push_back(text.substr(start, end - start));
      start = end + 1;
    }
    if (parts.size() != 3) {
      return failed(
          fmt::format("Invalid SASL/PLAIN response: expected 3 tokens, got {}", parts.size()));
    }
    const std::string_view authzid = parts[0];
    const std::string_view username = parts[1];
    const std::string_view password = parts[2];
    if (username.empty()) return failed("Authentication failed: username not specified");
    if (password.empty()) return failed("Authentication failed: password not specified");
    auto it = users_.find(std::string(username));
    if (it == users_.end() || !equal_constant_time(it->second, password)) {
      return failed("Authentication failed: Invalid username or password");
    }
    if (!authzid.empty() && authzid != username) {
      return failed(
          "Authentication failed: Client requested an authorization id that is different from "
          "username");
    }
    user_ = std::string(username);
    return {step::outcome::complete, {}, {}, {}};
  }
  const std::string& authorization_id() const override { return user_; }

 private:
  static step failed(std::string why) { return {step::outcome::failed, {}, std::move(why), {}}; }
  const std::map<std::string, std::string>& users_;
  std::string user_;
};

// RFC 5802's saslname: "=2C" is ',' and "=3D" is '='; any other '=' is an error.
std::optional<std::string> decode_saslname(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == ',') return std::nullopt;
    if (s[i] != '=') {
      out += s[i];
      continue;
    }
    if (s.substr(i, 3) == "=2C") {
      out += ',';
    } else if (s.substr(i, 3) == "=3D") {
      out += '=';
    } else {
      return std::nullopt;
    }
    i += 2;
  }
  return out;
}

// Splits "k=v,k=v,...", each attribute one letter (extensions may be longer, as Kafka's).
std::vector<std::pair<std::string_view, std::string_view>> attributes(std::string_view s) {
  std::vector<std::pair<std::string_view, std::string_view>> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    std::string_view part = s.substr(start, comma == s.npos ? s.npos : comma - start);
    size_t eq = part.find('=');
    if (eq == std::string_view::npos || eq == 0) return {};
    out.emplace_back(part.substr(0, eq), part.substr(eq + 1));
    if (comma == s.npos) break;
    start = comma + 1;
  }
  return out;
}

class scram_server final : public sasl_mechanism_server {
 public:
  scram_server(scram_mechanism m, scram_credential_lookup lookup, std::string nonce)
      : mechanism_(m), lookup_(std::move(lookup)), server_nonce_(std::move(nonce)) {}

  step evaluate(std::span<const uint8_t> token) override {
    std::string_view text(reinterpret_cast<const char*>(token.data()), token.size());
    if (state_ == 0) return client_first(text);
    if (state_ == 1) return client_final(text);
    return generic_failure("a token after the exchange ended");
  }
  const std::string& authorization_id() const override { return user_; }

 private:
  // A SaslException in Kafka: the client sees the generic sentence; `why` is for the log.
  step generic_failure(const char* why) {
    state_ = 2;
    return {step::outcome::failed, {}, {}, why};
  }

  step client_first(std::string_view text) {
    // gs2-header: "n," (no channel binding), then "a=authzid" or nothing, then ",".
    if (!text.starts_with("n,"))
      return generic_failure("client-first: not \"n,\" (channel binding)");
    size_t second = text.find(',', 2);
    if (second == std::string_view::npos) return generic_failure("client-first: no gs2 header");
    std::string_view authz = text.substr(2, second - 2);
    std::string authzid;
    if (!authz.empty()) {
      if (!authz.starts_with("a=")) return generic_failure("client-first: bad authzid");
      auto decoded = decode_saslname(authz.substr(2));
      if (!decoded) return generic_failure("client-first: bad authzid");
      authzid = *decoded;
    }
    gs2_header_ = std::string(text.substr(0, second + 1));
    client_first_bare_ = std::string(text.substr(second + 1));
    auto attrs = attributes(client_first_bare_);
    if (attrs.size() < 2 || attrs[0].first != "n" || attrs[1].first != "r" ||
        attrs[1].second.empty()) {
      return generic_failure("client-first: expected n=<user>,r=<nonce>");
    }
    auto user = decode_saslname(attrs[0].second);
    if (!user || user->empty()) return generic_failure("client-first: bad user name");
    for (size_t i = 2; i < attrs.size(); ++i) {
      // Kafka's only extension is tokenauth (delegation tokens), which tarn does not serve.
      if (attrs[i].first == "tokenauth") return generic_failure("delegation tokens are not served");
    }
    std::optional<scram_credential> credential =
        lookup_ ? lookup_(mechanism_, *user) : std::nullopt;
    if (!credential) return generic_failure("no credential for the user and mechanism");
    if (!authzid.empty() && authzid != *user) {
      state_ = 2;
      return {step::outcome::failed,
              {},
              "Authentication failed: Client requested an authorization id that is different "
              "from username",
              {}};
    }
    if (credential->iterations < scram_min_iterations) {
      return generic_failure("the stored credential has too few iterations");
    }
    credential_ = std::move(*credential);
    user_ = *user;
    if (server_nonce_.empty()) {
      // As Kafka's ScramFormatter.secureRandomString: random alphanumerics.
      static constexpr char alphabet[] =
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
      for (uint8_t b : random_bytes(24)) server_nonce_ += alphabet[b % (sizeof(alphabet) - 1)];
    }
    nonce_ = std::string(attrs[1].second) + server_nonce_;
    server_first_ = fmt::format("r={},s={},i={}", nonce_, base64_encode(credential_.salt),
                                credential_.iterations);
    state_ = 1;
    return {step::outcome::challenge, {server_first_.begin(), server_first_.end()}, {}, {}};
  }

  step client_final(std::string_view text) {
    size_t proof_at = text.rfind(",p=");
    if (proof_at == std::string_view::npos) return generic_failure("client-final: no proof");
    const std::string_view without_proof = text.substr(0, proof_at);
    auto attrs = attributes(without_proof);
    if (attrs.size() < 2 || attrs[0].first != "c" || attrs[1].first != "r") {
      return generic_failure("client-final: expected c=...,r=...");
    }
    const std::string gs2 = gs2_header_;
    if (attrs[0].second !=
        base64_encode({reinterpret_cast<const uint8_t*>(gs2.data()), gs2.size()})) {
      return generic_failure("client-final: channel binding differs from the gs2 header");
    }
    // Kafka checks that the nonce ends with the server-first one (ScramSaslServer): librdkafka
    // sends its own nonce again in front of it.
    if (!attrs[1].second.ends_with(nonce_)) {
      return generic_failure("Invalid client nonce in the final client message.");
    }
    auto proof = base64_decode(text.substr(proof_at + 3));
    if (!proof || proof->size() != credential_.stored_key.size()) {
      return generic_failure("client-final: bad proof encoding");
    }
    const std::string auth_message =
        fmt::format("{},{},{}", client_first_bare_, server_first_, without_proof);
    const bytes client_signature = scram_hmac(mechanism_, credential_.stored_key, auth_message);
    bytes client_key(proof->size());
    for (size_t i = 0; i < client_key.size(); ++i)
      client_key[i] = (*proof)[i] ^ client_signature[i];
    const bytes computed = scram_hash(mechanism_, client_key);
    if (CRYPTO_memcmp(computed.data(), credential_.stored_key.data(), computed.size()) != 0) {
      return generic_failure("Invalid client credentials");
    }
    const bytes server_signature = scram_hmac(mechanism_, credential_.server_key, auth_message);
    const std::string server_final = "v=" + base64_encode(server_signature);
    state_ = 3;
    return {step::outcome::complete, {server_final.begin(), server_final.end()}, {}, {}};
  }

  scram_mechanism mechanism_;
  scram_credential_lookup lookup_;
  std::string server_nonce_;
  int state_ = 0;  // 0: client-first expected, 1: client-final expected, 2: failed, 3: complete
  std::string gs2_header_;
  std::string client_first_bare_;
  std::string server_first_;
  std::string nonce_;
  scram_credential credential_;
  std::string user_;
};

}  // namespace

result<sasl_settings, std::string> sasl_settings::make(const sasl_config& config,
                                                       const std::string& listener) {
  sasl_settings s;
  s.server_max_receive_size = config.server_max_receive_size;
  s.failed_authentication_delay_ms = config.failed_authentication_delay_ms;
  s.connections_max_reauth_ms = config.connections_max_reauth_ms;
  const std::string prefix = "listener.name." + lower(listener) + ".";
  if (config.enabled_mechanisms.empty()) {
    return fail(fmt::format("listener {}: sasl.enabled.mechanisms is empty", listener));
  }
  for (const auto& m : config.enabled_mechanisms) {
    if (m != "PLAIN" && m != "OAUTHBEARER" && !parse_scram_mechanism(m)) {
      return fail(
          fmt::format("listener {}: SASL mechanism {} is not served by tarn (PLAIN, SCRAM-SHA-256, "
                      "SCRAM-SHA-512, OAUTHBEARER); set {}sasl.enabled.mechanisms or "
                      "sasl.enabled.mechanisms (Kafka's default is GSSAPI)",
                      listener, m, prefix));
    }
    s.enabled_mechanisms.push_back(m);
  }
  if (std::find(s.enabled_mechanisms.begin(), s.enabled_mechanisms.end(), "PLAIN") !=
      s.enabled_mechanisms.end()) {
    auto jaas = config.jaas_config.find("PLAIN");
    if (jaas == config.jaas_config.end()) {
      return fail(fmt::format(
          "listener {}: PLAIN is enabled but no JAAS config names its users: set "
          "{}plain.sasl.jaas.config (org.apache.kafka.common.security.plain.PlainLoginModule "
          "required user_alice=\"alice-secret\";)",
          listener, prefix));
    }
    auto modules = parse_jaas_config(jaas->second);
    if (!modules) {
      return fail(
          fmt::format("listener {}: PLAIN's sasl.jaas.config: {}", listener, modules.error()));
    }
    for (const auto& m : *modules) {
      if (m.class_name != "org.apache.kafka.common.security.plain.PlainLoginModule") continue;
      for (const auto& [key, value] : m.options) {
        if (key.starts_with("user_") && key.size() > 5) s.plain_users[key.substr(5)] = value;
      }
    }
  }
  if (std::find(s.enabled_mechanisms.begin(), s.enabled_mechanisms.end(), "OAUTHBEARER") !=
      s.enabled_mechanisms.end()) {
    auto validator = make_oauthbearer_validator(config, listener);
    if (!validator) return fail(validator.error());
    s.oauthbearer = std::move(*validator);
  }
  return s;
}

std::unique_ptr<sasl_mechanism_server> make_plain_server(const sasl_settings& settings) {
  return std::make_unique<plain_server>(settings);
}

std::unique_ptr<sasl_mechanism_server> make_scram_server(scram_mechanism m,
                                                         scram_credential_lookup lookup,
                                                         std::string nonce) {
  return std::make_unique<scram_server>(m, std::move(lookup), std::move(nonce));
}

sasl_authenticator::sasl_authenticator(std::shared_ptr<const sasl_settings> settings,
                                       scram_credential_lookup scram_lookup)
    : settings_(std::move(settings)), scram_lookup_(std::move(scram_lookup)) {}

bool sasl_authenticator::admit(int16_t api_key, std::string* why) {
  switch (state_) {
    case state::complete:
      return true;
    case state::initial:
    case state::handshake:
      // ApiVersions first (again only after an UNSUPPORTED_VERSION answer), then SaslHandshake.
      if (api_key == api_versions_key) {
        state_ = state::handshake;
        return true;
      }
      if (api_key == sasl_handshake_key) return true;
      *why = fmt::format("Unexpected Kafka request of type {} during SASL handshake.", api_key);
      break;
    case state::authenticate:
      if (api_key == sasl_authenticate_key) return true;
      *why =
          fmt::format("Unexpected Kafka request of type {} during SASL authentication.", api_key);
      break;
    case state::legacy_token:
      *why = "a Kafka request where a SASL token was expected (SaslHandshake v0)";
      break;
    case state::failed:
      *why = "SASL authentication failed";
      break;
  }
  state_ = state::failed;
  return false;
}

bool sasl_authenticator::begin_reauthentication() {
  if (state_ != state::complete || !expires_at_) return false;
  reauthenticating_ = true;
  state_ = state::handshake;
  return true;
}

sasl_authenticator::handshake_answer sasl_authenticator::handshake(int16_t version,
                                                                   std::string_view mechanism) {
  handshake_answer out;
  out.mechanisms = settings_->enabled_mechanisms;
  if (state_ != state::initial && state_ != state::handshake) {
    out.error_code = protocol::code(protocol::error_code::illegal_sasl_state);
    return out;
  }
  const std::string name(mechanism);
  if (std::find(out.mechanisms.begin(), out.mechanisms.end(), name) == out.mechanisms.end()) {
    // Kafka answers, then closes (UnsupportedSaslMechanismException is an authentication failure).
    out.error_code = protocol::code(protocol::error_code::unsupported_sasl_mechanism);
    state_ = state::failed;
    return out;
  }
  if (reauthenticating_ && name != mechanism_) {
    // ReauthInfo.saslMechanismUnchanged: a re-authentication keeps the mechanism.
    out.error_code = protocol::code(protocol::error_code::illegal_sasl_state);
    state_ = state::failed;
    return out;
  }
  mechanism_ = name;
  if (name == "PLAIN") {
    server_ = make_plain_server(*settings_);
  } else if (name == "OAUTHBEARER") {
    server_ = make_oauthbearer_server(settings_->oauthbearer);
  } else {
    server_ = make_scram_server(*parse_scram_mechanism(name), scram_lookup_);
  }
  state_ = version >= 1 ? state::authenticate : state::legacy_token;
  return out;
}

sasl_authenticator::token_answer sasl_authenticator::authenticate(
    std::span<const uint8_t> token, std::chrono::steady_clock::time_point now) {
  token_answer out;
  if (state_ != state::authenticate && state_ != state::legacy_token) {
    out.error_code = protocol::code(protocol::error_code::illegal_sasl_state);
    out.error_message = state_ == state::complete
                            ? "SaslAuthenticate request received after successful authentication"
                            : "Unexpected SaslAuthenticate request";
    return out;
  }
  auto step = server_->evaluate(token);
  switch (step.result) {
    case sasl_mechanism_server::step::outcome::challenge:
      out.token = std::move(step.token);
      return out;
    case sasl_mechanism_server::step::outcome::complete:
      if (reauthenticating_ && kafka_principal::user(server_->authorization_id()) != principal_) {
        // ReauthInfo.ensurePrincipalUnchanged.
        state_ = state::failed;
        out.error_code = protocol::code(protocol::error_code::sasl_authentication_failed);
        out.error_message = "Cannot change principals during re-authentication from " +
                            principal_.to_string() + ": " +
                            kafka_principal::user(server_->authorization_id()).to_string();
        return out;
      }
      reauthenticating_ = false;
      out.token = std::move(step.token);
      principal_ = kafka_principal::user(server_->authorization_id());
      state_ = state::complete;
      // SaslServerAuthenticator: the session ends at the earlier of connections.max.reauth.ms
      // and the credential's own expiry (an OAUTHBEARER token's exp), never below zero.
      if (auto credential_ms = server_->credential_lifetime_ms();
          credential_ms || settings_->connections_max_reauth_ms > 0) {
        int64_t lifetime_ms = settings_->connections_max_reauth_ms > 0
                                  ? settings_->connections_max_reauth_ms
                                  : std::max<int64_t>(0, credential_ms.value_or(0));
        if (credential_ms)
          lifetime_ms = std::min(lifetime_ms, std::max<int64_t>(0, *credential_ms));
        out.session_lifetime_ms = lifetime_ms;
        expires_at_ = now + std::chrono::milliseconds(lifetime_ms);
      } else {
        expires_at_.reset();
      }
      return out;
    case sasl_mechanism_server::step::outcome::failed:
      break;
  }
  state_ = state::failed;
  out.detail = std::move(step.detail);
  out.error_code = protocol::code(protocol::error_code::sasl_authentication_failed);
  out.error_message =
      !step.error.empty()
          ? step.error
          : "Authentication failed during authentication due to invalid credentials with SASL "
            "mechanism " +
                mechanism_;
  return out;
}

}  // namespace tarn::security
