// The SASL state machine without sockets: what is admitted before authentication, PLAIN with
// Kafka's error texts, SCRAM end to end with a client computed here, the legacy v0 framing.
#include "security/sasl_authenticator.h"

#include <gtest/gtest.h>

#include "protocol/error_codes.h"
#include "security/jaas_config.h"

namespace tarn::security {
namespace {

using std::chrono::steady_clock;

std::vector<uint8_t> of(std::string_view s) { return {s.begin(), s.end()}; }
std::string text(const std::vector<uint8_t>& b) { return {b.begin(), b.end()}; }

std::shared_ptr<const sasl_settings> settings(std::vector<std::string> mechanisms,
                                              int64_t reauth_ms = 0) {
  sasl_config c;
  c.enabled_mechanisms = std::move(mechanisms);
  c.jaas_config["PLAIN"] =
      "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" "
      "password=\"admin-secret\" user_admin=\"admin-secret\" user_alice=\"alice-secret\";";
  c.connections_max_reauth_ms = reauth_ms;
  auto s = sasl_settings::make(c, "SASL_PLAINTEXT");
  EXPECT_TRUE(s) << s.error();
  return std::make_shared<const sasl_settings>(std::move(*s));
}

constexpr int16_t error(protocol::error_code e) { return static_cast<int16_t>(e); }

TEST(sasl_settings, refuses_mechanisms_tarn_does_not_serve_and_plain_without_users) {
  sasl_config c;  // Kafka's default: GSSAPI
  auto s = sasl_settings::make(c, "SASL_SSL");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().find("GSSAPI"), std::string::npos) << s.error();
  EXPECT_NE(s.error().find("listener.name.sasl_ssl.sasl.enabled.mechanisms"), std::string::npos);
  c.enabled_mechanisms = {"PLAIN"};
  s = sasl_settings::make(c, "SASL_SSL");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().find("listener.name.sasl_ssl.plain.sasl.jaas.config"), std::string::npos);
  c.enabled_mechanisms = {"SCRAM-SHA-512"};
  EXPECT_TRUE(sasl_settings::make(c, "SASL_SSL"));
}

TEST(sasl_authenticator, only_api_versions_and_handshake_before_authentication) {
  sasl_authenticator a(settings({"PLAIN"}), nullptr);
  std::string why;
  EXPECT_TRUE(a.admit(18, &why));
  EXPECT_TRUE(a.admit(17, &why));
  EXPECT_FALSE(a.admit(0, &why)) << "Produce before authentication closes the connection";
  EXPECT_EQ(why, "Unexpected Kafka request of type 0 during SASL handshake.");
  EXPECT_EQ(a.current(), sasl_authenticator::state::failed);
  EXPECT_FALSE(a.admit(17, &why));
}

TEST(sasl_authenticator, plain_success_sets_the_principal) {
  sasl_authenticator a(settings({"PLAIN", "SCRAM-SHA-256"}), nullptr);
  std::string why;
  ASSERT_TRUE(a.admit(17, &why));
  auto h = a.handshake(1, "PLAIN");
  EXPECT_EQ(h.error_code, 0);
  EXPECT_EQ(h.mechanisms, (std::vector<std::string>{"PLAIN", "SCRAM-SHA-256"}));
  EXPECT_FALSE(a.admit(3, &why)) << "only SaslAuthenticate after SaslHandshake v1";
  sasl_authenticator b(settings({"PLAIN"}), nullptr);
  ASSERT_TRUE(b.admit(17, &why));
  b.handshake(1, "PLAIN");
  ASSERT_TRUE(b.admit(36, &why));
  auto r = b.authenticate(of(std::string_view("\0alice\0alice-secret", 19)), steady_clock::now());
  EXPECT_EQ(r.error_code, 0);
  EXPECT_TRUE(b.complete());
  EXPECT_EQ(b.principal().to_string(), "User:alice");
  EXPECT_TRUE(b.admit(0, &why));
  EXPECT_FALSE(b.session_expires_at());
  auto again = b.authenticate(of("x"), steady_clock::now());
  EXPECT_EQ(again.error_code, error(protocol::error_code::illegal_sasl_state));
}

TEST(sasl_authenticator, plain_failures_carry_kafkas_messages) {
  struct tc {
    std::string_view token;
    const char* message;
  };
  for (auto [token, message] : {
           tc{std::string_view("\0alice\0wrong", 12),
              "Authentication failed: Invalid username or password"},
           tc{std::string_view("\0nobody\0x", 9),
              "Authentication failed: Invalid username or password"},
           tc{std::string_view("\0\0x", 3), "Authentication failed: username not specified"},
           tc{std::string_view("\0alice\0", 7), "Authentication failed: password not specified"},
           tc{std::string_view("alice-only", 10),
              "Invalid SASL/PLAIN response: expected 3 tokens, got 1"},
           tc{std::string_view("bob\0alice\0alice-secret", 22),
              "Authentication failed: Client requested an authorization id that is different "
              "from username"},
       }) {
    sasl_authenticator a(settings({"PLAIN"}), nullptr);
    a.handshake(1, "PLAIN");
    auto r = a.authenticate(of(token), steady_clock::now());
    EXPECT_EQ(r.error_code, error(protocol::error_code::sasl_authentication_failed));
    EXPECT_EQ(r.error_message, message);
    EXPECT_EQ(a.current(), sasl_authenticator::state::failed);
  }
}

TEST(sasl_authenticator, unsupported_mechanism_lists_the_enabled_ones) {
  sasl_authenticator a(settings({"SCRAM-SHA-512", "PLAIN"}), nullptr);
  auto h = a.handshake(1, "GSSAPI");
  EXPECT_EQ(h.error_code, error(protocol::error_code::unsupported_sasl_mechanism));
  EXPECT_EQ(h.mechanisms, (std::vector<std::string>{"SCRAM-SHA-512", "PLAIN"}));
  EXPECT_EQ(a.current(), sasl_authenticator::state::failed);
}

TEST(sasl_authenticator, handshake_v0_switches_to_raw_tokens) {
  sasl_authenticator a(settings({"PLAIN"}), nullptr);
  a.handshake(0, "PLAIN");
  EXPECT_TRUE(a.expects_raw_token());
  auto r = a.authenticate(of(std::string_view("\0admin\0admin-secret", 19)), steady_clock::now());
  EXPECT_EQ(r.error_code, 0);
  EXPECT_EQ(a.principal().to_string(), "User:admin");
}

// A SCRAM-SHA-512 exchange with a client computed here; `echo_prefix` goes before the nonce the
// client echoes (librdkafka sends its own nonce again there, which Kafka accepts).
void scram_exchange(const std::string& echo_prefix) {
  const bytes salt = random_bytes(16);
  const scram_credential stored =
      scram_make_credential(scram_mechanism::sha_512, "alice-secret", salt, 4096);
  auto lookup = [&](scram_mechanism m, const std::string& user) -> std::optional<scram_credential> {
    if (m == scram_mechanism::sha_512 && user == "alice") return stored;
    return std::nullopt;
  };
  sasl_authenticator a(settings({"SCRAM-SHA-512"}, 60000), lookup);
  a.handshake(1, "SCRAM-SHA-512");
  const std::string client_first_bare = "n=alice,r=clientnonce";
  auto first = a.authenticate(of("n,," + client_first_bare), steady_clock::now());
  ASSERT_EQ(first.error_code, 0);
  const std::string server_first = text(first.token);
  ASSERT_TRUE(server_first.starts_with("r=clientnonce"));
  const std::string nonce = server_first.substr(2, server_first.find(',') - 2);
  const std::string without_proof = "c=biws,r=" + echo_prefix + nonce;
  const std::string auth_message = client_first_bare + "," + server_first + "," + without_proof;
  const bytes salted = scram_salted_password(scram_mechanism::sha_512, "alice-secret", salt, 4096);
  const bytes client_key = scram_hmac(scram_mechanism::sha_512, salted, "Client Key");
  const bytes signature = scram_hmac(
      scram_mechanism::sha_512, scram_hash(scram_mechanism::sha_512, client_key), auth_message);
  bytes proof(client_key.size());
  for (size_t i = 0; i < proof.size(); ++i) proof[i] = client_key[i] ^ signature[i];
  const auto now = steady_clock::now();
  auto final_answer = a.authenticate(of(without_proof + ",p=" + base64_encode(proof)), now);
  ASSERT_EQ(final_answer.error_code, 0) << final_answer.detail;
  const bytes server_key = scram_hmac(scram_mechanism::sha_512, salted, "Server Key");
  EXPECT_EQ(text(final_answer.token),
            "v=" + base64_encode(scram_hmac(scram_mechanism::sha_512, server_key, auth_message)));
  EXPECT_EQ(a.principal().to_string(), "User:alice");
  EXPECT_EQ(final_answer.session_lifetime_ms, 60000);
  EXPECT_EQ(a.session_expires_at(), now + std::chrono::milliseconds(60000));
}

TEST(sasl_authenticator, scram_sha_512_with_a_client_computed_here_and_a_session_lifetime) {
  scram_exchange("");
}

TEST(sasl_authenticator, scram_accepts_librdkafkas_repeated_client_nonce) {
  scram_exchange("clientnonce");
}

TEST(sasl_authenticator, scram_unknown_user_gets_the_generic_message) {
  sasl_authenticator a(settings({"SCRAM-SHA-256"}), nullptr);
  a.handshake(1, "SCRAM-SHA-256");
  auto r = a.authenticate(of("n,,n=nobody,r=abc"), steady_clock::now());
  EXPECT_EQ(r.error_code, error(protocol::error_code::sasl_authentication_failed));
  EXPECT_EQ(r.error_message,
            "Authentication failed during authentication due to invalid credentials with SASL "
            "mechanism SCRAM-SHA-256");
}

TEST(sasl_authenticator, reauthentication_keeps_mechanism_and_principal) {
  const auto plain = [](std::string_view user, std::string_view password) {
    std::string t;
    t += '\0';
    t += user;
    t += '\0';
    t += password;
    return of(t);
  };
  {  // Without connections.max.reauth.ms there is no re-authentication.
    sasl_authenticator a(settings({"PLAIN"}), nullptr);
    a.handshake(1, "PLAIN");
    ASSERT_EQ(a.authenticate(plain("alice", "alice-secret"), steady_clock::now()).error_code, 0);
    EXPECT_FALSE(a.begin_reauthentication());
    EXPECT_TRUE(a.complete());
  }
  sasl_authenticator a(settings({"PLAIN", "SCRAM-SHA-256"}, 1000), nullptr);
  a.handshake(1, "PLAIN");
  const auto t0 = steady_clock::now();
  ASSERT_EQ(a.authenticate(plain("alice", "alice-secret"), t0).error_code, 0);
  ASSERT_TRUE(a.begin_reauthentication());
  EXPECT_FALSE(a.complete());
  EXPECT_EQ(a.principal().to_string(), "User:alice") << "kept while re-authenticating";
  std::string why;
  EXPECT_TRUE(a.admit(17, &why));
  EXPECT_EQ(a.handshake(1, "PLAIN").error_code, 0);
  auto again = a.authenticate(plain("alice", "alice-secret"), t0 + std::chrono::seconds(5));
  EXPECT_EQ(again.error_code, 0);
  EXPECT_EQ(again.session_lifetime_ms, 1000);
  EXPECT_EQ(a.session_expires_at(), t0 + std::chrono::seconds(6));
  EXPECT_TRUE(a.complete());

  ASSERT_TRUE(a.begin_reauthentication());
  a.handshake(1, "PLAIN");
  auto other = a.authenticate(plain("admin", "admin-secret"), steady_clock::now());
  EXPECT_EQ(other.error_code, error(protocol::error_code::sasl_authentication_failed));
  EXPECT_EQ(other.error_message,
            "Cannot change principals during re-authentication from User:alice: User:admin");
  EXPECT_EQ(a.current(), sasl_authenticator::state::failed);

  sasl_authenticator b(settings({"PLAIN", "SCRAM-SHA-256"}, 1000), nullptr);
  b.handshake(1, "PLAIN");
  ASSERT_EQ(b.authenticate(plain("alice", "alice-secret"), t0).error_code, 0);
  ASSERT_TRUE(b.begin_reauthentication());
  EXPECT_EQ(b.handshake(1, "SCRAM-SHA-256").error_code,
            error(protocol::error_code::illegal_sasl_state))
      << "the mechanism cannot change";
}

TEST(jaas_config, parses_kafkas_examples_and_reports_errors) {
  auto m = parse_jaas_config(
      "org.apache.kafka.common.security.plain.PlainLoginModule required\n"
      "  username=\"admin\" password=\"a \\\"b\\\"\" user_alice=alice-secret;");
  ASSERT_TRUE(m) << m.error();
  ASSERT_EQ(m->size(), 1u);
  EXPECT_EQ((*m)[0].class_name, "org.apache.kafka.common.security.plain.PlainLoginModule");
  EXPECT_EQ((*m)[0].control_flag, "required");
  EXPECT_EQ((*m)[0].options.at("password"), "a \"b\"");
  EXPECT_EQ((*m)[0].options.at("user_alice"), "alice-secret");
  EXPECT_FALSE(parse_jaas_config("x.Module required a=\"b\""));
  auto bad_flag = parse_jaas_config("x.Module maybe;");
  ASSERT_FALSE(bad_flag);
  EXPECT_EQ(bad_flag.error(), "Invalid login module control flag 'maybe' in JAAS config");
  auto no_value = parse_jaas_config("x.Module required a=;");
  ASSERT_FALSE(no_value);
  EXPECT_EQ(no_value.error(), "Value not specified for key 'a' in JAAS config");
}

}  // namespace
}  // namespace tarn::security
