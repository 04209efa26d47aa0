//! The kernel's audit interface over netlink (`NETLINK_AUDIT`), just the
//! three requests the denial reports need: read the status (`AUDIT_GET`),
//! enable auditing (`AUDIT_SET` with `AUDIT_STATUS_ENABLED`, needs
//! `CAP_AUDIT_CONTROL`), and join the read-only multicast group
//! (`AUDIT_NLGRP_READLOG`, needs `CAP_AUDIT_READ`) through which the kernel
//! copies every record to listeners, whether or not an auditd runs.
//!
//! No crate wraps these (the `audit` crates speak the auditd unicast
//! protocol through an async runtime, which the runtime must not start
//! before libcontainer clones), so this is the syscall seam.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// What the operator lets sandboy do about kernel auditing
/// (`--audit`, `SANDBOY_AUDIT`, else the node configuration's `audit` key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Turn kernel auditing on when it is off (a node-wide switch: the
    /// kernel then also prints records to the kernel log, rate-limited).
    Enable,
    /// Use it when it is on; say once per container that Landlock reports
    /// are unavailable when it is off.
    #[default]
    IfEnabled,
    /// No denial reports at all.
    Off,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "enable" => Ok(Mode::Enable),
            "if-enabled" => Ok(Mode::IfEnabled),
            "off" => Ok(Mode::Off),
            other => Err(format!(
                "audit mode {other:?}: expected enable, if-enabled or off"
            )),
        }
    }
}

impl Mode {
    /// Whether refusals will be audited for a container created now: the
    /// seccomp filter then goes in with `SECCOMP_FILTER_FLAG_LOG` (errno
    /// verdicts recorded too). Never when auditing is off and stays off: the
    /// kernel would print each refusal to the kernel log for nobody.
    pub fn collects(self) -> bool {
        match self {
            Mode::Off => false,
            Mode::Enable => true,
            Mode::IfEnabled => Socket::control()
                .and_then(|c| c.status())
                .is_ok_and(|s| s.enabled != 0),
        }
    }
}

/// The session id the kernel prints as `ses=` when none was ever set.
const SESSION_UNSET: u32 = u32::MAX;

/// A fresh audit session for this process and all it forks from now on
/// (the container's init and every descendant), so that the denial reports
/// know the container's seccomp records by their `ses=` field: a
/// short-lived child has often exited, its /proc entry gone, by the time
/// its record is read. Writing /proc/self/loginuid starts a new session;
/// the login uid stays what it was (rewriting it needs CAP_AUDIT_CONTROL,
/// which root has), or, when it was never set (a service, CI), becomes the
/// caller's uid as a login's would. `None` when the kernel refuses (login
/// uids made immutable, an ordinary caller whose login uid is set): the
/// reports then find members through /proc only.
pub fn own_session() -> Option<u32> {
    let loginuid: u32 = std::fs::read_to_string("/proc/self/loginuid")
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let uid = if loginuid == SESSION_UNSET {
        nix::unistd::getuid().as_raw()
    } else {
        loginuid
    };
    std::fs::write("/proc/self/loginuid", uid.to_string()).ok()?;
    session_of("self")
}

/// The audit session of process `pid` (or `self`), if it has one.
pub fn session_of(pid: &str) -> Option<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/sessionid"))
        .ok()?
        .trim()
        .parse()
        .ok()
        .filter(|&s| s != SESSION_UNSET)
}

pub const AUDIT_GET: u16 = 1000;
pub const AUDIT_SET: u16 = 1001;
/// A user-space record type (the 1100–1199 range) for drain marks.
pub const AUDIT_TRUSTED_APP: u16 = 1121;
const AUDIT_STATUS_ENABLED: u32 = 1;
const AUDIT_NLGRP_READLOG: u32 = 1;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;
const HEADER: usize = 16;

/// `struct audit_status`, the fields sandboy reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    /// 0 off, 1 on, 2 locked.
    pub enabled: u32,
    pub rate_limit: u32,
    pub backlog_limit: u32,
    pub lost: u32,
}

/// One record as the kernel sent it: its type and its text
/// (`audit(1796125375.965:56): domain=… blockers=…`).
#[derive(Debug, Clone)]
pub struct Record {
    pub kind: u16,
    pub text: String,
}

/// A `NETLINK_AUDIT` socket.
pub struct Socket(OwnedFd);

impl Socket {
    fn open() -> io::Result<Self> {
        // SAFETY: plain socket(2); the fd is owned right away.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_AUDIT,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the kernel just returned this fd; nobody else owns it.
        Ok(Self(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    fn bind(&self, groups: u32) -> io::Result<()> {
        // SAFETY: sockaddr_nl is plain data; zeroed is a valid value.
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = libc::AF_NETLINK as u16;
        addr.nl_groups = groups;
        // SAFETY: addr outlives the call and its size is passed.
        let rc = unsafe {
            libc::bind(
                self.0.as_raw_fd(),
                &addr as *const libc::sockaddr_nl as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_nl>() as u32,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// A socket for requests (status, enable).
    pub fn control() -> io::Result<Self> {
        let s = Self::open()?;
        s.bind(0)?;
        Ok(s)
    }

    /// A member of the read-only log group: every record from now on.
    /// `EPERM` without `CAP_AUDIT_READ`.
    pub fn reader() -> io::Result<Self> {
        let s = Self::open()?;
        s.bind(1 << (AUDIT_NLGRP_READLOG - 1))?;
        // Records come in bursts (a loop of denials): a larger queue loses
        // fewer of them while the supervisor writes the report.
        let size: libc::c_int = 1 << 20;
        // SAFETY: setsockopt with a pointer to an int and its size.
        unsafe {
            libc::setsockopt(
                s.0.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                &size as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as u32,
            );
        }
        Ok(s)
    }

    fn request(&self, kind: u16, payload: &[u8]) -> io::Result<()> {
        let mut msg = Vec::with_capacity(HEADER + payload.len());
        msg.extend_from_slice(&((HEADER + payload.len()) as u32).to_ne_bytes());
        msg.extend_from_slice(&kind.to_ne_bytes());
        msg.extend_from_slice(&(NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
        msg.extend_from_slice(&1u32.to_ne_bytes());
        msg.extend_from_slice(&0u32.to_ne_bytes());
        msg.extend_from_slice(payload);
        // SAFETY: msg is a valid buffer of its length.
        let rc = unsafe { libc::send(self.0.as_raw_fd(), msg.as_ptr().cast(), msg.len(), 0) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Write a user-space record (`AUDIT_TRUSTED_APP`, `CAP_AUDIT_WRITE`)
    /// with `text`. The kernel queues it behind every record already
    /// logged, so its copy in the log group marks "all earlier records
    /// delivered". Ignored by the kernel while auditing is off.
    pub fn mark(&self, text: &str) -> io::Result<()> {
        let mut payload = text.as_bytes().to_vec();
        payload.push(0);
        // NLM_F_REQUEST only: no ack to read back.
        let mut msg = Vec::with_capacity(HEADER + payload.len());
        msg.extend_from_slice(&((HEADER + payload.len()) as u32).to_ne_bytes());
        msg.extend_from_slice(&AUDIT_TRUSTED_APP.to_ne_bytes());
        msg.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
        msg.extend_from_slice(&[0u8; 8]);
        msg.extend_from_slice(&payload);
        // SAFETY: msg is a valid buffer of its length.
        let rc = unsafe { libc::send(self.0.as_raw_fd(), msg.as_ptr().cast(), msg.len(), 0) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Receive one datagram (blocking).
    fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.recv_flags(buf, 0)
    }

    fn recv_flags(&self, buf: &mut [u8], flags: libc::c_int) -> io::Result<usize> {
        // SAFETY: buf is a valid writable buffer of its length.
        let n = unsafe {
            libc::recv(
                self.0.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                flags,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    /// The kernel's audit status.
    pub fn status(&self) -> io::Result<Status> {
        self.request(AUDIT_GET, &[])?;
        let mut buf = [0u8; 8192];
        loop {
            let n = self.recv(&mut buf)?;
            let (kind, body) = split(&buf[..n])?;
            match kind {
                AUDIT_GET if body.len() >= 28 => {
                    let word =
                        |i: usize| u32::from_ne_bytes(body[i * 4..i * 4 + 4].try_into().unwrap());
                    return Ok(Status {
                        enabled: word(1),
                        rate_limit: word(4),
                        backlog_limit: word(5),
                        lost: word(6),
                    });
                }
                NLMSG_ERROR => ack(body)?,
                _ => continue,
            }
        }
    }

    /// Set `enabled` (0 or 1); `CAP_AUDIT_CONTROL`.
    pub fn set_enabled(&self, enabled: u32) -> io::Result<()> {
        let mut st = [0u8; 40];
        st[0..4].copy_from_slice(&AUDIT_STATUS_ENABLED.to_ne_bytes());
        st[4..8].copy_from_slice(&enabled.to_ne_bytes());
        self.request(AUDIT_SET, &st)?;
        let mut buf = [0u8; 8192];
        loop {
            let n = self.recv(&mut buf)?;
            if let (NLMSG_ERROR, body) = split(&buf[..n])? {
                return ack(body);
            }
        }
    }

    /// The next record (blocking); `None` for a datagram that is no record.
    pub fn record(&self, buf: &mut [u8]) -> io::Result<Option<Record>> {
        let n = self.recv(buf)?;
        Self::decode(&buf[..n])
    }

    /// The next queued record without blocking; `None` when none is queued.
    pub fn try_record(&self, buf: &mut [u8]) -> io::Result<Option<Record>> {
        match self.recv_flags(buf, libc::MSG_DONTWAIT) {
            Ok(n) => Self::decode(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn decode(msg: &[u8]) -> io::Result<Option<Record>> {
        let (kind, body) = split(msg)?;
        let end = body.iter().position(|b| *b == 0).unwrap_or(body.len());
        Ok(Some(Record {
            kind,
            text: String::from_utf8_lossy(&body[..end]).trim_end().to_owned(),
        }))
    }
}

impl AsFd for Socket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

/// A netlink message's type and payload (one message per datagram here).
fn split(msg: &[u8]) -> io::Result<(u16, &[u8])> {
    if msg.len() < HEADER {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "short netlink message",
        ));
    }
    let len = (u32::from_ne_bytes(msg[0..4].try_into().unwrap()) as usize).clamp(HEADER, msg.len());
    let kind = u16::from_ne_bytes(msg[4..6].try_into().unwrap());
    Ok((kind, &msg[HEADER..len]))
}

/// An `NLMSG_ERROR` body: 0 is the ack, else a negative errno.
fn ack(body: &[u8]) -> io::Result<()> {
    let err = body
        .get(0..4)
        .map(|b| i32::from_ne_bytes(b.try_into().unwrap()))
        .unwrap_or(0);
    if err == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(-err))
    }
}
