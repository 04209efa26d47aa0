//! The kernel's audit switch (NETLINK_AUDIT, AUDIT_GET / AUDIT_SET), for
//! the suites that need real audit records (denial reports). Auditing is a
//! node-wide switch: a test takes [`AuditState`] for its lifetime, which
//! sets the state it needs and puts back the state it found.

use std::sync::{Mutex, MutexGuard};

/// One test of this binary at a time holds the switch.
static AUDIT: Mutex<()> = Mutex::new(());

fn netlink(kind: u16, payload: &[u8]) -> Vec<u8> {
    // SAFETY: socket/send/recv on an fd owned here and closed below;
    // every buffer outlives its call.
    unsafe {
        let fd = libc::socket(libc::AF_NETLINK, libc::SOCK_RAW, libc::NETLINK_AUDIT);
        assert!(fd >= 0, "socket(NETLINK_AUDIT)");
        let mut msg = Vec::new();
        msg.extend_from_slice(&(16 + payload.len() as u32).to_ne_bytes());
        msg.extend_from_slice(&kind.to_ne_bytes());
        // NLM_F_REQUEST, and NLM_F_ACK for a SET (a GET's answer is the reply).
        let flags: u16 = if kind == 1001 { 5 } else { 1 };
        msg.extend_from_slice(&flags.to_ne_bytes());
        msg.extend_from_slice(&[0u8; 8]);
        msg.extend_from_slice(payload);
        assert!(libc::send(fd, msg.as_ptr().cast(), msg.len(), 0) > 0);
        let mut buf = vec![0u8; 8192];
        loop {
            let n = libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0);
            assert!(n >= 16);
            let t = u16::from_ne_bytes([buf[4], buf[5]]);
            if (t == kind && kind == 1000) || (t == 2 && kind != 1000) {
                libc::close(fd);
                return buf[16..n as usize].to_vec();
            }
        }
    }
}

/// `audit_status.enabled`.
pub fn enabled() -> u32 {
    let body = netlink(1000, &[]);
    u32::from_ne_bytes(body[4..8].try_into().unwrap())
}

/// `AUDIT_SET` of `audit_status.enabled`.
pub fn set(enabled: u32) {
    let mut st = [0u8; 40];
    st[0..4].copy_from_slice(&1u32.to_ne_bytes());
    st[4..8].copy_from_slice(&enabled.to_ne_bytes());
    netlink(1001, &st);
}

/// Holds the switch; puts back the state it found on drop.
pub struct AuditState {
    before: u32,
    _lock: MutexGuard<'static, ()>,
}

impl AuditState {
    /// The switch taken, and set to `enabled` when given.
    pub fn take(enabled: Option<u32>) -> Self {
        let lock = AUDIT.lock().unwrap_or_else(|e| e.into_inner());
        let before = self::enabled();
        if let Some(e) = enabled {
            set(e);
        }
        AuditState {
            before,
            _lock: lock,
        }
    }
}

impl Drop for AuditState {
    fn drop(&mut self) {
        if enabled() != self.before {
            set(self.before);
        }
    }
}

/// The `{"type":"denial",…}` events among `sandboy events` output lines.
pub fn denial_events(stdout: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["type"] == "denial")
        .collect()
}
