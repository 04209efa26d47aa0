//! The HTTP proxy on 127.0.0.1:<port> (`HTTP_PROXY`, `HTTPS_PROXY`,
//! `ALL_PROXY`): `CONNECT host:port` for TLS and any TCP, absolute-URI
//! requests (`GET http://host/path`) forwarded for plain HTTP. The request
//! head is parsed with `httparse`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use super::tunnel;
use super::upstream::{self, Refusal};
use super::{Shared, Via};

/// The longest request head accepted.
const MAX_HEAD: usize = 64 * 1024;
/// Headers of the client meant for the proxy (or the hop), not upstream.
const HOP: &[&str] = &[
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "upgrade",
];

/// A parsed request head.
struct Head {
    method: String,
    target: String,
    minor: u8,
    headers: Vec<(String, Vec<u8>)>,
    /// Bytes read past the head (a body's start, or TLS after CONNECT).
    rest: Vec<u8>,
}

fn read_head(conn: &mut TcpStream) -> Result<Option<Head>, &'static str> {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        let n = match conn.read(&mut chunk) {
            Ok(0) | Err(_) => return Ok(None),
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 128];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&buf) {
            Ok(httparse::Status::Complete(len)) => {
                let head = Head {
                    method: req.method.unwrap_or("").to_string(),
                    target: req.path.unwrap_or("").to_string(),
                    minor: req.version.unwrap_or(1),
                    headers: req
                        .headers
                        .iter()
                        .map(|h| (h.name.to_string(), h.value.to_vec()))
                        .collect(),
                    rest: buf[len..].to_vec(),
                };
                let _ = conn.set_read_timeout(None);
                return Ok(Some(head));
            }
            Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => {}
            Ok(httparse::Status::Partial) => return Err("request head too long"),
            Err(_) => return Err("malformed request"),
        }
    }
}

fn respond(conn: &mut TcpStream, status: &str, body: &str) {
    let _ = write!(
        conn,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// Serve one proxy client.
pub fn serve(shared: &Shared, mut conn: TcpStream) {
    let head = match read_head(&mut conn) {
        Ok(Some(h)) => h,
        Ok(None) => return,
        Err(why) => {
            return respond(
                &mut conn,
                "400 Bad Request",
                &format!("sandboy egress: {why}\n"),
            )
        }
    };
    if head.method.eq_ignore_ascii_case("CONNECT") {
        connect(shared, conn, head)
    } else {
        forward(shared, conn, head)
    }
}

fn refused(shared: &Shared, conn: &mut TcpStream, host: &str, port: u16, r: &Refusal, via: Via) {
    // Reported (its client looked up) before the answer: the client may
    // close at once after it.
    shared.refuse(host, port, r, via, conn.peer_addr().ok());
    respond(
        conn,
        "403 Forbidden",
        &format!("sandboy egress refused {host}:{port}: {}\n", r.reason),
    );
}

fn connect(shared: &Shared, mut conn: TcpStream, head: Head) {
    let Some((host, port)) = upstream::split_authority(&head.target, None) else {
        return respond(
            &mut conn,
            "400 Bad Request",
            "sandboy egress: CONNECT needs host:port\n",
        );
    };
    let up = match upstream::connect(&shared.rules, &host, port) {
        Ok(u) => u,
        Err(r) => return refused(shared, &mut conn, &host, port, &r, Via::ProxyConnect),
    };
    if conn
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .is_err()
    {
        return;
    }
    let peer = conn.peer_addr().ok();
    if let Err(sni) = tunnel::splice(conn, up, head.rest, Some(&host)) {
        shared.refuse_sni(&host, port, sni.as_deref(), Via::ProxyConnect, peer);
    }
}

/// `http://host[:port]/path` → (host, port, origin-form path).
fn absolute(target: &str) -> Option<(String, u16, String)> {
    let rest = target
        .get(..7)
        .filter(|s| s.eq_ignore_ascii_case("http://"))
        .map(|_| &target[7..])?;
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let (host, port) = upstream::split_authority(authority, Some(80))?;
    let path = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("/{path}")
    };
    Some((host, port, path))
}

fn forward(shared: &Shared, mut conn: TcpStream, head: Head) {
    let Some((host, port, path)) = absolute(&head.target) else {
        return respond(
            &mut conn,
            "400 Bad Request",
            "sandboy egress: give an absolute http:// URI, or CONNECT host:port for anything else\n",
        );
    };
    let mut up = match upstream::connect(&shared.rules, &host, port) {
        Ok(u) => u,
        Err(r) => return refused(shared, &mut conn, &host, port, &r, Via::Proxy),
    };
    // One request per connection, sent to the host it was allowed for: the
    // Host header is the checked one, and the connection closes after it
    // (a second request on it could name another host).
    let mut out = format!("{} {path} HTTP/1.{}\r\n", head.method, head.minor).into_bytes();
    let authority = if port == 80 {
        host.clone()
    } else {
        format!("{host}:{port}")
    };
    out.extend(format!("Host: {authority}\r\nConnection: close\r\n").as_bytes());
    for (name, value) in &head.headers {
        if !HOP.iter().any(|h| name.eq_ignore_ascii_case(h)) {
            out.extend(name.as_bytes());
            out.extend(b": ");
            out.extend(value);
            out.extend(b"\r\n");
        }
    }
    out.extend(b"\r\n");
    out.extend(&head.rest);
    if up.write_all(&out).is_err() {
        return;
    }
    let _ = tunnel::splice(conn, up, Vec::new(), None);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_uris() {
        assert_eq!(
            absolute("http://A.example:8080/x?y"),
            Some(("a.example".into(), 8080, "/x?y".into()))
        );
        assert_eq!(
            absolute("http://a.example"),
            Some(("a.example".into(), 80, "/".into()))
        );
        assert_eq!(absolute("/relative"), None);
        assert_eq!(absolute("https://a.example/"), None);
    }
}
