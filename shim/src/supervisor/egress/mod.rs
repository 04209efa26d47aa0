//! The egress gateway: the supervisor's duty that lets a container with
//! `[net] allow` reach the allowed hosts and nothing else (docs/egress.md).
//!
//! The container has its own network namespace with only loopback. Its
//! listening sockets are made inside that namespace by `create`, before the
//! payload starts ([`Listeners::bind`], run there by the container layer),
//! and served from the supervisor, which lives in the runtime's namespace:
//! a socket keeps the namespace it was made in, so what the gateway accepts
//! comes from the container and what it connects goes out from the host.
//!
//! * [`http`]: the proxy on 127.0.0.1:<port> named by the proxy variables;
//! * [`dns`]: the stub on 127.0.0.53:53, a synthetic 127.x.y.z per allowed
//!   name ([`Names`]);
//! * one listener on 0.0.0.0:<port> per allowed port: a client that ignores
//!   the proxy variables connects to the synthetic address, and the local
//!   address of the accepted socket says which name it meant;
//! * [`upstream`]: rules checked, names resolved on the host, addresses
//!   checked; [`tunnel`] and [`sni`]: the splice and its TLS name check.
//!
//! Threads, not an async runtime: a step opens a handful of connections,
//! blocking copies run at loopback speed, and this process forks nothing
//! after they start (see docs/egress.md).

pub mod channel;
pub mod child;
pub mod client;
pub mod dns;
pub mod http;
pub mod sni;
pub mod tunnel;
pub mod upstream;

#[cfg(test)]
pub(crate) mod mutate;

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use sandboy_spec_gen::policy::Egress;
use serde::{Deserialize, Serialize};

use super::denials::{Denial, MAX_WARNINGS};
use upstream::Refusal;

/// The DNS stub's address (systemd-resolved's, so tools expecting a local
/// stub find one).
pub const DNS_ADDR: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 53);

/// The gateway's sockets, made inside the container's network namespace.
#[derive(Debug)]
pub struct Listeners {
    proxy: TcpListener,
    dns_udp: UdpSocket,
    dns_tcp: TcpListener,
    ports: Vec<(u16, TcpListener)>,
}

impl Listeners {
    /// Bind every socket; run inside the container's network namespace
    /// (loopback up). Port 53 as an allowed port is served by the stub's
    /// own TCP socket's address only, so it gets no listener of its own.
    pub fn bind(rules: &Egress, proxy_port: u16) -> std::io::Result<Listeners> {
        Ok(Listeners {
            proxy: TcpListener::bind((Ipv4Addr::LOCALHOST, proxy_port))?,
            dns_udp: UdpSocket::bind((DNS_ADDR, 53))?,
            dns_tcp: TcpListener::bind((DNS_ADDR, 53))?,
            ports: direct_ports(rules)
                .map(|p| TcpListener::bind((Ipv4Addr::UNSPECIFIED, p)).map(|l| (p, l)))
                .collect::<std::io::Result<_>>()?,
        })
    }

    /// The sockets' fd numbers (kept open by the gateway's process).
    pub fn raw_fds(&self) -> Vec<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        let mut v = vec![
            self.proxy.as_raw_fd(),
            self.dns_udp.as_raw_fd(),
            self.dns_tcp.as_raw_fd(),
        ];
        v.extend(self.ports.iter().map(|(_, l)| l.as_raw_fd()));
        v
    }

    /// The sockets as fds, in the order [`Listeners::from_fds`] expects
    /// (to pass them to another process: unprivileged wrap binds them in
    /// the step's namespace and serves them from outside).
    pub fn into_fds(self) -> Vec<OwnedFd> {
        let mut fds: Vec<OwnedFd> =
            vec![self.proxy.into(), self.dns_udp.into(), self.dns_tcp.into()];
        fds.extend(self.ports.into_iter().map(|(_, l)| l.into()));
        fds
    }

    /// The sockets [`Listeners::into_fds`] gave for `rules`: a count that
    /// does not fit the rules, or an fd that is not a socket of the kind
    /// its place says, is refused.
    pub fn from_fds(rules: &Egress, fds: Vec<OwnedFd>) -> std::io::Result<Listeners> {
        let ports: Vec<u16> = direct_ports(rules).collect();
        if fds.len() != 3 + ports.len() {
            return Err(std::io::Error::other(format!(
                "expected {} gateway sockets, got {}",
                3 + ports.len(),
                fds.len()
            )));
        }
        let mut fds = fds.into_iter();
        let mut next = |kind: i32| {
            let fd = fds.next().expect("counted above");
            let got = nix::sys::socket::getsockopt(&fd, nix::sys::socket::sockopt::SockType)
                .map_err(std::io::Error::from)?;
            if got as i32 != kind {
                return Err(std::io::Error::other("a gateway fd of the wrong kind"));
            }
            Ok(fd)
        };
        let (stream, dgram) = (libc::SOCK_STREAM, libc::SOCK_DGRAM);
        Ok(Listeners {
            proxy: next(stream)?.into(),
            dns_udp: next(dgram)?.into(),
            dns_tcp: next(stream)?.into(),
            ports: ports
                .into_iter()
                .map(|p| Ok((p, next(stream)?.into())))
                .collect::<std::io::Result<_>>()?,
        })
    }
}

/// The allowed ports that get a listener of their own: port 53 is served
/// by the stub's TCP socket's address only.
fn direct_ports(rules: &Egress) -> impl Iterator<Item = u16> {
    rules.ports().into_iter().filter(|p| *p != 53)
}

/// The egress duty: rules and sockets, ready before the payload starts
/// (served by the gateway's own process, [`child`]; refused clients are
/// looked up in the init's network namespace).
#[derive(Debug)]
pub struct Duty {
    pub rules: Egress,
    pub listeners: Listeners,
}

/// Synthetic addresses given out at most (127.100.0.1 to 127.101.0.0).
pub const MAX_NAMES: u32 = 65536;
/// Connections served at once; more are closed at once. The gateway is a
/// host process outside the container's cgroup, and a tunnel holds two
/// threads and three fds: at 1,024 a red team's `pids = 32` container made
/// it run 2,052 threads in the host's pids cgroup. 256 bounds that to
/// about 520 threads, and is far above what a build step keeps open.
const MAX_CONNECTIONS: usize = 256;

/// The synthetic addresses of allowed names, one per name for the
/// container's life, from 127.100.0.1 up (clear of 127.0.0.1 and the stub).
#[derive(Debug, Default)]
pub struct Names {
    map: Mutex<(HashMap<String, Ipv4Addr>, HashMap<Ipv4Addr, String>)>,
}

impl Names {
    /// The address of `name`, given on first use; `None` once
    /// [`MAX_NAMES`] names have one (a wildcard allows endless names).
    pub fn address(&self, name: &str) -> Option<Ipv4Addr> {
        let mut m = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(a) = m.0.get(name) {
            return Some(*a);
        }
        let n = m.0.len() as u32 + 1;
        if n > MAX_NAMES {
            return None;
        }
        let a = Ipv4Addr::from(u32::from(Ipv4Addr::new(127, 100, 0, 0)) + n);
        m.0.insert(name.to_string(), a);
        m.1.insert(a, name.to_string());
        Some(a)
    }

    /// The name an address was given to.
    pub fn name(&self, addr: Ipv4Addr) -> Option<String> {
        let m = self.map.lock().unwrap_or_else(|e| e.into_inner());
        m.1.get(&addr).cloned()
    }
}

/// The refused client's pid, comm and exe, when found.
pub type Client = Option<(i32, String, String)>;

/// What the gateway refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Blocker {
    /// A destination the rules do not permit (`egress.connect`).
    Connect,
    /// A ClientHello naming another host than allowed, or none (`egress.sni`).
    Sni,
    /// A DNS query for a name the rules do not allow (`egress.dns`).
    Dns,
}

/// Which way the client came (`via` of the warn event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    Proxy,
    ProxyConnect,
    Direct,
    Dns,
}

impl Via {
    fn as_str(self) -> &'static str {
        match self {
            Via::Proxy => "proxy",
            Via::ProxyConnect => "proxy CONNECT",
            Via::Direct => "direct",
            Via::Dns => "dns",
        }
    }
}

/// A refusal as the gateway saw it, before its client is looked up: what
/// the de-privileged gateway process ([`child`]) sends the supervisor over
/// the [`channel`]; the supervisor finds the client and reports it
/// ([`Refused::settle`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Refused {
    pub blocker: Blocker,
    pub host: String,
    /// 0 for a DNS query.
    pub port: u16,
    pub via: Via,
    pub reason: String,
    /// The ClientHello's server name (`Sni` only; `None`: it named none).
    pub sni: Option<String>,
    /// The policy line that would permit it (`None`: nothing may).
    pub allow: Option<String>,
    /// The client's address, when it connected over TCP.
    pub peer: Option<SocketAddr>,
}

impl Refused {
    /// The refusal settled: a warn event and the report's entry, with the
    /// client `who` when found.
    ///
    /// Logged like the audit reader's refusals: the first
    /// [`MAX_WARNINGS`] of a supervisor (one container or step),
    /// then one line saying the rest are only in the report. A red team's
    /// 0.5-CPU container wrote 30,000 lines (7 MB) to the engine's log in
    /// 20 s with refused CONNECTs.
    pub fn settle(&self, id: &str, who: Client) -> Denial {
        static LOGGED: AtomicUsize = AtomicUsize::new(0);
        let n = LOGGED.fetch_add(1, Ordering::Relaxed);
        if n == MAX_WARNINGS {
            tracing::warn!(
                id,
                "further egress refusals are not logged one by one; they are in the report"
            );
        }
        self.settled(id, who, n < MAX_WARNINGS)
    }

    fn settled(&self, id: &str, who: Client, log: bool) -> Denial {
        let (host, port, via) = (self.host.as_str(), self.port, self.via.as_str());
        let pid = who.as_ref().map(|w| w.0);
        let comm = who.as_ref().map_or("?", |w| w.1.as_str());
        let (target, blocker) = match self.blocker {
            Blocker::Connect => {
                if log {
                    tracing::warn!(
                        id,
                        host,
                        port,
                        via,
                        pid,
                        comm,
                        allow = self
                            .allow
                            .as_deref()
                            .unwrap_or("nothing may relax this rule"),
                        "egress refused: {}",
                        self.reason
                    );
                }
                (format!("{host}:{port}"), "egress.connect")
            }
            Blocker::Sni => {
                let shown = self.sni.as_deref().unwrap_or("(none)");
                if log {
                    tracing::warn!(
                        id,
                        host,
                        port,
                        pid,
                        comm,
                        sni = shown,
                        via,
                        "egress refused: TLS server name {shown} does not match {host}"
                    );
                }
                (format!("{host}:{port} sni={shown}"), "egress.sni")
            }
            Blocker::Dns => {
                if log {
                    tracing::warn!(id, host, "egress DNS refused: {host}: {}", self.reason);
                }
                (host.to_string(), "egress.dns")
            }
        };
        let (pid, comm, exe) = match who {
            Some((p, c, e)) => (Some(p), Some(c), Some(e)),
            None => (None, None, None),
        };
        Denial {
            kind: "egress".into(),
            target,
            pid,
            comm,
            exe,
            allow: self.allow.clone(),
            count: 1,
            blocker: blocker.into(),
            syscall: None,
        }
    }
}

/// What every connection handler shares.
pub struct Shared {
    pub rules: Egress,
    pub names: Names,
    /// Refusals and warnings go to the supervisor (or unprivileged wrap's
    /// watchdog), which settles them.
    report: channel::Sender,
    /// Connections being served.
    open: AtomicUsize,
}

impl Shared {
    /// A refusal, sent to be settled. Returns once its client was looked
    /// up (or the other side did not answer in time), so call it before
    /// answering the client, which may close its socket at once after.
    fn report(&self, r: Refused) {
        self.report.refused(r);
    }

    /// A warning that is not a refusal.
    fn warn(&self, message: &str) {
        self.report.warn(message);
    }

    /// A connection refused: a warn event and a report entry.
    pub fn refuse(&self, host: &str, port: u16, r: &Refusal, via: Via, peer: Option<SocketAddr>) {
        self.report(Refused {
            blocker: Blocker::Connect,
            host: host.to_string(),
            port,
            via,
            reason: r.reason.clone(),
            sni: None,
            allow: r.allow.clone(),
            peer,
        });
    }

    /// A ClientHello naming another host than the connection was allowed
    /// for (or none).
    pub fn refuse_sni(
        &self,
        host: &str,
        port: u16,
        sni: Option<&str>,
        via: Via,
        peer: Option<SocketAddr>,
    ) {
        self.report(Refused {
            blocker: Blocker::Sni,
            host: host.to_string(),
            port,
            via,
            reason: "the TLS server name does not match".into(),
            sni: sni.map(String::from),
            // The name is the client's: a suggestion only as a parsed rule.
            allow: sni.and_then(|s| upstream::allow_line(s, &[port])),
            peer,
        });
    }

    /// A DNS query for a name the rules do not allow (`name` in the stub's
    /// presentation form, [`dns::Question::name`]).
    pub fn refuse_name(&self, name: &str) {
        let (reason, allow) = if sandboy_spec_gen::policy::valid_host(name) {
            // A query names no port: suggest the policy's allowed ports
            // that no deny rule closes for this name (the ports a step of
            // this policy connects to); none left, no suggestion.
            let ports: Vec<u16> = (self.rules.ports().into_iter())
                .filter(|p| !self.rules.deny.iter().any(|r| r.matches(name, *p)))
                .collect();
            ("not in [net] allow", upstream::allow_line(name, &ports))
        } else {
            ("not a valid host name", None)
        };
        self.report(Refused {
            blocker: Blocker::Dns,
            host: name.to_string(),
            port: 0,
            via: Via::Dns,
            reason: format!("{reason} (NXDOMAIN)"),
            sni: None,
            allow,
            peer: None,
        });
    }
}

/// Serve the gateway's sockets on threads of their own (in the gateway's
/// process, [`child`]); refusals go to `report`.
pub fn start(rules: Egress, listeners: Listeners, report: channel::Sender) {
    let shared = Arc::new(Shared {
        rules,
        names: Names::default(),
        report,
        open: AtomicUsize::new(0),
    });
    let Listeners {
        proxy,
        dns_udp,
        dns_tcp,
        ports,
    } = listeners;
    accept(&shared, proxy, http::serve);
    accept(&shared, dns_tcp, dns::serve_tcp);
    {
        let shared = shared.clone();
        std::thread::spawn(move || dns::serve_udp(&shared, dns_udp));
    }
    for (port, l) in ports {
        accept(&shared, l, move |s, c| direct(s, c, port));
    }
}

/// One thread accepting on `l`, one more per connection.
fn accept(
    shared: &Arc<Shared>,
    l: TcpListener,
    serve: impl Fn(&Shared, TcpStream) + Send + Sync + Copy + 'static,
) {
    let shared = shared.clone();
    std::thread::spawn(move || loop {
        match l.accept() {
            Ok((c, _)) => {
                if shared.open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                    shared.open.fetch_sub(1, Ordering::SeqCst);
                    shared.warn(&format!(
                        "more than {MAX_CONNECTIONS} connections at once; closing the new one"
                    ));
                    continue;
                }
                let _ = c.set_nodelay(true);
                let shared = shared.clone();
                std::thread::spawn(move || {
                    serve(&shared, c);
                    shared.open.fetch_sub(1, Ordering::SeqCst);
                });
            }
            Err(e) if e.raw_os_error() == Some(libc::EMFILE) => {
                std::thread::sleep(std::time::Duration::from_millis(50))
            }
            Err(_) => {}
        }
    });
}

/// A connection to a synthetic address on an allowed port: the name is the
/// one the stub gave that address.
fn direct(shared: &Shared, conn: TcpStream, port: u16) {
    let peer = conn.peer_addr().ok();
    let local = match conn.local_addr() {
        Ok(SocketAddr::V4(a)) => *a.ip(),
        _ => return,
    };
    let Some(host) = shared.names.name(local) else {
        let r = Refusal {
            reason: format!("{local} is not an address the gateway's DNS stub gave out"),
            allow: None,
        };
        return shared.refuse(&local.to_string(), port, &r, Via::Direct, peer);
    };
    let up = match upstream::connect(&shared.rules, &host, port) {
        Ok(u) => u,
        Err(r) => return shared.refuse(&host, port, &r, Via::Direct, peer),
    };
    if let Err(sni) = tunnel::splice(conn, up, Vec::new(), Some(&host)) {
        shared.refuse_sni(&host, port, sni.as_deref(), Via::Direct, peer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp() -> OwnedFd {
        TcpListener::bind("127.0.0.1:0").unwrap().into()
    }
    fn udp() -> OwnedFd {
        UdpSocket::bind("127.0.0.1:0").unwrap().into()
    }

    /// Fds from another process are checked: count and kind per place.
    #[test]
    fn listeners_from_fds_check_count_and_kind() {
        let rules = Egress::default();
        assert!(Listeners::from_fds(&rules, vec![]).is_err());
        assert!(Listeners::from_fds(&rules, vec![udp(), udp(), tcp()]).is_err());
        assert!(Listeners::from_fds(&rules, vec![tcp(), udp(), tcp(), tcp()]).is_err());
        let l = Listeners::from_fds(&rules, vec![tcp(), udp(), tcp()]).unwrap();
        assert_eq!(l.into_fds().len(), 3);
    }
}
