//! The gateway's process and the supervisor talk over a socket pair: one
//! JSON line per [`Message`] from the gateway, one line with a sequence
//! number back for each refusal (the ack). The gateway parses what the
//! container sends, so the supervisor treats its bytes as untrusted: lines
//! are bounded ([`MAX_LINE`]), decoded into typed messages (unknown fields
//! refused), never block the supervisor (its end is non-blocking, each read
//! bounded), and a refusal whose fields are longer than [`MAX_FIELD`] is
//! dropped.
//!
//! Why the ack: the supervisor looks the client up by its socket, and a
//! client answered `403` may close that socket at once; the gateway answers
//! only after the supervisor acknowledged (or [`ACK_WAIT`] passed), as it
//! did when both lived in one process.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::Refused;

/// The longest line either side accepts.
pub const MAX_LINE: usize = 64 * 1024;
/// The longest string field of a refusal (longer ones are cut by the
/// gateway, refused by the supervisor).
pub const MAX_FIELD: usize = 1024;
/// How long the gateway waits for the supervisor to settle a refusal.
const ACK_WAIT: Duration = Duration::from_secs(1);
/// Bytes the supervisor reads per call, so a flood cannot hold it.
const READ_BUDGET: usize = 256 * 1024;

/// What the gateway's process tells the supervisor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Message {
    /// A refusal to settle (client lookup, warn event, report) and ack.
    Refused { seq: u64, refused: Refused },
    /// A warning for the log (e.g. why the gateway does not serve).
    Warn { message: String },
}

/// The gateway's end, shared by its threads; one message at a time.
pub struct Sender {
    inner: Mutex<Inner>,
}

struct Inner {
    stream: BufReader<UnixStream>,
    seq: u64,
}

impl Sender {
    pub fn new(stream: UnixStream) -> Sender {
        Sender {
            inner: Mutex::new(Inner {
                stream: BufReader::new(stream),
                seq: 0,
            }),
        }
    }

    /// The socket's fd (kept open when the gateway's process sweeps its fds).
    pub fn raw_fd(&self) -> RawFd {
        self.lock().stream.get_ref().as_raw_fd()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Send a refusal; with a client address, wait until the supervisor
    /// has looked the client up (acked), at most [`ACK_WAIT`].
    pub fn refused(&self, mut refused: Refused) {
        for f in [&mut refused.host, &mut refused.reason]
            .into_iter()
            .chain(refused.sni.as_mut())
            .chain(refused.allow.as_mut())
        {
            cut(f, MAX_FIELD);
        }
        let wait = refused.peer.is_some();
        let mut inner = self.lock();
        inner.seq += 1;
        let seq = inner.seq;
        if inner.send(&Message::Refused { seq, refused }).is_ok() && wait {
            inner.wait_ack(seq);
        }
    }

    /// Send a warning for the supervisor to log.
    pub fn warn(&self, message: &str) {
        let mut message = message.to_string();
        cut(&mut message, MAX_FIELD);
        let _ = self.lock().send(&Message::Warn { message });
    }
}

impl Inner {
    fn send(&mut self, m: &Message) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(m).map_err(std::io::Error::other)?;
        line.push(b'\n');
        self.stream.get_mut().write_all(&line)
    }

    fn wait_ack(&mut self, seq: u64) {
        let deadline = Instant::now() + ACK_WAIT;
        let mut line = String::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || self.stream.get_ref().set_read_timeout(Some(left)).is_err() {
                return;
            }
            line.clear();
            match (&mut self.stream).take(64).read_line(&mut line) {
                // Acks of refusals that timed out earlier come first.
                Ok(n) if n > 0 => {
                    if line.trim().parse::<u64>().is_ok_and(|n| n >= seq) {
                        return;
                    }
                }
                _ => return,
            }
        }
    }
}

/// Cut `s` to at most `max` bytes, on a character boundary.
fn cut(s: &mut String, max: usize) {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
}

/// The supervisor's end: non-blocking, bounded.
pub struct Receiver {
    stream: UnixStream,
    /// The start of a line not complete yet.
    pending: Vec<u8>,
    /// Inside a line longer than [`MAX_LINE`]: dropped up to its newline.
    overlong: bool,
    open: bool,
    /// Lines that were not a message (too long, not JSON, unknown fields,
    /// fields too long).
    pub malformed: u64,
}

impl Receiver {
    pub fn new(stream: UnixStream) -> std::io::Result<Receiver> {
        stream.set_nonblocking(true)?;
        Ok(Receiver {
            stream,
            pending: Vec::new(),
            overlong: false,
            open: true,
            malformed: 0,
        })
    }

    /// The socket to poll, while the other end is open.
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.open.then(|| self.stream.as_fd())
    }

    /// Whether the gateway's end is still open.
    pub fn is_open(&self) -> bool {
        self.open
    }

    /// The complete messages readable now (at most [`READ_BUDGET`] bytes).
    pub fn read(&mut self) -> Vec<Message> {
        let mut out = Vec::new();
        let mut chunk = [0u8; 16 * 1024];
        let mut budget = READ_BUDGET;
        while self.open && budget > 0 {
            match self.stream.read(&mut chunk) {
                Ok(0) => self.open = false,
                Ok(n) => {
                    budget = budget.saturating_sub(n);
                    self.take(&chunk[..n], &mut out);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => self.open = false,
            }
        }
        out
    }

    /// Split `bytes` into lines; decode each complete one.
    fn take(&mut self, mut bytes: &[u8], out: &mut Vec<Message>) {
        while let Some(i) = bytes.iter().position(|b| *b == b'\n') {
            let (line, rest) = bytes.split_at(i);
            bytes = &rest[1..];
            if self.overlong || self.pending.len() + line.len() > MAX_LINE {
                self.overlong = false;
                self.pending.clear();
                self.malformed += 1;
                continue;
            }
            self.pending.extend_from_slice(line);
            match decode(&self.pending) {
                Some(m) => out.push(m),
                None => self.malformed += 1,
            }
            self.pending.clear();
        }
        if self.overlong {
            return;
        }
        self.pending.extend_from_slice(bytes);
        if self.pending.len() > MAX_LINE {
            self.pending.clear();
            self.overlong = true;
        }
    }

    /// Tell the gateway refusal `seq` is settled. Never blocks: an ack the
    /// socket cannot take now is dropped (the gateway stops waiting).
    pub fn ack(&mut self, seq: u64) {
        let _ = (&self.stream).write(format!("{seq}\n").as_bytes());
    }
}

/// One line decoded, its fields within bounds.
fn decode(line: &[u8]) -> Option<Message> {
    let m: Message = serde_json::from_slice(line).ok()?;
    let fits = |s: &str| s.len() <= MAX_FIELD;
    let ok = match &m {
        Message::Refused { refused: r, .. } => {
            fits(&r.host)
                && fits(&r.reason)
                && r.sni.as_deref().is_none_or(fits)
                && r.allow.as_deref().is_none_or(fits)
        }
        Message::Warn { message } => fits(message),
    };
    ok.then_some(m)
}

#[cfg(test)]
mod tests {
    use super::super::{Blocker, Via};
    use super::*;

    fn refused(host: &str) -> Refused {
        Refused {
            blocker: Blocker::Connect,
            host: host.into(),
            port: 443,
            via: Via::Proxy,
            reason: "not in [net] allow".into(),
            sni: None,
            allow: Some(format!("[net] allow = [\"{host}:443\"]")),
            peer: Some("127.0.0.1:4000".parse().unwrap()),
        }
    }

    /// A refusal crosses as it was sent, and is acked.
    #[test]
    fn refusal_crosses_and_is_acked() {
        let (a, b) = UnixStream::pair().unwrap();
        let tx = Sender::new(a);
        let mut rx = Receiver::new(b).unwrap();
        let t = std::thread::spawn(move || tx.refused(refused("bad.example")));
        let mut got = Vec::new();
        while got.is_empty() {
            got = rx.read();
        }
        let Message::Refused { seq, refused: r } = &got[0] else {
            panic!("{got:?}")
        };
        assert_eq!(r, &refused("bad.example"));
        rx.ack(*seq);
        t.join().unwrap();
    }

    /// Untrusted bytes: an overlong line, garbage, unknown fields and an
    /// oversized field are each dropped and counted; the next good line
    /// still arrives; EOF closes.
    #[test]
    fn malformed_lines_are_dropped() {
        let (mut a, b) = UnixStream::pair().unwrap();
        let mut rx = Receiver::new(b).unwrap();
        let good = serde_json::to_string(&Message::Warn {
            message: "hi".into(),
        })
        .unwrap();
        let big = serde_json::to_string(&Message::Warn {
            message: "x".repeat(MAX_FIELD + 1),
        })
        .unwrap();
        let writer = std::thread::spawn(move || {
            a.write_all(&vec![b'a'; MAX_LINE + 10]).unwrap();
            a.write_all(b"\nnot json\n{\"warn\":{\"message\":\"m\",\"x\":1}}\n")
                .unwrap();
            a.write_all(format!("{big}\n{good}\n").as_bytes()).unwrap();
        });
        let mut got = Vec::new();
        while rx.is_open() && got.is_empty() {
            got.extend(rx.read());
        }
        writer.join().unwrap();
        while rx.is_open() {
            got.extend(rx.read());
        }
        assert_eq!(
            got,
            vec![Message::Warn {
                message: "hi".into()
            }]
        );
        assert_eq!(rx.malformed, 4);
        assert!(rx.fd().is_none());
    }

    /// What a subverted gateway may send: 50,000 mutants of a valid
    /// refusal line are each decoded (within bounds) or dropped, never a
    /// panic; and the receiver keeps going after them.
    #[test]
    fn mutated_lines_never_panic() {
        let seed = serde_json::to_vec(&Message::Refused {
            seq: 7,
            refused: refused("bad.example"),
        })
        .unwrap();
        for m in crate::supervisor::egress::mutate::mutants(&seed, 50_000, 3) {
            if let Some(Message::Refused { refused: r, .. }) = decode(&m) {
                assert!(r.host.len() <= MAX_FIELD, "{m:?}");
            }
        }
        let (mut a, b) = UnixStream::pair().unwrap();
        let mut rx = Receiver::new(b).unwrap();
        for m in crate::supervisor::egress::mutate::mutants(&seed, 200, 4) {
            let m: Vec<u8> = m.into_iter().filter(|b| *b != b'\n').collect();
            a.write_all(&m).unwrap();
            a.write_all(b"\n").unwrap();
            rx.read();
        }
        a.write_all(&seed).unwrap();
        a.write_all(b"\n").unwrap();
        drop(a);
        let mut last = Vec::new();
        while rx.is_open() {
            last.extend(rx.read());
        }
        assert_eq!(
            last.last(),
            Some(&Message::Refused {
                seq: 7,
                refused: refused("bad.example")
            })
        );
    }

    #[test]
    fn long_fields_are_cut_on_a_char_boundary() {
        let mut s = "é".repeat(MAX_FIELD);
        cut(&mut s, MAX_FIELD);
        assert_eq!(s.len(), MAX_FIELD);
        let mut s = format!("a{}", "é".repeat(MAX_FIELD));
        cut(&mut s, MAX_FIELD);
        assert_eq!(s.len(), MAX_FIELD - 1);
    }
}
