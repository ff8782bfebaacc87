// Builds OpenSSL server contexts from Kafka's ssl.* settings. Kafka reads keystores through the
// JDK; the formats a C++ broker can read with OpenSSL are PEM and PKCS12 (which is also what a
// JDK 9+ "JKS" keystore type accepts when the file is PKCS12). A real JKS file is refused with the
// keytool command that converts it (docs/compatibility.md).
#include "security/tls_context.h"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <vector>

namespace tarn::security {

namespace {

struct bio_free {
  void operator()(BIO* b) const { BIO_free(b); }
};
using bio_ptr = std::unique_ptr<BIO, bio_free>;
struct x509_free {
  void operator()(X509* x) const { X509_free(x); }
};
using x509_ptr = std::unique_ptr<X509, x509_free>;
struct pkey_free {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using pkey_ptr = std::unique_ptr<EVP_PKEY, pkey_free>;

// OpenSSL's queued errors as one line (and the queue emptied).
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

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

result<std::string, std::string> read_whole_file(const std::string& key, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(fmt::format("{}: cannot read {}", key, path));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool is_jks(const std::string& bytes) {
  // JKS and JCEKS files start with 0xFEEDFEED / 0xCECECECE.
  return bytes.size() >= 4 &&
         ((static_cast<uint8_t>(bytes[0]) == 0xFE && static_cast<uint8_t>(bytes[1]) == 0xED) ||
          (static_cast<uint8_t>(bytes[0]) == 0xCE && static_cast<uint8_t>(bytes[1]) == 0xCE));
}

std::string jks_refusal(const std::string& key, const std::string& path) {
  return fmt::format(
      "{}: {} is a JKS keystore, which tarn cannot read (no maintained C or C++ library reads "
      "JKS); convert it once with `keytool -importkeystore -srckeystore {} -destkeystore "
      "{}.p12 -deststoretype PKCS12` and set the type to PKCS12",
      key, path, path, path);
}

std::vector<x509_ptr> read_pem_certificates(const std::string& pem) {
  std::vector<x509_ptr> out;
  bio_ptr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  while (X509* x = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) out.emplace_back(x);
  ERR_clear_error();  // the end of the text reads as "no start line"
  return out;
}

struct key_and_chain {
  pkey_ptr key;
  std::vector<x509_ptr> chain;  // the leaf first
};

result<key_and_chain, std::string> read_pem_keystore(const std::string& key_text,
                                                     const std::string& chain_text,
                                                     const std::optional<std::string>& password,
                                                     const std::string& what) {
  key_and_chain out;
  bio_ptr bio(BIO_new_mem_buf(key_text.data(), static_cast<int>(key_text.size())));
  std::string pass = password.value_or("");
  out.key.reset(
      PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, password ? pass.data() : nullptr));
  if (!out.key) {
    return fail(
        fmt::format("{}: no readable private key ({}; an encrypted key needs "
                    "ssl.key.password)",
                    what, openssl_errors()));
  }
  out.chain = read_pem_certificates(chain_text);
  if (out.chain.empty()) return fail(fmt::format("{}: no certificate in the PEM text", what));
  return out;
}

result<key_and_chain, std::string> read_pkcs12(const std::string& bytes,
                                               const std::optional<std::string>& password,
                                               const std::optional<std::string>& other_password,
                                               const std::string& what) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(bytes.data());
  PKCS12* p12 = d2i_PKCS12(nullptr, &p, static_cast<long>(bytes.size()));
  if (p12 == nullptr)
    return fail(fmt::format("{}: not a PKCS12 file ({})", what, openssl_errors()));
  key_and_chain out;
  EVP_PKEY* pkey = nullptr;
  X509* cert = nullptr;
  STACK_OF(X509)* ca = nullptr;
  bool parsed = false;
  for (const auto* pw : {&password, &other_password}) {
    if (!pw->has_value() && pw == &other_password) continue;
    const char* text = pw->has_value() ? (*pw)->c_str() : "";
    if (PKCS12_parse(p12, text, &pkey, &cert, &ca) == 1) {
      parsed = true;
      break;
    }
  }
  PKCS12_free(p12);
  if (!parsed) {
    return fail(fmt::format("{}: cannot open the PKCS12 file: wrong password? ({})", what,
                            openssl_errors()));
  }
  out.key.reset(pkey);
  if (cert != nullptr) out.chain.emplace_back(cert);
  if (ca != nullptr) {
    while (sk_X509_num(ca) > 0) out.chain.emplace_back(sk_X509_shift(ca));
    sk_X509_free(ca);
  }
  return out;
}

result<void, std::string> set_protocols(SSL_CTX* ctx, const std::vector<std::string>& names) {
  int lowest = 0;
  int highest = 0;
  for (const auto& name : names) {
    int v = 0;
    if (name == "TLSv1.3") v = TLS1_3_VERSION;
    if (name == "TLSv1.2") v = TLS1_2_VERSION;
    if (name == "TLSv1.1") v = TLS1_1_VERSION;
    if (name == "TLSv1") v = TLS1_VERSION;
    if (v == 0) {
      return fail(fmt::format(
          "ssl.enabled.protocols: {} is not a protocol tarn knows (TLSv1.2, TLSv1.3, TLSv1.1, "
          "TLSv1)",
          name));
    }
    lowest = lowest == 0 ? v : std::min(lowest, v);
    highest = std::max(highest, v);
  }
  if (lowest == 0) return fail(std::string("ssl.enabled.protocols: no protocol enabled"));
  SSL_CTX_set_min_proto_version(ctx, lowest);
  SSL_CTX_set_max_proto_version(ctx, highest);
  return {};
}

// Kafka names cipher suites as the JDK does, by their IANA names
// (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256); OpenSSL's TLS 1.2 list wants its own names, so each
// is looked up among the suites OpenSSL has.
result<void, std::string> set_cipher_suites(SSL_CTX* ctx, const std::vector<std::string>& names) {
  if (names.empty()) return {};
  std::string tls13;
  std::string tls12;
  ssl_ctx_ptr all(SSL_CTX_new(TLS_server_method()));
  SSL_CTX_set_cipher_list(all.get(), "ALL:COMPLEMENTOFALL");
  STACK_OF(SSL_CIPHER)* known = SSL_CTX_get_ciphers(all.get());
  for (const auto& name : names) {
    if (name.starts_with("TLS_AES_") || name.starts_with("TLS_CHACHA20_")) {
      tls13 += (tls13.empty() ? "" : ":") + name;
      continue;
    }
    const char* openssl_name = nullptr;
    for (int i = 0; i < sk_SSL_CIPHER_num(known); ++i) {
      const SSL_CIPHER* c = sk_SSL_CIPHER_value(known, i);
      const char* standard = SSL_CIPHER_standard_name(c);
      if ((standard != nullptr && name == standard) || name == SSL_CIPHER_get_name(c)) {
        openssl_name = SSL_CIPHER_get_name(c);
        break;
      }
    }
    if (openssl_name == nullptr) {
      return fail(fmt::format("ssl.cipher.suites: {} is not a cipher suite OpenSSL has", name));
    }
    // Two appends, not `":" + std::string(...)`: GCC 12 at -O3 warns (-Wrestrict) on the
    // temporary's concatenation when this file is compiled on its own.
    if (!tls12.empty()) tls12 += ':';
    tls12 += openssl_name;
  }
  if (SSL_CTX_set_ciphersuites(ctx, tls13.c_str()) != 1 && !tls13.empty()) {
    return fail(fmt::format("ssl.cipher.suites: {}", openssl_errors()));
  }
  if (tls12.empty()) {
    // Only TLS 1.3 suites named: no TLS 1.2 suite may be used, so TLS 1.2 is off.
    SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
  } else if (SSL_CTX_set_cipher_list(ctx, tls12.c_str()) != 1) {
    return fail(fmt::format("ssl.cipher.suites: {}", openssl_errors()));
  }
  return {};
}

result<key_and_chain, std::string> load_keystore(const ssl_config& c) {
  const std::string type = upper(c.keystore_type);
  if (c.keystore_key || c.keystore_certificate_chain) {
    if (type != "PEM") {
      return fail(std::string(
          "ssl.keystore.key and ssl.keystore.certificate.chain need ssl.keystore.type=PEM"));
    }
    if (!c.keystore_key || !c.keystore_certificate_chain) {
      return fail(
          std::string("ssl.keystore.key and ssl.keystore.certificate.chain must be set together"));
    }
    return read_pem_keystore(*c.keystore_key, *c.keystore_certificate_chain, c.key_password,
                             "ssl.keystore.key");
  }
  if (!c.keystore_location) {
    return fail(
        std::string("an SSL listener needs a keystore: set ssl.keystore.location (or, with "
                    "ssl.keystore.type=PEM, ssl.keystore.key and ssl.keystore.certificate.chain)"));
  }
  auto bytes = read_whole_file("ssl.keystore.location", *c.keystore_location);
  if (!bytes) return fail(bytes.error());
  if (type == "PEM") {
    return read_pem_keystore(*bytes, *bytes, c.key_password,
                             "ssl.keystore.location " + *c.keystore_location);
  }
  if (type == "PKCS12" || type == "JKS") {
    if (is_jks(*bytes)) return fail(jks_refusal("ssl.keystore.location", *c.keystore_location));
    return read_pkcs12(*bytes, c.keystore_password, c.key_password,
                       "ssl.keystore.location " + *c.keystore_location);
  }
  return fail(fmt::format("ssl.keystore.type: {} is not a keystore type tarn reads (PEM, PKCS12)",
                          c.keystore_type));
}

// The trusted certificates, or nullopt when no truststore is set (the system's defaults then).
result<std::optional<std::vector<x509_ptr>>, std::string> load_truststore(const ssl_config& c) {
  const std::string type = upper(c.truststore_type);
  if (c.truststore_certificates) {
    if (type != "PEM") {
      return fail(std::string("ssl.truststore.certificates needs ssl.truststore.type=PEM"));
    }
    auto certs = read_pem_certificates(*c.truststore_certificates);
    if (certs.empty()) return fail(std::string("ssl.truststore.certificates: no certificate"));
    return std::optional<std::vector<x509_ptr>>(std::move(certs));
  }
  if (!c.truststore_location) return std::optional<std::vector<x509_ptr>>();
  auto bytes = read_whole_file("ssl.truststore.location", *c.truststore_location);
  if (!bytes) return fail(bytes.error());
  if (type == "PEM") {
    auto certs = read_pem_certificates(*bytes);
    if (certs.empty()) {
      return fail(
          fmt::format("ssl.truststore.location {}: no certificate", *c.truststore_location));
    }
    return std::optional<std::vector<x509_ptr>>(std::move(certs));
  }
  if (type == "PKCS12" || type == "JKS") {
    if (is_jks(*bytes)) {
      return fail(jks_refusal("ssl.truststore.location", *c.truststore_location));
    }
    // A truststore holds certificates only; PKCS12_parse gives them in the chain.
    const unsigned char* p = reinterpret_cast<const unsigned char*>(bytes->data());
    PKCS12* p12 = d2i_PKCS12(nullptr, &p, static_cast<long>(bytes->size()));
    if (p12 == nullptr) {
      return fail(
          fmt::format("ssl.truststore.location {}: not a PKCS12 file", *c.truststore_location));
    }
    EVP_PKEY* pkey = nullptr;
    X509* cert = nullptr;
    STACK_OF(X509)* ca = nullptr;
    const std::string pw = c.truststore_password.value_or("");
    const int ok = PKCS12_parse(p12, pw.c_str(), &pkey, &cert, &ca);
    PKCS12_free(p12);
    if (ok != 1) {
      return fail(fmt::format("ssl.truststore.location {}: cannot open: wrong password? ({})",
                              *c.truststore_location, openssl_errors()));
    }
    EVP_PKEY_free(pkey);
    std::vector<x509_ptr> certs;
    if (cert != nullptr) certs.emplace_back(cert);
    if (ca != nullptr) {
      while (sk_X509_num(ca) > 0) certs.emplace_back(sk_X509_shift(ca));
      sk_X509_free(ca);
    }
    if (certs.empty()) {
      return fail(
          fmt::format("ssl.truststore.location {}: no certificate", *c.truststore_location));
    }
    return std::optional<std::vector<x509_ptr>>(std::move(certs));
  }
  return fail(
      fmt::format("ssl.truststore.type: {} is not a truststore type tarn reads (PEM, PKCS12)",
                  c.truststore_type));
}

}  // namespace

result<ssl_ctx_ptr, std::string> make_server_tls_context(const ssl_config& c) {
  ERR_clear_error();
  ssl_ctx_ptr ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx) return fail("cannot create a TLS context: " + openssl_errors());
  // Idle connections hold no read/write buffers (thousands of clients).
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (auto r = set_protocols(ctx.get(), c.enabled_protocols); !r) return fail(r.error());
  if (auto r = set_cipher_suites(ctx.get(), c.cipher_suites); !r) return fail(r.error());

  auto keystore = load_keystore(c);
  if (!keystore) return fail(keystore.error());
  if (SSL_CTX_use_certificate(ctx.get(), keystore->chain.front().get()) != 1) {
    return fail("ssl.keystore: the certificate is unusable: " + openssl_errors());
  }
  for (size_t i = 1; i < keystore->chain.size(); ++i) {
    if (SSL_CTX_add1_chain_cert(ctx.get(), keystore->chain[i].get()) != 1) {
      return fail("ssl.keystore: a chain certificate is unusable: " + openssl_errors());
    }
  }
  if (SSL_CTX_use_PrivateKey(ctx.get(), keystore->key.get()) != 1 ||
      SSL_CTX_check_private_key(ctx.get()) != 1) {
    return fail("ssl.keystore: the private key does not match the certificate: " +
                openssl_errors());
  }

  auto trusted = load_truststore(c);
  if (!trusted) return fail(trusted.error());
  if (*trusted) {
    X509_STORE* store = SSL_CTX_get_cert_store(ctx.get());
    STACK_OF(X509_NAME)* names = sk_X509_NAME_new_null();
    for (const auto& cert : **trusted) {
      X509_STORE_add_cert(store, cert.get());
      sk_X509_NAME_push(names, X509_NAME_dup(X509_get_subject_name(cert.get())));
    }
    SSL_CTX_set_client_CA_list(ctx.get(), names);  // takes ownership
  } else {
    SSL_CTX_set_default_verify_paths(ctx.get());
  }
  switch (c.client_auth) {
    case ssl_client_auth::none:
      SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);
      break;
    case ssl_client_auth::requested:
      SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
      break;
    case ssl_client_auth::required:
      SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      break;
  }
  // Needed once clients are verified: a resumed session must belong to this context.
  static const unsigned char session_id[] = "tarn";
  SSL_CTX_set_session_id_context(ctx.get(), session_id, sizeof(session_id) - 1);
  return ctx;
}

std::optional<std::string> peer_subject_dn(const SSL* ssl) {
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) return std::nullopt;
  x509_ptr owned(cert);
  bio_ptr bio(BIO_new(BIO_s_mem()));
  // RFC 2253, most specific name first, as Java's X500Principal.getName(); UTF-8 kept as is.
  X509_NAME_print_ex(bio.get(), X509_get_subject_name(cert), 0,
                     XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

}  // namespace tarn::security
