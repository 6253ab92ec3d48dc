// SPDX-License-Identifier: Apache-2.0
#include "epp/wire/tls.hpp"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <fstream>
#include <memory>
#include <sstream>

namespace epp {
namespace {

using inject::Errc;

template <auto Free>
struct Deleter {
    template <typename T>
    void operator()(T* p) const {
        Free(p);
    }
};
using Bio = std::unique_ptr<BIO, Deleter<BIO_free>>;
using Key = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, Deleter<X509_free>>;

std::string bio_text(BIO* b) {
    char* data = nullptr;
    const long n = BIO_get_mem_data(b, &data);
    return {data, static_cast<std::size_t>(n)};
}

inject::Result<std::string> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return inject::fail(Errc::NotFound, path + ": cannot read it");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

inject::Result<TlsPem> self_signed_certificate() {
    auto openssl = [](const char* what) {
        return inject::fail(Errc::Internal, std::string("self-signed certificate: ") + what);
    };
    Key key(EVP_EC_gen("P-256"));
    if (!key) return openssl("EC key generation failed");
    Cert cert(X509_new());
    if (!cert) return openssl("X509_new failed");
    X509_set_version(cert.get(), 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), 0);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), 10L * 365 * 24 * 3600);
    X509_set_pubkey(cert.get(), key.get());
    X509_NAME* name = X509_get_subject_name(cert.get());
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("Enflame"), -1, -1, 0);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("enflame-epp"), -1, -1, 0);
    X509_set_issuer_name(cert.get(), name);
    if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) return openssl("signing failed");
    Bio c(BIO_new(BIO_s_mem())), k(BIO_new(BIO_s_mem()));
    if (!c || !k || PEM_write_bio_X509(c.get(), cert.get()) != 1 ||
        PEM_write_bio_PrivateKey(k.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1)
        return openssl("PEM encoding failed");
    return TlsPem{bio_text(c.get()), bio_text(k.get())};
}

inject::Result<TlsPem> read_certificate(const std::string& dir) {
    const std::string crt_path = dir + "/tls.crt", key_path = dir + "/tls.key";
    INJECT_TRY(auto crt, read_file(crt_path));
    INJECT_TRY(auto key, read_file(key_path));
    Bio cb(BIO_new_mem_buf(crt.data(), static_cast<int>(crt.size())));
    Cert cert(cb ? PEM_read_bio_X509(cb.get(), nullptr, nullptr, nullptr) : nullptr);
    if (!cert) return inject::fail(Errc::InvalidInput, crt_path + ": not a PEM certificate");
    Bio kb(BIO_new_mem_buf(key.data(), static_cast<int>(key.size())));
    Key pkey(kb ? PEM_read_bio_PrivateKey(kb.get(), nullptr, nullptr, nullptr) : nullptr);
    if (!pkey) return inject::fail(Errc::InvalidInput, key_path + ": not a PEM private key");
    if (X509_check_private_key(cert.get(), pkey.get()) != 1)
        return inject::fail(Errc::InvalidInput, key_path + ": not the key of " + crt_path);
    return TlsPem{std::move(crt), std::move(key)};
}

}  // namespace epp
