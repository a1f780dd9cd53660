//! The usual self-signed certificate of a llama-server behind TLS, made by the `openssl`
//! binary as people make it (`req -x509 ... -addext subjectAltName=IP:127.0.0.1`; OpenSSL 3
//! marks it CA:TRUE): given as the model's `ca_file` it is pinned and the run measures;
//! without it, or with another certificate, the run stops in one line that says what is
//! wrong in words.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::{fake, run, tests};

/// A self-signed certificate for 127.0.0.1 and its key, by openssl, in `dir`; None (the test
/// says SKIPPED) without the binary.
fn openssl_cert(dir: &Path, name: &str) -> Option<(PathBuf, PathBuf)> {
    let (cert, key) = (
        dir.join(format!("{name}.pem")),
        dir.join(format!("{name}.key")),
    );
    let made = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args([
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output();
    match made {
        Ok(o) if o.status.success() => Some((cert, key)),
        _ => {
            eprintln!("SKIPPED: no working openssl binary to make the certificate");
            None
        }
    }
}

/// A fake server on loopback with that certificate.
fn serve(cert: &Path, key: &Path) -> u16 {
    let chain = vec![CertificateDer::from_pem_file(cert).unwrap()];
    let key = PrivateKeyDer::from_pem_file(key).unwrap();
    let cfg = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    fake::serve(
        fake::completion(&["a", "b", "c", "d"], 4),
        Some(Arc::new(cfg)),
    )
}

fn config(dir: &Path, port: u16, ca_file: Option<&Path>) -> PathBuf {
    let ca = ca_file.map_or(String::new(), |p| {
        format!("ca_file = {:?}\n", p.display().to_string())
    });
    let cfg = dir.join("models.toml");
    let text = format!(
        "[[model]]\nname = \"m\"\nendpoint = \"https://127.0.0.1:{port}/v1\"\n{ca}\n[serving]\nmodes = [\"request\"]\nn_prompt = 4\nn_gen = 4\nn_requests = 1\nrepetitions = 1\n"
    );
    std::fs::write(&cfg, text).unwrap();
    cfg
}

#[test]
fn an_openssl_self_signed_certificate_given_as_ca_file_is_pinned_and_measured() {
    let dir = tempfile::tempdir().unwrap();
    let Some((cert, key)) = openssl_cert(dir.path(), "server") else {
        return;
    };
    let port = serve(&cert, &key);
    let (code, err, rec) = run(dir.path(), &config(dir.path(), port, Some(&cert)), &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(tests(&rec.unwrap())[0]["status"], "ok");
}

#[test]
fn the_self_signed_certificate_without_its_pin_is_refused_in_words_that_say_how_to_fix_it() {
    let dir = tempfile::tempdir().unwrap();
    let Some((cert, key)) = openssl_cert(dir.path(), "server") else {
        return;
    };
    let port = serve(&cert, &key);
    let (code, err, _) = run(dir.path(), &config(dir.path(), port, None), &[]);
    assert_eq!((code, err.trim().lines().count()), (2, 1), "{err}");
    assert!(
        err.contains("is a CA certificate (CA:TRUE") && err.contains("ca_file to pin it"),
        "{err}"
    );
    // Another self-signed certificate in ca_file pins nothing but itself.
    let Some((other, _)) = openssl_cert(dir.path(), "other") else {
        return;
    };
    let (code, err, _) = run(dir.path(), &config(dir.path(), port, Some(&other)), &[]);
    assert_eq!((code, err.trim().lines().count()), (2, 1), "{err}");
    assert!(
        err.contains("certificate") && !err.contains("Other(OtherError"),
        "{err}"
    );
    eprintln!("stderr: {err}");
}
