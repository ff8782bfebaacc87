// The client's security settings, its OpenSSL context and its side of SASL PLAIN and SCRAM
// (client_security.h). Only OpenSSL computes: HMAC, digests, PBKDF2, base64, random bytes.
#include "client/client_security.h"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <vector>

namespace tarn::client {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string upper(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

std::string openssl_errors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

// The value of `name="..."` in a JAAS line, or empty.
std::string jaas_option(std::string_view text, std::string_view name) {
  size_t at = 0;
  while ((at = text.find(name, at)) != std::string_view::npos) {
    const bool starts_word = at == 0 || std::isspace(static_cast<unsigned char>(text[at - 1]));
    size_t p = at + name.size();
    while (p < text.size() && text[p] == ' ') ++p;
    if (starts_word && p < text.size() && text[p] == '=') {
      ++p;
      while (p < text.size() && text[p] == ' ') ++p;
      if (p < text.size() && text[p] == '"') {
        const size_t end = text.find('"', p + 1);
        if (end != std::string_view::npos) return std::string(text.substr(p + 1, end - p - 1));
      }
    }
    at += name.size();
  }
  return {};
}

const EVP_MD* digest_of(sasl_mechanism m) {
  return m == sasl_mechanism::scram_sha_512 ? EVP_sha512() : EVP_sha256();
}

std::string hmac(const EVP_MD* md, std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(md, key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string digest(const EVP_MD* md, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out, &len, md, nullptr);
  return std::string(reinterpret_cast<char*>(out), len);
}

// RFC 5802's saslname: ',' and '=' escaped.
std::string sasl_name(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == ',') {
      out += "=2C";
    } else if (c == '=') {
      out += "=3D";
    } else {
      out += c;
    }
  }
  return out;
}

// The value of attribute `a` ("r", "s", "i", "v", "e") in a SCRAM message, or nullopt.
std::optional<std::string_view> attribute(std::string_view message, char a) {
  size_t start = 0;
  while (start <= message.size()) {
    size_t end = message.find(',', start);
    if (end == std::string_view::npos) end = message.size();
    std::string_view part = message.substr(start, end - start);
    if (part.size() >= 2 && part[0] == a && part[1] == '=') return part.substr(2);
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace

std::string_view sasl_mechanism_name(sasl_mechanism m) {
  switch (m) {
    case sasl_mechanism::plain:
      return "PLAIN";
    case sasl_mechanism::scram_sha_256:
      return "SCRAM-SHA-256";
    case sasl_mechanism::scram_sha_512:
      return "SCRAM-SHA-512";
  }
  return "PLAIN";
}

std::optional<result<void, std::string>> security_config::set(std::string_view key,
                                                              std::string_view value) {
  auto invalid = [&](std::string_view allowed) -> result<void, std::string> {
    return fail(
        fmt::format("Invalid value {} for configuration {}: String must be one of (case "
                    "insensitive): {}",
                    value, key, allowed));
  };
  if (key == "security.protocol") {
    auto p = parse_security_protocol(value);
    if (!p) return invalid("PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL");
    protocol = *p;
    return result<void, std::string>{};
  }
  if (key == "sasl.mechanism" || key == "sasl.mechanisms") {
    const std::string v = upper(value);
    if (v == "PLAIN") {
      mechanism = sasl_mechanism::plain;
    } else if (v == "SCRAM-SHA-256") {
      mechanism = sasl_mechanism::scram_sha_256;
    } else if (v == "SCRAM-SHA-512") {
      mechanism = sasl_mechanism::scram_sha_512;
    } else {
      return invalid("PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (tarn's client)");
    }
    return result<void, std::string>{};
  }
  if (key == "ssl.endpoint.identification.algorithm") {
    const std::string v = lower(value);
    if (v == "https") {
      ssl_endpoint_identification = true;
    } else if (v == "none" || v.empty()) {  // Java spells "none" as an empty value
      ssl_endpoint_identification = false;
    } else {
      return invalid("https, none");
    }
    return result<void, std::string>{};
  }
  std::string* text = nullptr;
  if (key == "ssl.ca.location") text = &ssl_ca_location;
  if (key == "ssl.certificate.location") text = &ssl_certificate_location;
  if (key == "ssl.key.location") text = &ssl_key_location;
  if (key == "ssl.key.password") text = &ssl_key_password;
  if (key == "sasl.username") text = &sasl_username;
  if (key == "sasl.password") text = &sasl_password;
  if (text != nullptr) {
    *text = std::string(value);
    return result<void, std::string>{};
  }
  if (key == "sasl.jaas.config") {
    // Java clients' way: "org.apache...ScramLoginModule required username="u" password="p";".
    sasl_username = jaas_option(value, "username");
    sasl_password = jaas_option(value, "password");
    if (sasl_username.empty()) {
      return fail(
          fmt::format("Invalid value for configuration {}: no username=\"...\" option", key));
    }
    return result<void, std::string>{};
  }
  return std::nullopt;
}

result<void, std::string> security_config::validate() const {
  if (sasl() && sasl_username.empty()) {
    return fail(fmt::format("security.protocol {} needs sasl.username (and sasl.password)",
                            to_string(protocol)));
  }
  if (ssl_certificate_location.empty() != ssl_key_location.empty()) {
    return fail(std::string(
        "ssl.certificate.location and ssl.key.location must be set together (or neither)"));
  }
  return {};
}

result<ssl_ctx_ptr, std::string> make_ssl_context(const security_config& config) {
  ERR_clear_error();
  ssl_ctx_ptr ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return fail("cannot create an SSL context: " + openssl_errors());
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  if (config.ssl_ca_location.empty()) {
    SSL_CTX_set_default_verify_paths(ctx.get());
  } else {
    const bool is_dir =
        config.ssl_ca_location.back() == '/' ||
        SSL_CTX_load_verify_locations(ctx.get(), config.ssl_ca_location.c_str(), nullptr) != 1;
    if (is_dir) {
      ERR_clear_error();
      if (SSL_CTX_load_verify_locations(ctx.get(), nullptr, config.ssl_ca_location.c_str()) != 1) {
        return fail(
            fmt::format("ssl.ca.location {}: {}", config.ssl_ca_location, openssl_errors()));
      }
    }
  }
  if (!config.ssl_certificate_location.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx.get(), config.ssl_certificate_location.c_str()) !=
        1) {
      return fail(fmt::format("ssl.certificate.location {}: {}", config.ssl_certificate_location,
                              openssl_errors()));
    }
  }
  if (!config.ssl_key_location.empty()) {
    // The password callback's data only needs to live while the key is read, just below.
    std::string password = config.ssl_key_password;
    SSL_CTX_set_default_passwd_cb_userdata(ctx.get(), password.data());
    const int ok =
        SSL_CTX_use_PrivateKey_file(ctx.get(), config.ssl_key_location.c_str(), SSL_FILETYPE_PEM);
    SSL_CTX_set_default_passwd_cb_userdata(ctx.get(), nullptr);
    if (ok != 1) {
      return fail(
          fmt::format("ssl.key.location {}: {}", config.ssl_key_location, openssl_errors()));
    }
    if (SSL_CTX_check_private_key(ctx.get()) != 1) {
      return fail(fmt::format("ssl.key.location {} does not match ssl.certificate.location {}",
                              config.ssl_key_location, config.ssl_certificate_location));
    }
  }
  return ctx;
}

result<void, std::string> prepare_ssl(SSL* ssl, const std::string& host,
                                      const security_config& config) {
  // An IP address is matched against the certificate's IP SANs, a name against its DNS names;
  // SNI is only for names (RFC 6066).
  ASN1_OCTET_STRING* ip = a2i_IPADDRESS(host.c_str());
  if (ip != nullptr) {
    ASN1_OCTET_STRING_free(ip);
    if (config.ssl_endpoint_identification &&
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str()) != 1) {
      return fail(fmt::format("cannot verify the address {}", host));
    }
    return {};
  }
  SSL_set_tlsext_host_name(ssl, host.c_str());
  if (config.ssl_endpoint_identification && SSL_set1_host(ssl, host.c_str()) != 1) {
    return fail(fmt::format("cannot verify the host name {}", host));
  }
  return {};
}

std::string ssl_failure(SSL* ssl, const std::string& host, int port) {
  const long verify = ssl != nullptr ? SSL_get_verify_result(ssl) : X509_V_OK;
  std::string why;
  if (verify != X509_V_OK) {
    why =
        fmt::format("broker certificate verify failed: {}", X509_verify_cert_error_string(verify));
    ERR_clear_error();
  } else {
    why = openssl_errors();
  }
  return fmt::format("SSL handshake with {}:{} failed: {}", host, port, why);
}

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

result<std::string, std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return fail(std::string("invalid base64"));
  std::string out(3 * text.size() / 4, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return fail(std::string("invalid base64"));
  // EVP_DecodeBlock counts the padding as zero bytes.
  size_t size = static_cast<size_t>(n);
  if (!text.empty() && text.back() == '=') --size;
  if (text.size() > 1 && text[text.size() - 2] == '=') --size;
  out.resize(size);
  return out;
}

scram_client::scram_client(sasl_mechanism mechanism, std::string username, std::string password,
                           std::string nonce)
    : mechanism_(mechanism),
      username_(std::move(username)),
      password_(std::move(password)),
      nonce_(std::move(nonce)) {
  if (nonce_.empty()) {
    unsigned char random[24];
    RAND_bytes(random, sizeof(random));
    nonce_ = base64_encode(std::string_view(reinterpret_cast<char*>(random), sizeof(random)));
  }
  client_first_bare_ = "n=" + sasl_name(username_) + ",r=" + nonce_;
}

std::string scram_client::client_first() const { return "n,," + client_first_bare_; }

result<std::string, std::string> scram_client::client_final(std::string_view server_first) {
  if (auto e = attribute(server_first, 'e')) {
    return fail(fmt::format("SCRAM server error: {}", *e));
  }
  auto nonce = attribute(server_first, 'r');
  auto salt64 = attribute(server_first, 's');
  auto iterations_text = attribute(server_first, 'i');
  if (!nonce || !salt64 || !iterations_text) {
    return fail(std::string("malformed SCRAM server-first message"));
  }
  // The server's nonce extends ours (RFC 5802 §5.1); anything else is a replay or a forgery.
  if (!nonce->starts_with(nonce_) || nonce->size() == nonce_.size()) {
    return fail(std::string("SCRAM server nonce does not extend the client's"));
  }
  auto salt = base64_decode(*salt64);
  if (!salt) return fail(std::string("malformed SCRAM salt"));
  int iterations = 0;
  for (char c : *iterations_text) {
    if (c < '0' || c > '9' || iterations > 100'000'000) {
      return fail(std::string("malformed SCRAM iteration count"));
    }
    iterations = iterations * 10 + (c - '0');
  }
  // Kafka's minimum is 4096; fewer would make the stored credential cheap to attack.
  if (iterations < 4096) return fail(fmt::format("SCRAM iteration count {} < 4096", iterations));

  const EVP_MD* md = digest_of(mechanism_);
  const int size = EVP_MD_get_size(md);
  std::string salted(static_cast<size_t>(size), '\0');
  PKCS5_PBKDF2_HMAC(password_.data(), static_cast<int>(password_.size()),
                    reinterpret_cast<const unsigned char*>(salt->data()),
                    static_cast<int>(salt->size()), iterations, md, size,
                    reinterpret_cast<unsigned char*>(salted.data()));
  const std::string client_key = hmac(md, salted, "Client Key");
  const std::string stored_key = digest(md, client_key);
  const std::string final_without_proof = "c=biws,r=" + std::string(*nonce);  // biws: "n,,"
  const std::string auth_message =
      client_first_bare_ + "," + std::string(server_first) + "," + final_without_proof;
  const std::string signature = hmac(md, stored_key, auth_message);
  std::string proof = client_key;
  for (size_t i = 0; i < proof.size(); ++i) proof[i] = static_cast<char>(proof[i] ^ signature[i]);
  server_signature_ = hmac(md, hmac(md, salted, "Server Key"), auth_message);
  return final_without_proof + ",p=" + base64_encode(proof);
}

result<void, std::string> scram_client::verify_server_final(std::string_view server_final) const {
  if (auto e = attribute(server_final, 'e')) {
    return fail(fmt::format("SCRAM server error: {}", *e));
  }
  auto v = attribute(server_final, 'v');
  if (!v) return fail(std::string("malformed SCRAM server-final message"));
  auto signature = base64_decode(*v);
  if (server_signature_.empty() || !signature || signature->size() != server_signature_.size() ||
      CRYPTO_memcmp(signature->data(), server_signature_.data(), signature->size()) != 0) {
    return fail(
        std::string("the broker's SCRAM signature is wrong (it does not know the "
                    "password: not the broker configured?)"));
  }
  return {};
}

sasl_session::sasl_session(const security_config& config) : config_(config) {
  if (config_.mechanism != sasl_mechanism::plain) {
    scram_.emplace(config_.mechanism, config_.sasl_username, config_.sasl_password);
  }
}

result<std::optional<std::string>, std::string> sasl_session::next(
    std::string_view server_message) {
  const int step = step_++;
  if (!scram_) {
    // PLAIN (RFC 4616): one message, authzid empty.
    if (step == 0) {
      return std::optional<std::string>(std::string(1, '\0') + config_.sasl_username + '\0' +
                                        config_.sasl_password);
    }
    return std::optional<std::string>();
  }
  switch (step) {
    case 0:
      return std::optional<std::string>(scram_->client_first());
    case 1: {
      auto final_message = scram_->client_final(server_message);
      if (!final_message) return fail(final_message.error());
      return std::optional<std::string>(std::move(*final_message));
    }
    case 2:
      if (auto ok = scram_->verify_server_final(server_message); !ok) return fail(ok.error());
      return std::optional<std::string>();
    default:
      return fail(std::string("SASL exchange already complete"));
  }
}

}  // namespace tarn::client
