//! Which process of the container holds a connection the gateway refused:
//! the client's socket is found by its address in the container's TCP
//! table (`/proc/<init>/net/tcp`, the init's network namespace), then its
//! inode among the fds of the processes in that namespace. Best effort: a
//! process that already closed the socket is not found.

use std::fs;
use std::net::{IpAddr, SocketAddr};

/// The pid, comm and exe of the process holding the client end `peer`.
pub fn find(init: i32, peer: SocketAddr) -> Option<(i32, String, String)> {
    let inode = inode(init, peer)?;
    let netns = fs::read_link(format!("/proc/{init}/ns/net")).ok()?;
    let needle = format!("socket:[{inode}]");
    for e in fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if fs::read_link(format!("/proc/{pid}/ns/net")).ok().as_ref() != Some(&netns) {
            continue;
        }
        let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        if fds
            .flatten()
            .any(|fd| fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == needle.as_str()))
        {
            let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            let exe = fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
            return Some((pid, comm.trim().to_string(), exe.display().to_string()));
        }
    }
    None
}

/// The socket inode whose local address is `peer`, from the TCP table.
fn inode(init: i32, peer: SocketAddr) -> Option<u64> {
    let IpAddr::V4(ip) = peer.ip() else {
        return None;
    };
    // The table prints the address as the in-memory u32, in hex.
    let want = format!(
        "{:08X}:{:04X}",
        u32::from_ne_bytes(ip.octets()),
        peer.port()
    );
    let table = fs::read_to_string(format!("/proc/{init}/net/tcp")).ok()?;
    table.lines().skip(1).find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.get(1) == Some(&want.as_str()))
            .then(|| f.get(9)?.parse().ok())
            .flatten()
    })
}
