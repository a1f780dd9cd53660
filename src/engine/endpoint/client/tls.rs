//! TLS for a model's `ca_file`. The certificates of the file are trusted as authorities,
//! beside the system's roots, as reqwest trusts them; and a server whose own certificate is
//! in the file, byte for byte, is accepted as pinned. That is the usual self-signed
//! certificate (`openssl req -x509 ... -addext subjectAltName=IP:127.0.0.1`): OpenSSL 3
//! marks it CA:TRUE, and WebPKI refuses a CA certificate as a server's own
//! (CaUsedAsEndEntity) even when it is the very one trusted. Nothing else is pinned: a
//! certificate not in the file is verified as before. The handshake's signatures are still
//! checked against the pinned certificate's key.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

#[derive(Debug)]
struct Pinned {
    pins: Vec<CertificateDer<'static>>,
    inner: rustls_platform_verifier::Verifier,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if self.pins.iter().any(|p| p.as_ref() == end_entity.as_ref()) {
            return Ok(ServerCertVerified::assertion());
        }
        self.inner
            .verify_server_cert(end_entity, intermediates, name, ocsp, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// The client TLS configuration for the certificates of a `ca_file` (DER).
pub(super) fn config(
    certs: Vec<CertificateDer<'static>>,
) -> Result<rustls::ClientConfig, rustls::Error> {
    let provider = CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()));
    let inner = rustls_platform_verifier::Verifier::new_with_extra_roots(
        certs.iter().cloned(),
        provider.clone(),
    )?;
    let verifier = Pinned { pins: certs, inner };
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth())
}

/// rustls' refusal of a server certificate in words, with what fixes it; other reasons as
/// they are.
pub(super) fn explain(reason: String) -> String {
    const WORDS: &[(&str, &str)] = &[
        (
            "CaUsedAsEndEntity",
            "the server's certificate is a CA certificate (CA:TRUE, as `openssl req -x509` \
             makes by default), which TLS refuses as a server's own: give that very \
             certificate as the model's ca_file to pin it, or give the server a certificate \
             signed by a CA and that CA as ca_file",
        ),
        (
            "UnknownIssuer",
            "the server's certificate is signed by no authority this client trusts: give the \
             CA that signed it as the model's ca_file (or the server's own certificate, to \
             pin it)",
        ),
        (
            "NotValidForName",
            "the server's certificate does not name this host: use the name or address it \
             was made for (its subjectAltName), or make it with this one",
        ),
        ("Expired", "the server's certificate has expired: renew it"),
    ];
    let Some(at) = reason.find("invalid peer certificate: ") else {
        return reason;
    };
    match WORDS.iter().find(|(k, _)| reason[at..].contains(k)) {
        Some((k, words)) => format!("{}{words} ({k})", &reason[..at]),
        None => reason,
    }
}
