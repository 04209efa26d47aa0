//! Which process of the container holds a connection the gateway refused:
//! the client's socket is found by its address in the container's TCP
//! table (`/proc/<init>/net/tcp`, the init's network namespace), then its
//! inode among the fds of the processes in that namespace. Best effort: a
//! process that already closed the socket is not found.
//!
//! The container chooses how many refusals it causes and how many
//! processes and fds the walk of `/proc` meets, and the supervisor, root
//! and outside the container's cgroup, pays for it; a red team's flood
//! took 3 to 4 s of its CPU per 4 s and delayed the timeout kill by 5.6 s.
//! So one [`Lookup`] serves all the refusals of a wake-up: the table (whose
//! read walks the host's whole TCP hash) is read at most once, the
//! processes are walked at most once (and not at all when no client still
//! holds its socket: a closed one shows inode 0), and neither starts past
//! the wake-up's deadline, itself within a [`Budget`] per second.

use std::collections::HashMap;
use std::fs;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::Path;
use std::time::{Duration, Instant};

use super::Client;

/// The time client lookups may take: at most [`Budget::SLICE`] per wake-up
/// of the supervisor and [`Budget::SHARE`] per second. The slice alone
/// still let a flood cost a slice per refusal (the gateway sends one
/// refusal at a time, each waiting for its ack, so each is a wake-up of its
/// own): 2.85 s of root CPU per 4 s in the red team's reproducer.
#[derive(Debug)]
pub struct Budget {
    window: Instant,
    spent: Duration,
}

impl Budget {
    /// Per wake-up: as long as the audit reader's slice
    /// (`supervisor::DRAIN_SLICE`).
    pub const SLICE: Duration = Duration::from_millis(20);
    /// Per second (a tenth of a core); past it, refusals are reported
    /// without their client until the second is over.
    pub const SHARE: Duration = Duration::from_millis(100);

    pub fn new(now: Instant) -> Budget {
        Budget {
            window: now,
            spent: Duration::ZERO,
        }
    }

    /// Until when a wake-up at `now` may look clients up.
    pub fn until(&mut self, now: Instant) -> Instant {
        if now.duration_since(self.window) >= Duration::from_secs(1) {
            *self = Budget::new(now);
        }
        now + Budget::SLICE.min(Budget::SHARE.saturating_sub(self.spent))
    }

    /// A wake-up took `took`.
    pub fn spend(&mut self, took: Duration) {
        self.spent += took;
    }
}

/// The clients of one wake-up's refusals, in the network namespace of
/// `init`, looked for until `until`.
pub struct Lookup {
    init: i32,
    until: Instant,
    /// Local address -> socket inode (read at the first lookup).
    table: Option<HashMap<SocketAddrV4, u64>>,
    /// Socket inode -> pid (walked at the first lookup that needs it; only
    /// what was seen before `until`).
    owners: Option<HashMap<u64, i32>>,
}

impl Lookup {
    pub fn new(init: i32, until: Instant) -> Lookup {
        Lookup {
            init,
            until,
            table: None,
            owners: None,
        }
    }

    /// The pid, comm and exe of the process holding the client end `peer`.
    pub fn find(&mut self, peer: SocketAddr) -> Client {
        let SocketAddr::V4(peer) = peer else {
            return None;
        };
        let init = self.init;
        // Reading the table is itself dear: the kernel walks every bucket
        // of the host's TCP hash for it (most of a flood's cost, by perf).
        if self.table.is_none() && Instant::now() >= self.until {
            return None;
        }
        let table = self.table.get_or_insert_with(|| {
            fs::read_to_string(format!("/proc/{init}/net/tcp"))
                .map(|t| parse_table(&t))
                .unwrap_or_default()
        });
        // Inode 0: the client closed its socket (the kernel keeps the
        // entry a while); no process holds it, and `socket:[0]` is no fd.
        let inode = *table.get(&peer).filter(|i| **i != 0)?;
        let until = self.until;
        let pid = *self
            .owners
            .get_or_insert_with(|| owners(init, until))
            .get(&inode)?;
        let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        let exe = fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
        Some((pid, comm.trim().to_string(), exe.display().to_string()))
    }
}

/// The socket inodes held by the processes in the network namespace of
/// `init`, and by whom; the walk stops at `until` (what it saw so far).
fn owners(init: i32, until: Instant) -> HashMap<u64, i32> {
    let mut owners = HashMap::new();
    let Ok(netns) = fs::read_link(format!("/proc/{init}/ns/net")) else {
        return owners;
    };
    let Ok(procs) = fs::read_dir("/proc") else {
        return owners;
    };
    for e in procs.flatten() {
        if Instant::now() >= until {
            break;
        }
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if fs::read_link(format!("/proc/{pid}/ns/net")).ok() != Some(netns.clone()) {
            continue;
        }
        let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Some(inode) = fs::read_link(fd.path())
                .ok()
                .as_ref()
                .and_then(|l| socket_inode(l))
            {
                owners.entry(inode).or_insert(pid);
            }
        }
    }
    owners
}

/// `socket:[N]` -> N.
fn socket_inode(link: &Path) -> Option<u64> {
    link.to_str()?
        .strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// A `/proc/<pid>/net/tcp` table: local address -> socket inode.
fn parse_table(table: &str) -> HashMap<SocketAddrV4, u64> {
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((local(f.get(1)?)?, f.get(9)?.parse().ok()?))
        })
        .collect()
}

/// `0100007F:1F90` -> 127.0.0.1:8080 (the address is the in-memory u32,
/// printed in hex).
fn local(field: &str) -> Option<SocketAddrV4> {
    let (ip, port) = field.split_once(':')?;
    let ip = u32::from_str_radix(ip, 16).ok()?;
    let port = u16::from_str_radix(port, 16).ok()?;
    Some(SocketAddrV4::new(Ipv4Addr::from(ip.to_ne_bytes()), port))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    fn far() -> Instant {
        Instant::now() + Duration::from_secs(60)
    }

    /// A client that closed its socket shows inode 0: found as no one, at
    /// once, without a walk of the processes (a flood of such refusals
    /// made the supervisor search every fd for `socket:[0]`, each time).
    #[test]
    fn a_closed_client_is_none_without_a_walk() {
        let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let mut l = Lookup::new(std::process::id() as i32, far());
        l.table = Some(parse_table(
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:9C40 0100007F:0C38 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000000000000000\n",
        ));
        assert_eq!(
            l.table
                .as_ref()
                .unwrap()
                .get(&"127.0.0.1:40000".parse().unwrap()),
            Some(&0)
        );
        assert_eq!(l.find(peer), None);
        assert!(l.owners.is_none(), "walked the processes for inode 0");
    }

    /// A client that holds its socket is found (this test's process), by
    /// one walk for every lookup of the wake-up; with the wake-up's time
    /// spent, the walk sees nothing and the client is reported without.
    #[test]
    fn the_walk_is_shared_and_bounded_by_the_wake_up() {
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let clients: Vec<TcpStream> = (0..3)
            .map(|_| TcpStream::connect(server.local_addr().unwrap()).unwrap())
            .collect();
        let me = std::process::id() as i32;
        let mut l = Lookup::new(me, far());
        for c in &clients {
            let who = l.find(c.local_addr().unwrap());
            assert_eq!(who.map(|w| w.0), Some(me));
        }
        let walked = l.owners.as_ref().map(HashMap::len);
        l.find(clients[0].local_addr().unwrap());
        assert_eq!(l.owners.as_ref().map(HashMap::len), walked);
        let mut spent = Lookup::new(me, Instant::now());
        assert_eq!(spent.find(clients[0].local_addr().unwrap()), None);
        assert!(spent.table.is_none(), "read the TCP table past the budget");
    }

    /// A wake-up gets its slice; once a second's share is spent, nothing
    /// until the second is over.
    #[test]
    fn lookups_have_a_budget() {
        let t0 = Instant::now();
        let mut b = Budget::new(t0);
        assert_eq!(b.until(t0), t0 + Budget::SLICE);
        b.spend(Budget::SHARE - Duration::from_millis(5));
        assert_eq!(b.until(t0), t0 + Duration::from_millis(5));
        b.spend(Duration::from_millis(5));
        let later = t0 + Duration::from_millis(900);
        assert_eq!(b.until(later), later);
        let next = t0 + Duration::from_secs(1);
        assert_eq!(b.until(next), next + Budget::SLICE);
    }

    #[test]
    fn table_addresses() {
        assert_eq!(local("0100007F:1F90"), "127.0.0.1:8080".parse().ok());
        assert_eq!(local("zz:1"), None);
        assert_eq!(socket_inode(Path::new("socket:[123]")), Some(123));
        assert_eq!(socket_inode(Path::new("pipe:[123]")), None);
    }
}
