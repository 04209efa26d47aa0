//! The DNS stub on 127.0.0.53:53 (UDP and TCP): an allowed name gets its
//! synthetic loopback address (A), an empty answer for AAAA (so clients
//! use the A record), REFUSED for every other type (no TXT/ANY/NULL
//! tunnelling), and NXDOMAIN for a name the rules do not allow.
//!
//! A small codec of its own (header, one question, one A answer; RFC 1035
//! §4): a stub that answers with addresses it makes up needs no more, and a
//! full codec (hickory-proto) would have brought ring, rand and futures
//! into the runtime's build.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpStream, UdpSocket};

use sandboy_spec_gen::policy::valid_host;

use super::Shared;

const TYPE_A: u16 = 1;
const TYPE_AAAA: u16 = 28;
const RCODE_FORMERR: u8 = 1;
const RCODE_NXDOMAIN: u8 = 3;
const RCODE_NOTIMP: u8 = 4;
const RCODE_REFUSED: u8 = 5;
/// Seconds clients may cache an answer; the address stays the name's for
/// the container's life, so this only bounds stale answers of nothing.
const TTL: u32 = 60;

/// One parsed question.
#[derive(Debug, PartialEq, Eq)]
pub struct Question {
    pub id: u16,
    pub flags: u16,
    /// Lowercased, without a trailing dot, in presentation form (RFC 1035
    /// §5.1): a '.' or '\' inside a label and bytes outside printable
    /// ASCII are escaped (`\.`, `\\`, `\DDD`), so labels joined by '.' are
    /// never read as other labels, and the report shows what was asked.
    pub name: String,
    pub qtype: u16,
    /// The question section as received (echoed in the answer).
    raw: Vec<u8>,
}

/// Parse a query with exactly one question; `Err(Some(id))` when only the
/// id could be read (answer FORMERR), `Err(None)` when not even that.
pub fn parse(msg: &[u8]) -> Result<Question, Option<u16>> {
    if msg.len() < 12 {
        return Err(None);
    }
    let id = u16::from_be_bytes([msg[0], msg[1]]);
    let flags = u16::from_be_bytes([msg[2], msg[3]]);
    let qd = u16::from_be_bytes([msg[4], msg[5]]);
    if flags & 0x8000 != 0 || qd != 1 {
        return Err(Some(id));
    }
    let mut at = 12;
    let mut labels = Vec::new();
    loop {
        let len = usize::from(*msg.get(at).ok_or(Some(id))?);
        at += 1;
        if len == 0 {
            break;
        }
        // Compression pointers have no place in a question.
        if len > 63 {
            return Err(Some(id));
        }
        let label = msg.get(at..at + len).ok_or(Some(id))?;
        labels.push(present(label));
        at += len;
    }
    let tail = msg.get(at..at + 4).ok_or(Some(id))?;
    let qtype = u16::from_be_bytes([tail[0], tail[1]]);
    Ok(Question {
        id,
        flags,
        name: labels.join("."),
        qtype,
        raw: msg[12..at + 4].to_vec(),
    })
}

/// One label in presentation form, lowercased (see [`Question::name`]).
fn present(label: &[u8]) -> String {
    let mut out = String::with_capacity(label.len());
    for &b in label {
        match b {
            b'.' | b'\\' => {
                out.push('\\');
                out.push(char::from(b));
            }
            0x21..=0x7e => out.push(char::from(b.to_ascii_lowercase())),
            _ => out.push_str(&format!("\\{b:03}")),
        }
    }
    out
}

/// The answer to `q`: `addr` for an allowed name, else `rcode`.
pub fn answer(q: &Question, addr: Option<Ipv4Addr>, rcode: u8) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend(q.id.to_be_bytes());
    // QR, the query's opcode and RD, AA, RA.
    let flags = 0x8000 | (q.flags & 0x7900) | 0x0400 | 0x0080 | u16::from(rcode);
    out.extend(flags.to_be_bytes());
    out.extend(1u16.to_be_bytes());
    out.extend(u16::from(addr.is_some()).to_be_bytes());
    out.extend([0, 0, 0, 0]);
    out.extend(&q.raw);
    if let Some(a) = addr {
        out.extend([0xc0, 12]); // the question's name
        out.extend(TYPE_A.to_be_bytes());
        out.extend(1u16.to_be_bytes());
        out.extend(TTL.to_be_bytes());
        out.extend(4u16.to_be_bytes());
        out.extend(a.octets());
    }
    out
}

fn formerr(id: u16) -> Vec<u8> {
    let mut out = id.to_be_bytes().to_vec();
    out.extend((0x8000u16 | u16::from(RCODE_FORMERR)).to_be_bytes());
    out.extend([0; 8]);
    out
}

/// The reply to one query message, or nothing for garbage.
pub fn reply(shared: &Shared, msg: &[u8]) -> Option<Vec<u8>> {
    let q = match parse(msg) {
        Ok(q) => q,
        Err(id) => return id.map(formerr),
    };
    if (q.flags >> 11) & 0xf != 0 {
        return Some(answer(&q, None, RCODE_NOTIMP));
    }
    // A name that is not a host name (a byte other than letters, digits and
    // '-' in a label) does not exist for the gateway: NXDOMAIN, as for an
    // unlisted name. Not FORMERR, the query is well formed; not REFUSED,
    // which resolvers take as "ask another server" and which the stub
    // keeps for types it does not serve.
    if !valid_host(&q.name) || !shared.rules.permits_name(&q.name) {
        shared.refuse_name(&q.name);
        return Some(answer(&q, None, RCODE_NXDOMAIN));
    }
    Some(match q.qtype {
        TYPE_A => match shared.names.address(&q.name) {
            Some(a) => answer(&q, Some(a), 0),
            None => answer(&q, None, RCODE_REFUSED),
        },
        TYPE_AAAA => answer(&q, None, 0),
        _ => answer(&q, None, RCODE_REFUSED),
    })
}

/// Serve the UDP socket forever.
pub fn serve_udp(shared: &Shared, sock: UdpSocket) {
    let mut buf = [0u8; 1500];
    loop {
        let Ok((n, from)) = sock.recv_from(&mut buf) else {
            continue;
        };
        if let Some(r) = reply(shared, &buf[..n]) {
            let _ = sock.send_to(&r, from);
        }
    }
}

/// Serve one TCP connection: length-prefixed messages until EOF.
pub fn serve_tcp(shared: &Shared, mut conn: TcpStream) {
    let _ = conn.set_read_timeout(Some(std::time::Duration::from_secs(30)));
    loop {
        let mut len = [0u8; 2];
        if conn.read_exact(&mut len).is_err() {
            return;
        }
        let mut msg = vec![0u8; usize::from(u16::from_be_bytes(len))];
        if conn.read_exact(&mut msg).is_err() {
            return;
        }
        let Some(r) = reply(shared, &msg) else {
            return;
        };
        let mut out = (r.len() as u16).to_be_bytes().to_vec();
        out.extend(r);
        if conn.write_all(&out).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(name: &str, qtype: u16) -> Vec<u8> {
        let mut m = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        for l in name.split('.') {
            m.push(l.len() as u8);
            m.extend(l.as_bytes());
        }
        m.push(0);
        m.extend(qtype.to_be_bytes());
        m.extend(1u16.to_be_bytes());
        m
    }

    #[test]
    fn parses_and_answers() {
        let q = parse(&query("Api.Example.com", TYPE_A)).unwrap();
        assert_eq!(
            (q.id, q.name.as_str(), q.qtype),
            (0x1234, "api.example.com", 1)
        );
        let a = answer(&q, Some(Ipv4Addr::new(127, 100, 0, 1)), 0);
        assert_eq!(&a[a.len() - 4..], &[127, 100, 0, 1]);
        assert_eq!(a[3] & 0xf, 0);
        assert_eq!(u16::from_be_bytes([a[6], a[7]]), 1);
        let nx = answer(&q, None, RCODE_NXDOMAIN);
        assert_eq!(nx[3] & 0xf, RCODE_NXDOMAIN);
        assert_eq!(parse(&[0; 5]), Err(None));
        let mut bad = query("a.b", TYPE_A);
        bad[12] = 0xc0;
        assert_eq!(parse(&bad), Err(Some(0x1234)));
    }

    /// Labels with other bytes than letters, digits and '-' come out
    /// escaped, and are never a valid host name (the stub answers NXDOMAIN).
    #[test]
    fn names_are_in_presentation_form() {
        let raw = |labels: &[&[u8]]| {
            let mut m = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
            for l in labels {
                m.push(l.len() as u8);
                m.extend(*l);
            }
            m.extend([0, 0, 1, 0, 1]);
            parse(&m).unwrap().name
        };
        for (labels, name) in [
            (
                &[&b"Secret"[..], b"example", b"test"][..],
                "secret.example.test",
            ),
            (
                &[&b"\\115ecret"[..], b"example", b"test"],
                "\\\\115ecret.example.test",
            ),
            (&[&b"secret.example"[..], b"test"], "secret\\.example.test"),
            (&[&b"x\n[fs]"[..], b"test"], "x\\010[fs].test"),
            (&[&b"caf\xc3\xa9"[..], b"test"], "caf\\195\\169.test"),
        ] {
            let got = raw(labels);
            assert_eq!(got, name);
            assert_eq!(valid_host(&got), name == "secret.example.test", "{got}");
        }
    }

    /// What a step sends the stub: 50,000 mutants of a valid query are
    /// each parsed or refused without a panic, and every parsed one can be
    /// answered and its answer parsed back.
    #[test]
    fn mutated_queries_never_panic() {
        let seed = query("api.example.com", TYPE_A);
        for m in crate::supervisor::egress::mutate::mutants(&seed, 50_000, 1) {
            if let Ok(q) = parse(&m) {
                let a = answer(&q, Some(Ipv4Addr::new(127, 100, 0, 1)), 0);
                assert!(a.len() >= 12, "{m:?}");
            }
        }
    }
}
