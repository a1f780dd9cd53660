//! A fake OpenAI-compatible server on loopback for the hostile-server tests: std sockets,
//! one thread per connection, `Connection: close` after each answer; over TLS (rustls, with
//! a certificate authority and a server certificate the test makes with rcgen) when asked.
//! It lists model `m` at /v1/models, has no /props, and answers every POST with the canned
//! bytes it was given.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// An HTTP/1.1 answer with `content_type` and `body`, closing the connection.
pub fn response(status: &str, content_type: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// A streamed completion: one text event per piece, then a last event with `usage`.
pub fn completion(pieces: &[&str], completion_tokens: u64) -> String {
    let mut body = String::new();
    for p in pieces {
        body.push_str(&format!(
            "data: {{\"choices\":[{{\"text\":\"{p}\",\"index\":0,\"finish_reason\":null}}],\"model\":\"m\"}}\n\n"
        ));
    }
    body.push_str(&format!(
        "data: {{\"choices\":[{{\"text\":\"\",\"index\":0,\"finish_reason\":\"length\"}}],\"model\":\"m\",\"usage\":{{\"prompt_tokens\":4,\"completion_tokens\":{completion_tokens}}}}}\n\ndata: [DONE]\n\n"
    ));
    response("200 OK", "text/event-stream", &body)
}

/// Reads one request; returns its method and path.
fn read_request(s: &mut impl Read) -> Option<(String, String)> {
    let mut r = BufReader::new(s);
    let mut first = String::new();
    r.read_line(&mut first).ok()?;
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 || line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    let mut parts = first.split_whitespace();
    Some((parts.next()?.to_string(), parts.next()?.to_string()))
}

fn answer(s: &mut (impl Read + Write), post: &str, posts: &AtomicUsize) {
    let Some((method, path)) = read_request(s) else {
        return;
    };
    if method == "POST" {
        posts.fetch_add(1, Ordering::SeqCst);
    }
    let out = match (method.as_str(), path.as_str()) {
        ("GET", "/v1/models") => response(
            "200 OK",
            "application/json",
            r#"{"object":"list","data":[{"id":"m","object":"model"}]}"#,
        ),
        ("POST", _) => post.to_string(),
        _ => response("404 Not Found", "application/json", r#"{"error":"no"}"#),
    };
    let _ = s.write_all(out.as_bytes());
    let _ = s.flush();
}

/// Serves until the test process ends; returns the port. `tls`: serve HTTPS with it.
pub fn serve(post: String, tls: Option<Arc<rustls::ServerConfig>>) -> u16 {
    serve_counted(post, tls).0
}

/// `serve`, with the number of POSTs it has answered.
pub fn serve_counted(
    post: String,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> (u16, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let post = Arc::new(post);
    let posts = Arc::new(AtomicUsize::new(0));
    let counted = posts.clone();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { continue };
            let (post, tls, posts) = (post.clone(), tls.clone(), posts.clone());
            std::thread::spawn(move || serve_one(s, &post, tls, &posts));
        }
    });
    (port, counted)
}

fn serve_one(
    mut s: TcpStream,
    post: &str,
    tls: Option<Arc<rustls::ServerConfig>>,
    posts: &AtomicUsize,
) {
    match tls {
        None => answer(&mut s, post, posts),
        Some(cfg) => {
            let Ok(conn) = rustls::ServerConnection::new(cfg) else {
                return;
            };
            let mut t = rustls::StreamOwned::new(conn, s);
            answer(&mut t, post, posts);
            t.conn.send_close_notify();
            let _ = t.flush();
        }
    }
}

/// A certificate authority of the test's own and a server certificate it signed for
/// 127.0.0.1 and localhost: the CA in PEM, and the server's TLS configuration.
pub fn tls() -> (String, Arc<rustls::ServerConfig>) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "tpsbench test CA");
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().unwrap();
    let server =
        CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
    let cert = server.signed_by(&key, &issuer).unwrap();
    let der_key = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    let cfg = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], der_key)
        .unwrap();
    (ca_cert.pem(), Arc::new(cfg))
}
