// The SCRAM primitives over OpenSSL's EVP interfaces.
#include "security/scram.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cctype>
#include <stdexcept>

namespace tarn::security {

namespace {

const EVP_MD* digest(scram_mechanism m) {
  return m == scram_mechanism::sha_256 ? EVP_sha256() : EVP_sha512();
}

}  // namespace

std::optional<scram_mechanism> parse_scram_mechanism(std::string_view name) {
  if (name == "SCRAM-SHA-256") return scram_mechanism::sha_256;
  if (name == "SCRAM-SHA-512") return scram_mechanism::sha_512;
  return std::nullopt;
}

const char* to_string(scram_mechanism m) {
  return m == scram_mechanism::sha_256 ? "SCRAM-SHA-256" : "SCRAM-SHA-512";
}

bytes scram_salted_password(scram_mechanism m, std::string_view password,
                            std::span<const uint8_t> salt, int32_t iterations) {
  bytes out(static_cast<size_t>(EVP_MD_get_size(digest(m))));
  PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()), salt.data(),
                    static_cast<int>(salt.size()), iterations, digest(m),
                    static_cast<int>(out.size()), out.data());
  return out;
}

bytes scram_hmac(scram_mechanism m, std::span<const uint8_t> key, std::string_view text) {
  bytes out(EVP_MAX_MD_SIZE);
  unsigned int n = 0;
  HMAC(digest(m), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(text.data()), text.size(), out.data(), &n);
  out.resize(n);
  return out;
}

bytes scram_hash(scram_mechanism m, std::span<const uint8_t> data) {
  bytes out(EVP_MAX_MD_SIZE);
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), out.data(), &n, digest(m), nullptr);
  out.resize(n);
  return out;
}

scram_credential scram_credential_from_salted(scram_mechanism m, bytes salt,
                                              std::span<const uint8_t> salted_password,
                                              int32_t iterations) {
  scram_credential c;
  const bytes client_key = scram_hmac(m, salted_password, "Client Key");
  c.stored_key = scram_hash(m, client_key);
  c.server_key = scram_hmac(m, salted_password, "Server Key");
  c.salt = std::move(salt);
  c.iterations = iterations;
  return c;
}

scram_credential scram_make_credential(scram_mechanism m, std::string_view password, bytes salt,
                                       int32_t iterations) {
  const bytes salted = scram_salted_password(m, password, salt, iterations);
  return scram_credential_from_salted(m, std::move(salt), salted, iterations);
}

std::string base64_encode(std::span<const uint8_t> data) {
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data.data(),
                                static_cast<int>(data.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::optional<bytes> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  for (char c : text) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/' || c == '=')) {
      return std::nullopt;
    }
  }
  bytes out(3 * (text.size() / 4) + 1);
  const int n = EVP_DecodeBlock(out.data(), reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  size_t size = static_cast<size_t>(n);
  // EVP_DecodeBlock counts the padding as zero bytes.
  if (!text.empty() && text.back() == '=') --size;
  if (text.size() >= 2 && text[text.size() - 2] == '=') --size;
  out.resize(size);
  return out;
}

bytes random_bytes(size_t n) {
  bytes out(n);
  if (RAND_bytes(out.data(), static_cast<int>(n)) != 1) {
    throw std::runtime_error("OpenSSL's RAND_bytes failed");  // no entropy: nothing is safe
  }
  return out;
}

}  // namespace tarn::security
