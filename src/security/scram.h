// SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka serves them: the salted
// credential a user's password becomes (what the metadata log stores: salt, StoredKey, ServerKey,
// iterations), and the hashing steps of the exchange. HMAC, hashes and PBKDF2 are OpenSSL's.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tarn::security {

// Kafka's ScramMechanism, with the type numbers of UserScramCredentialRecord and the SCRAM
// credential APIs (1: SCRAM-SHA-256, 2: SCRAM-SHA-512).
enum class scram_mechanism : int8_t { sha_256 = 1, sha_512 = 2 };

std::optional<scram_mechanism> parse_scram_mechanism(std::string_view name);  // "SCRAM-SHA-256"
const char* to_string(scram_mechanism m);
// Kafka's ScramMechanism.minIterations (4096 for both) and the limit AlterUserScramCredentials
// enforces (16384).
inline constexpr int32_t scram_min_iterations = 4096;
inline constexpr int32_t scram_max_iterations = 16384;

using bytes = std::vector<uint8_t>;

struct scram_credential {
  bytes salt;
  bytes stored_key;
  bytes server_key;
  int32_t iterations = 0;
};

// Hi(password, salt, i) of RFC 5802: PBKDF2 with the mechanism's HMAC.
bytes scram_salted_password(scram_mechanism m, std::string_view password,
                            std::span<const uint8_t> salt, int32_t iterations);
bytes scram_hmac(scram_mechanism m, std::span<const uint8_t> key, std::string_view text);
bytes scram_hash(scram_mechanism m, std::span<const uint8_t> data);
// The stored form of a salted password (ClientKey -> StoredKey, ServerKey).
scram_credential scram_credential_from_salted(scram_mechanism m, bytes salt,
                                              std::span<const uint8_t> salted_password,
                                              int32_t iterations);
scram_credential scram_make_credential(scram_mechanism m, std::string_view password, bytes salt,
                                       int32_t iterations);

std::string base64_encode(std::span<const uint8_t> data);
std::optional<bytes> base64_decode(std::string_view text);
// `n` cryptographically random bytes.
bytes random_bytes(size_t n);

}  // namespace tarn::security
