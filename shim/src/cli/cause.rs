//! libcontainer's error events, kept as the cause of a failure instead of
//! printed one by one.
//!
//! A failed `create` used to print three to five logrus lines — most of
//! them from the container's init, a clone of this process, each wrapping
//! the previous one — plus "failed to open container state file" from the
//! cleanup. runc prints one line. Here libcontainer's and libcgroups'
//! `error!` events are collected (the runtime's own in memory, the init's
//! and the intermediate process's over a datagram socket inherited through
//! the clone), and the CLI prints one line: its message plus the innermost
//! cause — the first event of the container's own processes, where the
//! error began (libcontainer logs each wrapper again on the way up).
//! `--debug` still prints every event as it happens.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::{Mutex, OnceLock};

use nix::sys::socket::{recv, send, socketpair, AddressFamily, MsgFlags, SockFlag, SockType};
use nix::sys::stat::fstat;

struct Channel {
    /// The runtime process; any other pid is a clone of it.
    owner: u32,
    read: OwnedFd,
    write: OwnedFd,
    /// The write end's identity: after libcontainer's `close_range` in the
    /// init its number may name another file, which must never be written.
    ino: (u64, u64),
}

static CHANNEL: OnceLock<Channel> = OnceLock::new();
static OWN: Mutex<Vec<Event>> = Mutex::new(Vec::new());

/// One error event: its message and fields.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Event {
    pub msg: String,
    pub fields: Vec<(String, String)>,
}

impl Event {
    /// Whether `message` already says everything this event does.
    fn said_in(&self, message: &str) -> bool {
        message.contains(&self.msg)
            || (!self.fields.is_empty()
                && self
                    .fields
                    .iter()
                    .all(|(_, v)| message.contains(v.trim_matches('"'))))
    }

    fn render(&self) -> String {
        if self.fields.is_empty() {
            return self.msg.clone();
        }
        let fields: Vec<String> = self
            .fields
            .iter()
            .map(|(k, v)| format!("{k}={}", v.trim_matches('"')))
            .collect();
        format!("{} ({})", self.msg, fields.join(", "))
    }
}

/// Open the channel; called once from logging setup. Without it (an error
/// here) events are only kept in this process.
pub fn open() {
    let flags = SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK;
    let Ok((read, write)) = socketpair(AddressFamily::Unix, SockType::Datagram, None, flags) else {
        return;
    };
    let Ok(st) = fstat(write.as_raw_fd()) else {
        return;
    };
    let _ = CHANNEL.set(Channel {
        owner: std::process::id(),
        read,
        write,
        ino: (st.st_dev, st.st_ino),
    });
}

/// Keep one event (from the log layer).
pub fn keep(event: Event) {
    match CHANNEL.get() {
        Some(c) if c.owner != std::process::id() => {
            if let Ok(text) = serde_json::to_string(&event) {
                c.send(&text);
            }
        }
        _ => {
            if let Ok(mut own) = OWN.lock() {
                own.push(event);
            }
        }
    }
}

impl Channel {
    fn send(&self, text: &str) {
        let fd: RawFd = self.write.as_raw_fd();
        if fstat(fd).is_ok_and(|st| (st.st_dev, st.st_ino) == self.ino) {
            // Never blocks, never raises SIGPIPE; a full queue drops it.
            let _ = send(
                fd,
                text.as_bytes(),
                MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL,
            );
        }
    }

    fn drain(&self) -> Vec<Event> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 8192];
        while let Ok(n) = recv(self.read.as_raw_fd(), &mut buf, MsgFlags::MSG_DONTWAIT) {
            if let Ok(e) = serde_json::from_slice(&buf[..n]) {
                out.push(e);
            }
        }
        out
    }
}

/// What the container's init said when it failed after `create` had
/// returned (a startContainer hook that failed or was refused under the
/// confinement): its first error, which no caller is left to report,
/// since libcontainer's channel to the runtime is closed by then.
pub fn init_failure() -> Option<String> {
    CHANNEL.get()?.drain().first().map(Event::render)
}

/// `message` with the innermost cause: the first event of the container's
/// processes (unless `message` already says it), else the runtime's first
/// event naming an errno.
pub fn explain(message: &str) -> String {
    let theirs = CHANNEL.get().map(Channel::drain).unwrap_or_default();
    let cause = match theirs.first() {
        Some(first) => (!first.said_in(message)).then(|| first.render()),
        None => OWN.lock().ok().and_then(|own| {
            own.iter()
                .find(|e| e.msg.contains("os error") && !e.said_in(message))
                .map(Event::render)
        }),
    };
    match cause {
        Some(cause) => format!("{message}: {cause}"),
        None => message.to_owned(),
    }
}
