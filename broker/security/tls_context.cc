#include "broker/security/tls_context.h"

#include "broker/session.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/x509.h>

#include <fstream>
#include <sstream>
#include <vector>

namespace sluice::broker::security {

namespace ssl = boost::asio::ssl;

namespace {

/// OpenSSL's error queue as one line (and emptied).
std::string openssl_errors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

struct bio_deleter { void operator()(BIO* b) const { BIO_free(b); } };
struct pkey_deleter { void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); } };
struct x509_deleter { void operator()(X509* x) const { X509_free(x); } };
struct p12_deleter { void operator()(PKCS12* p) const { PKCS12_free(p); } };
using bio_ptr = std::unique_ptr<BIO, bio_deleter>;
using pkey_ptr = std::unique_ptr<EVP_PKEY, pkey_deleter>;
using x509_ptr = std::unique_ptr<X509, x509_deleter>;

result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return error{base_errc::failed, "cannot read " + path};
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Every certificate of a PEM text, in order.
std::vector<x509_ptr> pem_certificates(const std::string& pem) {
  std::vector<x509_ptr> out;
  bio_ptr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  while (X509* x = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) out.emplace_back(x);
  ERR_clear_error();  // the end of the text reads as an error
  return out;
}

int password_callback(char* buf, int size, int, void* user) {
  const auto* password = static_cast<const std::string*>(user);
  if (password == nullptr) return 0;
  const int n = std::min<int>(size, static_cast<int>(password->size()));
  std::copy_n(password->data(), n, buf);
  return n;
}

pkey_ptr pem_private_key(const std::string& pem, const std::string& password) {
  bio_ptr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  std::string pw = password;
  return pkey_ptr(PEM_read_bio_PrivateKey(bio.get(), nullptr, password_callback, &pw));
}

struct pkcs12_contents {
  pkey_ptr key;
  x509_ptr certificate;
  std::vector<x509_ptr> chain;
};

result<pkcs12_contents> read_pkcs12(const std::string& path, const std::string& password, const std::string& what) {
  auto bytes = read_file(path);
  if (!bytes) return error{base_errc::failed, what + ": " + bytes.err().message};
  bio_ptr bio(BIO_new_mem_buf(bytes->data(), static_cast<int>(bytes->size())));
  std::unique_ptr<PKCS12, p12_deleter> p12(d2i_PKCS12_bio(bio.get(), nullptr));
  if (!p12) return error{base_errc::failed, what + ": " + path + " is not a PKCS12 file: " + openssl_errors()};
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
  STACK_OF(X509)* ca = nullptr;
  if (PKCS12_parse(p12.get(), password.c_str(), &key, &cert, &ca) != 1)
    return error{base_errc::failed, what + ": cannot open " + path + " (wrong password?): " + openssl_errors()};
  pkcs12_contents out;
  out.key.reset(key);
  out.certificate.reset(cert);
  if (ca != nullptr) {
    while (sk_X509_num(ca) > 0) out.chain.emplace_back(sk_X509_shift(ca));
    sk_X509_free(ca);
  }
  return out;
}

/// Java's names of TLS 1.3 suites are OpenSSL's too; TLS 1.2 suites map through SSL_CIPHER_standard_name.
result<void> set_cipher_suites(SSL_CTX* ctx, const std::string& list, const std::string& what) {
  std::string tls12, tls13;
  std::stringstream in(list);
  std::string name;
  // Every cipher OpenSSL knows, by its IANA name.
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> all(SSL_CTX_new(TLS_server_method()), &SSL_CTX_free);
  SSL_CTX_set_cipher_list(all.get(), "ALL:COMPLEMENTOFALL");
  while (std::getline(in, name, ',')) {
    while (!name.empty() && name.front() == ' ') name.erase(name.begin());
    while (!name.empty() && name.back() == ' ') name.pop_back();
    if (name.empty()) continue;
    if (name.starts_with("TLS_AES_") || name.starts_with("TLS_CHACHA20_")) {
      tls13 += (tls13.empty() ? "" : ":") + name;
      continue;
    }
    const char* openssl_name = nullptr;
    STACK_OF(SSL_CIPHER)* ciphers = SSL_CTX_get_ciphers(all.get());
    for (int i = 0; i < sk_SSL_CIPHER_num(ciphers); ++i) {
      const SSL_CIPHER* c = sk_SSL_CIPHER_value(ciphers, i);
      if (const char* std_name = SSL_CIPHER_standard_name(c); std_name != nullptr && name == std_name) {
        openssl_name = SSL_CIPHER_get_name(c);
        break;
      }
    }
    if (openssl_name == nullptr) return error{base_errc::failed, what + ": ssl.cipher.suites: unknown cipher suite " + name};
    tls12 += (tls12.empty() ? "" : ":") + std::string(openssl_name);
  }
  // A list naming only one kind leaves the other kind with none, as Java's setEnabledCipherSuites does.
  if (!tls12.empty() || !tls13.empty()) {
    if (SSL_CTX_set_cipher_list(ctx, tls12.empty() ? "aNULL:!aNULL" : tls12.c_str()) != 1 && !tls12.empty())
      return error{base_errc::failed, what + ": ssl.cipher.suites: " + openssl_errors()};
    ERR_clear_error();
    if (SSL_CTX_set_ciphersuites(ctx, tls13.c_str()) != 1)
      return error{base_errc::failed, what + ": ssl.cipher.suites: " + openssl_errors()};
  }
  return {};
}

}  // namespace

result<std::shared_ptr<ssl::context>> make_server_tls_context(const broker_config& config, const std::string& listener) {
  auto get = [&](const std::string& key) { return listener_config(config, listener, key); };
  const std::string what = "listener " + listener;
  auto fail = [&](const std::string& m) { return error{base_errc::failed, what + ": " + m}; };
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* native = ctx->native_handle();
  SSL_CTX_set_options(native, SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_mode(native, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_NO_AUTO_CHAIN);

  // --- key store ---
  std::string keystore_type = get("ssl.keystore.type");
  for (char& c : keystore_type) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::string location = get("ssl.keystore.location");
  const std::string chain_text = get("ssl.keystore.certificate.chain");
  const std::string key_text = get("ssl.keystore.key");
  if (keystore_type == "JKS")
    return fail("ssl.keystore.type JKS is not supported (a Java key store needs a JVM): set ssl.keystore.type=PEM "
                "or PKCS12 (keytool -importkeystore -deststoretype PKCS12 converts a JKS file)");
  pkey_ptr key;
  std::vector<x509_ptr> chain;
  if (keystore_type == "PEM") {
    std::string chain_pem = chain_text, key_pem = key_text;
    if (!location.empty()) {
      if (!chain_text.empty() || !key_text.empty())
        return fail("ssl.keystore.location and ssl.keystore.certificate.chain/ssl.keystore.key are exclusive");
      auto file = read_file(location);
      if (!file) return fail("ssl.keystore.location: " + file.err().message);
      chain_pem = key_pem = *file;
    }
    if (chain_pem.empty() || key_pem.empty())
      return fail("an SSL listener needs a key store: ssl.keystore.location, or ssl.keystore.certificate.chain and "
                  "ssl.keystore.key (PEM)");
    chain = pem_certificates(chain_pem);
    if (chain.empty()) return fail("the key store holds no PEM certificate");
    key = pem_private_key(key_pem, get("ssl.key.password"));
    if (!key) return fail("cannot read the key store's private key (encrypted without ssl.key.password?): " + openssl_errors());
  } else if (keystore_type == "PKCS12") {
    if (location.empty()) return fail("ssl.keystore.type PKCS12 needs ssl.keystore.location");
    auto p12 = read_pkcs12(location, get("ssl.keystore.password"), what + ": ssl.keystore.location");
    if (!p12) return p12.err();
    if (!p12->key || !p12->certificate) return fail(location + " holds no private key with a certificate");
    key = std::move(p12->key);
    chain.push_back(std::move(p12->certificate));
    for (auto& c : p12->chain) chain.push_back(std::move(c));
  } else {
    return fail("ssl.keystore.type " + keystore_type + " is not supported (PEM or PKCS12)");
  }
  if (SSL_CTX_use_certificate(native, chain.front().get()) != 1) return fail("certificate: " + openssl_errors());
  for (size_t i = 1; i < chain.size(); ++i)
    if (SSL_CTX_add1_chain_cert(native, chain[i].get()) != 1) return fail("certificate chain: " + openssl_errors());
  if (SSL_CTX_use_PrivateKey(native, key.get()) != 1) return fail("private key: " + openssl_errors());
  if (SSL_CTX_check_private_key(native) != 1) return fail("the private key does not match the certificate: " + openssl_errors());

  // --- trust store (verifies client certificates) ---
  std::string truststore_type = get("ssl.truststore.type");
  for (char& c : truststore_type) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::string trust_location = get("ssl.truststore.location");
  const std::string trust_text = get("ssl.truststore.certificates");
  X509_STORE* store = SSL_CTX_get_cert_store(native);
  if (!trust_location.empty() || !trust_text.empty()) {
    if (truststore_type == "JKS")
      return fail("ssl.truststore.type JKS is not supported: set ssl.truststore.type=PEM or PKCS12");
    std::vector<x509_ptr> trusted;
    if (truststore_type == "PEM") {
      std::string pem = trust_text;
      if (!trust_location.empty()) {
        auto file = read_file(trust_location);
        if (!file) return fail("ssl.truststore.location: " + file.err().message);
        pem = *file;
      }
      trusted = pem_certificates(pem);
    } else if (truststore_type == "PKCS12") {
      auto p12 = read_pkcs12(trust_location, get("ssl.truststore.password"), what + ": ssl.truststore.location");
      if (!p12) return p12.err();
      if (p12->certificate) trusted.push_back(std::move(p12->certificate));
      for (auto& c : p12->chain) trusted.push_back(std::move(c));
    } else {
      return fail("ssl.truststore.type " + truststore_type + " is not supported (PEM or PKCS12)");
    }
    if (trusted.empty()) return fail("the trust store holds no certificate");
    for (auto& c : trusted)
      if (X509_STORE_add_cert(store, c.get()) != 1) return fail("trust store: " + openssl_errors());
  } else {
    SSL_CTX_set_default_verify_paths(native);
  }

  // --- client authentication ---
  // KIP-684: on a SASL_SSL listener SASL authenticates the client, so only the listener-prefixed
  // listener.name.<l>.ssl.client.auth applies there; the broker-wide key is for SSL listeners.
  std::string client_auth = get("ssl.client.auth");
  if (security_protocol_of(config.values, listener) == "SASL_SSL") {
    std::string lower = listener;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto it = config.listener_values.find("listener.name." + lower + ".ssl.client.auth");
    client_auth = it == config.listener_values.end() ? "none" : it->second;
  }
  if (client_auth == "required") {
    ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  } else if (client_auth == "requested") {
    ctx->set_verify_mode(ssl::verify_peer);
  } else if (client_auth == "none" || client_auth.empty()) {
    ctx->set_verify_mode(ssl::verify_none);
  } else {
    return fail("invalid value '" + client_auth + "' for ssl.client.auth: expected required, requested or none");
  }
  // A session id context is needed for verify_peer with session resumption.
  static const unsigned char sid[] = "sluice";
  SSL_CTX_set_session_id_context(native, sid, sizeof sid - 1);

  // --- protocols and ciphers ---
  long no = SSL_OP_NO_SSLv3 | SSL_OP_NO_TLSv1 | SSL_OP_NO_TLSv1_1 | SSL_OP_NO_TLSv1_2 | SSL_OP_NO_TLSv1_3;
  std::stringstream protocols(get("ssl.enabled.protocols"));
  std::string p;
  bool any = false;
  while (std::getline(protocols, p, ',')) {
    while (!p.empty() && p.front() == ' ') p.erase(p.begin());
    while (!p.empty() && p.back() == ' ') p.pop_back();
    if (p.empty()) continue;
    if (p == "TLSv1.3") no &= ~SSL_OP_NO_TLSv1_3;
    else if (p == "TLSv1.2") no &= ~SSL_OP_NO_TLSv1_2;
    else if (p == "TLSv1.1") no &= ~SSL_OP_NO_TLSv1_1;
    else if (p == "TLSv1") no &= ~SSL_OP_NO_TLSv1;
    else return fail("ssl.enabled.protocols: unsupported protocol " + p + " (TLSv1.3, TLSv1.2, TLSv1.1, TLSv1)");
    any = true;
  }
  if (!any) return fail("ssl.enabled.protocols names no protocol");
  if ((no & SSL_OP_NO_TLSv1) == 0 || (no & SSL_OP_NO_TLSv1_1) == 0)
    SSL_CTX_set_security_level(native, 0);  // OpenSSL 3 refuses TLS 1.0/1.1 at its default level
  SSL_CTX_set_min_proto_version(native, 0);
  SSL_CTX_set_options(native, static_cast<uint64_t>(no));
  if (auto r = set_cipher_suites(native, get("ssl.cipher.suites"), what); !r) return r.err();
  return ctx;
}

std::optional<std::string> peer_subject(SSL* ssl) {
  x509_ptr cert(SSL_get1_peer_certificate(ssl));
  if (!cert) return std::nullopt;
  bio_ptr bio(BIO_new(BIO_s_mem()));
  // RFC 2253: most specific first, "," between, special characters escaped (as X500Principal.getName()).
  X509_NAME_print_ex(bio.get(), X509_get_subject_name(cert.get()), 0, XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

}  // namespace sluice::broker::security
