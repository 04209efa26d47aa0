//! The way out: a destination checked against the rules, resolved with the
//! host's resolver (getaddrinfo, so /etc/hosts and nsswitch apply) at
//! connect time, every address checked again, then connected.

use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use sandboy_spec_gen::policy::{valid_host, Egress, HostRule};

/// How long one upstream connect may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a destination was refused, and the policy change that would permit
/// it (`None`: a `deny` rule, which nothing relaxes but removing it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub reason: String,
    pub allow: Option<String>,
}

/// A `host:port` authority split (IPv6 literals in brackets).
pub fn split_authority(authority: &str, default_port: Option<u16>) -> Option<(String, u16)> {
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(':') || h.starts_with('[') => {
            (h, p.parse::<u16>().ok().filter(|p| *p != 0)?)
        }
        _ => (authority, default_port?),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    (!host.is_empty()).then(|| (host.to_ascii_lowercase(), port))
}

pub use sandboy_spec_gen::policy::is_internal;

/// The `allow` line that would permit `host` on `ports`: each rule parsed
/// by [`HostRule::parse`] from the name, so what the container chose never
/// reaches the line as text (a crafted name wrote `"*.attacker.test:443"`
/// or a `[fs]` table into the suggestion). `None` when the name is not a
/// valid host name, or no port is given.
pub fn allow_line(host: &str, ports: &[u16]) -> Option<String> {
    if !valid_host(host) || ports.is_empty() {
        return None;
    }
    let rules = ports
        .iter()
        .map(|p| HostRule::parse(&format!("{host}:{p}")).map(|r| format!("\"{r}\"")))
        .collect::<Result<Vec<_>, _>>()
        .ok()?;
    Some(format!("[net] allow = [{}]", rules.join(", ")))
}

/// The addresses of this host's own interfaces (the gateway's network
/// namespace): as internal as loopback, since a service listening on
/// `0.0.0.0` answers on each (a red team's `0.0.0.0/0` rule reached one
/// through the host's public address).
pub fn own_addresses() -> Vec<IpAddr> {
    nix::ifaddrs::getifaddrs()
        .map(|all| {
            all.filter_map(|i| {
                let a = i.address?;
                a.as_sockaddr_in()
                    .map(|s| IpAddr::V4(s.ip()))
                    .or_else(|| a.as_sockaddr_in6().map(|s| IpAddr::V6(s.ip())))
            })
            .collect()
        })
        .unwrap_or_default()
}

/// Internal to the gateway: [`is_internal`] or one of [`own_addresses`].
fn internal(own: &[IpAddr]) -> impl Fn(IpAddr) -> bool + '_ {
    move |ip| is_internal(ip) || own.contains(&ip.to_canonical())
}

/// Check `host:port` against `rules` and connect to it.
pub fn connect(rules: &Egress, host: &str, port: u16) -> Result<TcpStream, Refusal> {
    let own = own_addresses();
    let internal = internal(&own);
    if let Ok(ip) = host.parse::<IpAddr>() {
        // Dial what was checked: `::ffff:127.0.0.1` is 127.0.0.1.
        let ip = ip.to_canonical();
        if !rules.permits_addr_as(ip, port, &internal) {
            let len = if ip.is_ipv4() { 32 } else { 128 };
            return Err(Refusal {
                reason: format!("IP address {ip} is not covered by [net] allow_cidr"),
                allow: Some(format!("[net] allow_cidr = [\"{ip}/{len}:{port}\"]")),
            });
        }
        return dial(&[SocketAddr::new(ip, port)], host, port);
    }
    // Before any rule or resolver sees it: glibc decodes `\115ecret` to
    // `secret`, which a deny rule compared as text would not match.
    if !valid_host(host) {
        return Err(Refusal {
            reason: format!("{host:?} is not a valid host name (letters, digits, '-', '.')"),
            allow: None,
        });
    }
    if rules.deny.iter().any(|r| r.matches(host, port)) {
        return Err(Refusal {
            reason: format!("{host}:{port} matches [net] deny"),
            allow: None,
        });
    }
    if !rules.permits(host, port) {
        return Err(Refusal {
            reason: format!("{host}:{port} is not in [net] allow"),
            allow: allow_line(host, &[port]),
        });
    }
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| Refusal {
            reason: format!("{host} does not resolve on the host: {e}"),
            allow: None,
        })?
        .collect();
    let (ok, refused): (Vec<SocketAddr>, Vec<SocketAddr>) = addrs
        .into_iter()
        .partition(|a| !internal(a.ip()) || rules.permits_addr_as(a.ip(), port, &internal));
    if ok.is_empty() {
        let ip = refused.first().map(|a| a.ip());
        return Err(Refusal {
            reason: format!(
                "{host} resolves to an internal address ({}) not covered by [net] allow_cidr",
                ip.map_or("none".into(), |i| i.to_string())
            ),
            allow: ip.map(|ip| {
                let len = if ip.is_ipv4() { 32 } else { 128 };
                format!("[net] allow_cidr = [\"{ip}/{len}:{port}\"]")
            }),
        });
    }
    dial(&ok, host, port)
}

fn dial(addrs: &[SocketAddr], host: &str, port: u16) -> Result<TcpStream, Refusal> {
    let mut last = None;
    for a in addrs {
        match TcpStream::connect_timeout(a, CONNECT_TIMEOUT) {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                return Ok(s);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(Refusal {
        reason: format!(
            "{host}:{port} is allowed but unreachable: {}",
            last.map_or("no address".into(), |e| e.to_string())
        ),
        allow: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sandboy_spec_gen::policy::CidrRule;

    #[test]
    fn authorities() {
        assert_eq!(
            split_authority("A.com:443", None),
            Some(("a.com".into(), 443))
        );
        assert_eq!(
            split_authority("a.com", Some(80)),
            Some(("a.com".into(), 80))
        );
        assert_eq!(
            split_authority("[::1]:8080", None),
            Some(("::1".into(), 8080))
        );
        assert_eq!(split_authority("a.com:x", None), None);
        assert_eq!(split_authority("a.com", None), None);
    }

    /// The suggestion is built from a parsed rule, never from the name as
    /// text: a name that is not a host name gets none.
    #[test]
    fn allow_lines_are_parsed_rules() {
        assert_eq!(
            allow_line("Pkg.Example.test.", &[443, 8080]).as_deref(),
            Some("[net] allow = [\"pkg.example.test:443\", \"pkg.example.test:8080\"]")
        );
        for name in [
            "pkg:443\", \"*.attacker.test:443\", \"*.attacker.test",
            "x\n[fs]\nwrite = [\"/\"]\n#",
            "\\115ecret.example.test",
            "*.example.test",
            "10.0.0.1",
        ] {
            assert_eq!(allow_line(name, &[443]), None, "{name:?}");
        }
        assert_eq!(allow_line("pkg.example.test", &[]), None);
    }

    #[test]
    fn escaped_names_are_refused_before_the_rules() {
        let rules = Egress {
            allow: vec![HostRule::parse("*.example.test:8443").unwrap()],
            deny: vec![HostRule::parse("secret.example.test:8443").unwrap()],
            ..Default::default()
        };
        for name in ["\\115ecret.example.test", "\\secret.example.test"] {
            let r = connect(&rules, name, 8443).unwrap_err();
            assert_eq!(r.allow, None, "{name}");
            assert!(r.reason.contains("not a valid host name"), "{r:?}");
        }
        let r = connect(&rules, "SECRET.example.test.", 8443).unwrap_err();
        assert_eq!(r.allow, None);
        assert!(r.reason.contains("deny"), "{r:?}");
    }

    /// The host's own addresses are internal to the gateway: a rule for
    /// the whole address space does not cover them (a red team's
    /// `0.0.0.0/0` reached a service on the host's public address); a
    /// rule naming one does.
    #[test]
    fn the_hosts_own_addresses_are_internal() {
        let own = own_addresses();
        assert!(own.iter().any(|a| a.is_loopback()), "{own:?}");
        let any = Egress {
            allow_cidr: vec![
                CidrRule::parse("0.0.0.0/0:8099").unwrap(),
                CidrRule::parse("[::]/0:8099").unwrap(),
            ],
            ..Egress::default()
        };
        for a in &own {
            assert!(!any.permits_addr_as(*a, 8099, internal(&own)), "{a}");
            let len = if a.is_ipv4() { 32 } else { 128 };
            let named = Egress {
                allow_cidr: vec![CidrRule {
                    addr: *a,
                    prefix: len,
                    port: 8099,
                }],
                ..Egress::default()
            };
            assert!(named.permits_addr_as(*a, 8099, internal(&own)), "{a}");
            // A pod's own rule (marked under a node configuration) never
            // reaches it, though it names it: the host may have acquired
            // the address after the create-time check.
            let pods = Egress {
                outside_only: true,
                ..named
            };
            assert!(!pods.permits_addr_as(*a, 8099, internal(&own)), "{a}");
            let refused = connect(&pods, &a.to_string(), 8099).unwrap_err();
            assert!(refused.reason.contains("not covered"), "{refused:?}");
        }
        // A public address is still covered by the wide rule.
        let public: IpAddr = "93.184.216.34".parse().unwrap();
        assert!(own.contains(&public) || any.permits_addr_as(public, 8099, internal(&own)));
        let pods = Egress {
            outside_only: true,
            ..any
        };
        assert!(own.contains(&public) || pods.permits_addr_as(public, 8099, internal(&own)));
    }

    #[test]
    fn internal_ranges() {
        for a in [
            "127.0.0.1",
            "10.1.1.1",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:10.0.0.1",
            "0.0.0.0",
            "::10.0.0.1",
            "::127.0.0.1",
            "fec0::1",
            "64:ff9b::10.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b:1::1",
            "2002:0a00:0001::1",
            "2002:7f00:1::",
        ] {
            assert!(is_internal(a.parse().unwrap()), "{a}");
        }
        for a in [
            "1.1.1.1",
            "2606:4700::1111",
            "64:ff9b::1.1.1.1",
            "2002:0101:0101::1",
            "::ffff:1.1.1.1",
        ] {
            assert!(!is_internal(a.parse().unwrap()), "{a}");
        }
    }
}
