//! Splicing a client connection to its upstream, after one look at the
//! client's first bytes: a TLS ClientHello must name the host the
//! connection was allowed for (no fronting by SNI), and nothing of the
//! client reaches upstream before that check.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

use super::sni;

/// The longest ClientHello record looked at (a TLS record's maximum).
const MAX_RECORD: usize = 5 + 16 * 1024 + 256;

/// How the first bytes ended.
pub enum First {
    /// Forward these bytes (TLS naming the host, or not TLS).
    Pass(Vec<u8>),
    /// A ClientHello naming another host (or none).
    Mismatch(Option<String>),
    /// The client closed before sending anything.
    Closed,
}

/// Read the client's first bytes (`pending`: already read with the
/// request) and check a ClientHello's server name against `host`.
pub fn first_bytes(client: &mut TcpStream, mut pending: Vec<u8>, host: &str) -> First {
    let mut buf = [0u8; 4096];
    if pending.is_empty() {
        match client.read(&mut buf) {
            Ok(0) | Err(_) => return First::Closed,
            Ok(n) => pending.extend_from_slice(&buf[..n]),
        }
    }
    if !sni::looks_like_tls(&pending) {
        return First::Pass(pending);
    }
    // A slow client must not hold a thread forever.
    let _ = client.set_read_timeout(Some(Duration::from_secs(30)));
    loop {
        if let Some(len) = sni::record_len(&pending) {
            if pending.len() >= len || len > MAX_RECORD {
                break;
            }
        }
        if pending.len() >= MAX_RECORD {
            break;
        }
        match client.read(&mut buf) {
            Ok(0) | Err(_) => return First::Closed,
            Ok(n) => pending.extend_from_slice(&buf[..n]),
        }
    }
    let _ = client.set_read_timeout(None);
    let len = sni::record_len(&pending)
        .unwrap_or(pending.len())
        .min(pending.len());
    match sni::server_name(&pending[..len]) {
        Some(name) if name.trim_end_matches('.') == host => First::Pass(pending),
        other => First::Mismatch(other),
    }
}

/// Copy both ways until both are done. Upstream's bytes flow at once (a
/// server that speaks first must be heard); the client's only after its
/// first bytes passed [`first_bytes`] for `host` (`None`: no check, e.g. a
/// forwarded plain-HTTP request). Returns the mismatching ClientHello's
/// name (`Err`), after closing both.
pub fn splice(
    mut client: TcpStream,
    upstream: TcpStream,
    pending: Vec<u8>,
    host: Option<&str>,
) -> Result<(), Option<String>> {
    let (Ok(c_write), Ok(u_read)) = (client.try_clone(), upstream.try_clone()) else {
        return Ok(());
    };
    let back = std::thread::spawn(move || {
        let (mut u, mut c) = (u_read, c_write);
        copy(&mut u, &mut c);
        let _ = c.shutdown(Shutdown::Write);
    });
    let head = match host {
        None => First::Pass(pending),
        Some(h) => first_bytes(&mut client, pending, h),
    };
    let mut up = upstream;
    let verdict = match head {
        First::Pass(bytes) => {
            if up.write_all(&bytes).is_ok() {
                copy(&mut client, &mut up);
            }
            let _ = up.shutdown(Shutdown::Write);
            Ok(())
        }
        First::Closed => {
            let _ = up.shutdown(Shutdown::Write);
            Ok(())
        }
        First::Mismatch(name) => {
            let _ = up.shutdown(Shutdown::Both);
            let _ = client.shutdown(Shutdown::Both);
            Err(name)
        }
    };
    let _ = back.join();
    verdict
}

/// Copy `from` to `to` until EOF: through a pipe with splice(2), so the
/// bytes never cross into this process (the gateway's throughput is that of
/// the kernel's socket buffers), else with a plain copy.
fn copy(from: &mut TcpStream, to: &mut TcpStream) {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two fds into the array we own; they are wrapped
    // at once so they are closed on every path.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        let _ = std::io::copy(from, to);
        return;
    }
    // SAFETY: both fds were just returned by pipe2 and are owned only here.
    let (pr, pw) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // A larger pipe moves more per call; the default (64 KiB) still works.
    // SAFETY: F_SETPIPE_SZ on a pipe fd we own.
    unsafe { libc::fcntl(pw.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20) };
    // No SPLICE_F_MORE: it corks the socket and delays the last segment.
    let flags = libc::SPLICE_F_MOVE;
    loop {
        // SAFETY: splice between fds owned by the caller and by us; null
        // offsets (sockets and pipes have none).
        let n = unsafe {
            libc::splice(
                from.as_raw_fd(),
                std::ptr::null_mut(),
                pw.as_raw_fd(),
                std::ptr::null_mut(),
                1 << 20,
                flags,
            )
        };
        if n <= 0 {
            return;
        }
        let mut left = n as usize;
        while left > 0 {
            // SAFETY: as above.
            let m = unsafe {
                libc::splice(
                    pr.as_raw_fd(),
                    std::ptr::null_mut(),
                    to.as_raw_fd(),
                    std::ptr::null_mut(),
                    left,
                    flags,
                )
            };
            if m <= 0 {
                return;
            }
            left -= m as usize;
        }
    }
}
