// tarn's SCRAM client (src/client/client_security.h) against tarn's SCRAM server
// (src/security/sasl_authenticator.h) in one process, no sockets: both mechanisms, the right
// password, a wrong one, and a server whose signature the client must refuse. Here rather than
// in src/client because src/client may not link src/security (house.md); a test may link both.
#include <gtest/gtest.h>

#include <string>

#include "client/client_security.h"
#include "security/sasl_authenticator.h"
#include "security/scram.h"

namespace tarn::test {
namespace {

using client::sasl_mechanism;
using security::scram_mechanism;

struct exchange_result {
  bool server_complete = false;
  std::string client_error;  // empty: the client accepted the server's signature
};

// Runs sasl_session against a SCRAM server that knows `stored_password` for alice.
exchange_result exchange(sasl_mechanism client_m, scram_mechanism server_m,
                         const std::string& password, const std::string& stored_password) {
  const auto credential =
      security::scram_make_credential(server_m, stored_password, security::random_bytes(16), 4096);
  auto server = security::make_scram_server(
      server_m,
      [&](scram_mechanism m, const std::string& user) -> std::optional<security::scram_credential> {
        if (m != server_m || user != "alice") return std::nullopt;
        return credential;
      });
  client::security_config config;
  config.mechanism = client_m;
  config.sasl_username = "alice";
  config.sasl_password = password;
  client::sasl_session session(config);
  exchange_result out;
  std::string server_message;
  for (int i = 0; i < 5; ++i) {
    auto next = session.next(server_message);
    if (!next) {
      out.client_error = next.error();
      return out;
    }
    if (!next->has_value()) return out;  // verified
    const std::string& token = **next;
    auto step = server->evaluate(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(token.data()), token.size()));
    if (step.result == security::sasl_mechanism_server::step::outcome::failed) {
      out.client_error = "server refused: " + step.error;
      return out;
    }
    out.server_complete = step.result == security::sasl_mechanism_server::step::outcome::complete;
    server_message.assign(step.token.begin(), step.token.end());
  }
  out.client_error = "no end after 5 steps";
  return out;
}

TEST(scram_client_server, both_mechanisms_round_trip) {
  for (auto [c, s] : {std::pair{sasl_mechanism::scram_sha_256, scram_mechanism::sha_256},
                      std::pair{sasl_mechanism::scram_sha_512, scram_mechanism::sha_512}}) {
    auto r = exchange(c, s, "alice-secret", "alice-secret");
    EXPECT_TRUE(r.server_complete);
    EXPECT_EQ(r.client_error, "");
  }
}

TEST(scram_client_server, a_wrong_password_is_refused_by_the_server) {
  auto r =
      exchange(sasl_mechanism::scram_sha_512, scram_mechanism::sha_512, "wrong", "alice-secret");
  EXPECT_FALSE(r.server_complete);
  EXPECT_TRUE(r.client_error.starts_with("server refused")) << r.client_error;
}

TEST(scram_client_server, the_client_refuses_a_server_signature_it_cannot_check) {
  // A server holding another credential for the same password's hash cannot exist; instead the
  // client checks a forged server-final after a genuine server-first.
  const auto credential = security::scram_make_credential(scram_mechanism::sha_256, "alice-secret",
                                                          security::random_bytes(16), 4096);
  auto server = security::make_scram_server(
      scram_mechanism::sha_256,
      [&](scram_mechanism, const std::string&) -> std::optional<security::scram_credential> {
        return credential;
      });
  client::scram_client c(sasl_mechanism::scram_sha_256, "alice", "alice-secret");
  const std::string first = c.client_first();
  auto step = server->evaluate(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(first.data()), first.size()));
  ASSERT_EQ(step.result, security::sasl_mechanism_server::step::outcome::challenge);
  auto final_message = c.client_final(std::string(step.token.begin(), step.token.end()));
  ASSERT_TRUE(final_message) << final_message.error();
  EXPECT_FALSE(c.verify_server_final("v=" + security::base64_encode(security::random_bytes(32))));
}

}  // namespace
}  // namespace tarn::test
