// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The ext_proc port's certificate: one generated at start (self-signed, as a gateway that
/// does not verify the EPP's certificate expects) or a given pair from --cert-path.

#include <string>

#include "epp/wire/server.hpp"
#include "inject/result.hpp"

namespace epp {

/// A new ECDSA P-256 key and a self-signed certificate for it (CN enflame-epp, valid ten
/// years from now), in PEM. Internal when OpenSSL fails.
[[nodiscard]] inject::Result<TlsPem> self_signed_certificate();

/// `dir`/tls.crt and `dir`/tls.key, checked to be PEM, and the key the certificate's.
/// NotFound / InvalidInput name the file and the reason.
[[nodiscard]] inject::Result<TlsPem> read_certificate(const std::string& dir);

}  // namespace epp
