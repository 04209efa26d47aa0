//! `[net] allow` / `deny` host rules and `allow_cidr` address rules
//! (SPEC §8): parsed and checked here, enforced by the runtime.

use std::net::IpAddr;

/// `[net] allow`, `deny` and `allow_cidr`, as checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Egress {
    pub allow: Vec<HostRule>,
    /// Checked before `allow`.
    pub deny: Vec<HostRule>,
    pub allow_cidr: Vec<CidrRule>,
    /// The rules are a container's own under a node configuration: no
    /// internal address is ever permitted, whatever a rule names, and the
    /// gateway counts the host's addresses *at each dial* as internal (a
    /// rule naming an address the host acquired after create reached it).
    pub outside_only: bool,
}

impl Egress {
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty() && self.allow_cidr.is_empty()
    }

    /// Whether the rules open anything, so the container gets the egress
    /// gateway (`deny` alone opens nothing: no network at all).
    pub fn is_active(&self) -> bool {
        !self.allow.is_empty() || !self.allow_cidr.is_empty()
    }

    /// The allowed ports, sorted and unique: the gateway listens on each.
    pub fn ports(&self) -> Vec<u16> {
        let mut v: Vec<u16> = self.allow.iter().map(|r| r.port).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The HTTP proxy's port inside the container: the first of a few
    /// customary proxy ports that no allowed port (nor the DNS stub) takes.
    pub fn proxy_port(&self) -> u16 {
        let taken = self.ports();
        [3128, 8118, 18128, 28128, 38128]
            .into_iter()
            .find(|p| !taken.contains(p))
            .unwrap_or(48128)
    }

    /// Whether `host:port` may be reached: no `deny` rule covers it and an
    /// `allow` rule does.
    pub fn permits(&self, host: &str, port: u16) -> bool {
        valid_host(host)
            && !self.deny.iter().any(|r| r.matches(host, port))
            && self.allow.iter().any(|r| r.matches(host, port))
    }

    /// Whether `host` is reachable on any port (what the DNS stub answers).
    pub fn permits_name(&self, host: &str) -> bool {
        self.allow.iter().any(|r| self.permits(host, r.port))
    }

    /// Whether `ip:port` is covered by `allow_cidr`. An IPv4-mapped IPv6
    /// address is the IPv4 address it carries (the kernel delivers there),
    /// and a rule for the whole address space (`0.0.0.0/0`, `::/0`) means
    /// the public internet: internal addresses ([`is_internal`]) are
    /// covered only by a narrower rule that names their range. A red
    /// team's `::/0:PORT` reached the host's 127.0.0.1 as
    /// `[::ffff:127.0.0.1]`.
    pub fn permits_addr(&self, ip: IpAddr, port: u16) -> bool {
        self.permits_addr_as(ip, port, is_internal)
    }

    /// [`permits_addr`](Self::permits_addr) with another notion of
    /// internal (the gateway adds the host's own addresses).
    pub fn permits_addr_as(
        &self,
        ip: IpAddr,
        port: u16,
        internal: impl Fn(IpAddr) -> bool,
    ) -> bool {
        let ip = ip.to_canonical();
        self.allow_cidr
            .iter()
            .any(|c| c.matches(ip, port) && ((c.prefix > 0 && !self.outside_only) || !internal(ip)))
    }

    /// The annotation form (rules as written, canonical).
    pub fn to_wire(&self) -> EgressWire {
        EgressWire {
            allow: self.allow.iter().map(HostRule::to_string).collect(),
            deny: self.deny.iter().map(HostRule::to_string).collect(),
            allow_cidr: self.allow_cidr.iter().map(CidrRule::to_string).collect(),
            proxy_port: self.proxy_port(),
            outside_only: self.outside_only,
        }
    }

    /// Rules read back from the annotation, each parsed again (the runtime
    /// trusts no config.json): the first bad entry is the error.
    pub fn from_wire(w: &EgressWire) -> Result<Egress, RuleError> {
        let e = Egress {
            allow: w
                .allow
                .iter()
                .map(|r| HostRule::parse(r))
                .collect::<Result<_, _>>()?,
            deny: w
                .deny
                .iter()
                .map(|r| HostRule::parse(r))
                .collect::<Result<_, _>>()?,
            allow_cidr: w
                .allow_cidr
                .iter()
                .map(|r| CidrRule::parse(r))
                .collect::<Result<_, _>>()?,
            outside_only: w.outside_only,
        };
        if w.proxy_port == 0 || w.proxy_port == 53 || e.ports().contains(&w.proxy_port) {
            return fail(
                format!(
                    "proxy_port {} collides with an allowed port or the DNS stub",
                    w.proxy_port
                ),
                "leave proxy_port as sandboy-spec-gen renders it",
            );
        }
        Ok(e)
    }
}

/// The `dev.sandboy.egress` annotation: the rules as strings and the port
/// of the HTTP proxy the container's environment points at.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EgressWire {
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
    #[serde(default)]
    pub allow_cidr: Vec<String>,
    pub proxy_port: u16,
    /// [`Egress::outside_only`]: set by the runtime on a container's own
    /// rules under a node configuration, never cleared (absent: false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub outside_only: bool,
}

impl std::fmt::Display for HostRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.pattern, self.port)
    }
}

impl std::fmt::Display for CidrRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.addr {
            IpAddr::V4(a) => write!(f, "{a}/{}:{}", self.prefix, self.port),
            IpAddr::V6(a) => write!(f, "[{a}]/{}:{}", self.prefix, self.port),
        }
    }
}

/// `host:port`: an exact host name or a one-label wildcard (`*.crates.io`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostRule {
    /// Lowercased; `*.x.y` or an exact name, without a trailing dot.
    pub pattern: String,
    pub port: u16,
}

/// `addr/prefix:port`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CidrRule {
    /// The network address (no bits set past the prefix).
    pub addr: IpAddr,
    pub prefix: u8,
    pub port: u16,
}

/// Why a rule did not parse: what is wrong, how to fix it, and a likely
/// intended spelling when there is one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RuleError {
    pub message: String,
    pub hint: &'static str,
    pub suggestion: Option<String>,
}

fn fail<T>(message: String, hint: &'static str) -> Result<T, RuleError> {
    Err(RuleError {
        message,
        hint,
        suggestion: None,
    })
}

const HOST_HINT: &str = "write \"host:port\", e.g. \"github.com:443\" or \"*.crates.io:443\"";

/// The port after the last `:` of `text`, and what comes before it.
fn split_port<'t>(text: &'t str, hint: &'static str) -> Result<(&'t str, u16), RuleError> {
    let Some((before, port)) = text.rsplit_once(':') else {
        return fail(format!("{text:?} has no port"), hint);
    };
    if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
        return fail(format!("{text:?} has no valid port after ':'"), hint);
    }
    match port.parse::<u32>() {
        Ok(n @ 1..=65535) => Ok((before, n as u16)),
        _ => fail(
            format!("port {port} in {text:?} is out of range"),
            "ports are 1 to 65535",
        ),
    }
}

impl HostRule {
    /// Parse `host:port` (a port is required; `*.` wildcards only as the
    /// whole leftmost label, with at least two labels after it).
    pub fn parse(text: &str) -> Result<HostRule, RuleError> {
        let (host, port) = split_port(text, HOST_HINT)?;
        let host = host.to_ascii_lowercase();
        let host = host.strip_suffix('.').unwrap_or(&host);
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if bare.parse::<IpAddr>().is_ok() || text.starts_with('[') {
            return Err(RuleError {
                message: format!("{text:?} is an IP address, not a host name"),
                hint: "list addresses in allow_cidr as \"addr/prefix:port\"",
                suggestion: bare.parse::<IpAddr>().ok().map(|ip| {
                    let len = if ip.is_ipv4() { 32 } else { 128 };
                    format!("{ip}/{len}:{port}")
                }),
            });
        }
        let labels: Vec<&str> = host.split('.').collect();
        let (wild, named) = match labels.split_first() {
            Some((&"*", rest)) => (true, rest),
            _ => (false, &labels[..]),
        };
        if named.iter().any(|l| l.contains('*')) {
            return fail(
                format!("wildcard in {text:?} is not the whole leftmost label"),
                "a wildcard stands for exactly one leftmost label: \"*.example.com:443\"",
            );
        }
        if wild && named.len() < 2 {
            return fail(
                format!("wildcard {text:?} is too broad"),
                "leave at least two labels after \"*.\", e.g. \"*.example.com:443\"",
            );
        }
        if let Some(bad) = named.iter().find(|l| !valid_label(l)) {
            return fail(
                format!("{text:?} is not a valid host name (label {bad:?})"),
                "host names are labels of letters, digits and '-' (not at either end), joined by '.'",
            );
        }
        if host.len() > 253 {
            return fail(
                format!("host name in {text:?} is longer than 253 characters"),
                HOST_HINT,
            );
        }
        Ok(HostRule {
            pattern: host.to_string(),
            port,
        })
    }

    /// Whether a connection to `host:port` is covered. Host names compare
    /// case-insensitively, a trailing dot ignored; `*.x.y` covers `a.x.y`
    /// but neither `x.y` nor `a.b.x.y`.
    ///
    /// A host that is not a valid name ([`valid_host`]) matches nothing:
    /// glibc's resolver reads `\115ecret.x` as `secret.x`, so a rule
    /// compared with such a name as text could be passed by an escape.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        if port != self.port || !valid_host(host) {
            return false;
        }
        let host = host.strip_suffix('.').unwrap_or(host);
        match self.pattern.strip_prefix("*.") {
            None => host.eq_ignore_ascii_case(&self.pattern),
            Some(suffix) => {
                host.len() > suffix.len() + 1 && {
                    let (label, rest) = host.split_at(host.len() - suffix.len() - 1);
                    rest.as_bytes()[0] == b'.'
                        && rest[1..].eq_ignore_ascii_case(suffix)
                        && !label.is_empty()
                        && !label.contains('.')
                }
            }
        }
    }
}

/// Whether `host` is a host name the gateway accepts: labels of letters,
/// digits and '-' (not at either end), 1 to 63 bytes each, at most 253
/// bytes in all, one optional trailing dot. The grammar of a rule's
/// labels ([`HostRule::parse`]); checked before any rule is matched or any
/// name resolved, because a resolver decodes what this refuses (glibc
/// reads `\DDD` and `\c` escapes, and a DNS label may hold a '.'), so
/// the name compared would not be the name reached.
pub fn valid_host(host: &str) -> bool {
    let name = host.strip_suffix('.').unwrap_or(host);
    name.len() <= 253 && name.split('.').all(valid_label)
}

fn valid_label(l: &str) -> bool {
    !l.is_empty()
        && l.len() <= 63
        && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !l.starts_with('-')
        && !l.ends_with('-')
}

const CIDR_HINT: &str = "write \"addr/prefix:port\", e.g. \"10.0.0.0/8:5432\" or \"fd00::/8:443\"";

impl CidrRule {
    /// Parse `addr/prefix:port` (IPv6 addresses may be bracketed).
    pub fn parse(text: &str) -> Result<CidrRule, RuleError> {
        let (net, port) = split_port(text, CIDR_HINT)?;
        let Some((addr, prefix)) = net.split_once('/') else {
            return fail(format!("{text:?} has no /prefix"), CIDR_HINT);
        };
        let addr = addr.trim_start_matches('[').trim_end_matches(']');
        let Ok(addr) = addr.parse::<IpAddr>() else {
            return fail(
                format!("{addr:?} in {text:?} is not an IP address"),
                CIDR_HINT,
            );
        };
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix.parse::<u8>() {
            Ok(p) if p <= max && prefix.bytes().all(|b| b.is_ascii_digit()) => p,
            _ => {
                return fail(
                    format!("prefix /{prefix} in {text:?} is not 0 to {max}"),
                    CIDR_HINT,
                )
            }
        };
        if let IpAddr::V6(a) = addr {
            if let Some(v4) = a.to_ipv4_mapped() {
                return Err(RuleError {
                    message: format!("{text:?} is an IPv4-mapped address, matched as the IPv4 address it carries"),
                    hint: "write the IPv4 range",
                    suggestion: Some(format!(
                        "{v4}/{}:{port}",
                        prefix.saturating_sub(96)
                    )),
                });
            }
        }
        let network = mask(addr, prefix);
        if network != addr {
            return Err(RuleError {
                message: format!("{text:?} has address bits set past /{prefix}"),
                hint: "write the network address of the range",
                suggestion: Some(format!("{network}/{prefix}:{port}")),
            });
        }
        Ok(CidrRule { addr, prefix, port })
    }

    /// Whether the rule covers any internal address ([`is_internal`]):
    /// its range lies in one of theirs or holds one's first address (all
    /// of them are aligned ranges, so that is every overlap). A rule for
    /// the whole address space covers none (see [`Egress::permits_addr`]).
    pub fn reaches_internal(&self) -> bool {
        const NETWORKS: &[&str] = &[
            "0.0.0.0",
            "10.0.0.0",
            "100.64.0.0",
            "127.0.0.0",
            "169.254.0.0",
            "172.16.0.0",
            "192.168.0.0",
            "224.0.0.0",
            "240.0.0.0",
            "::",
            "::1",
            "::ffff:0.0.0.0",
            "64:ff9b::",
            "64:ff9b:1::",
            "2002::",
            "fc00::",
            "fe80::",
            "fec0::",
            "ff00::",
        ];
        // Ranges that carry IPv4 addresses: any part of one may carry an
        // internal address (a red team's 2002:8000::/17 held 6to4 forms
        // of 192.168.0.0/16 while its first address carried 128.0.0.0).
        const CARRIERS: &[(&str, u8)] = &[
            ("::", 96),
            ("::ffff:0.0.0.0", 96),
            ("64:ff9b::", 96),
            ("2002::", 16),
        ];
        let within = |net: &str, len: u8| {
            let net: IpAddr = net.parse().expect("a literal address");
            self.addr.is_ipv6() && self.prefix >= len && mask(self.addr, len) == net
        };
        self.prefix > 0
            && (is_internal(self.addr)
                || CARRIERS.iter().any(|(n, l)| within(n, *l))
                || NETWORKS.iter().any(|n| {
                    let n: IpAddr = n.parse().expect("a literal address");
                    n.is_ipv4() == self.addr.is_ipv4() && mask(n, self.prefix) == self.addr
                }))
    }

    /// Whether `ip:port` is covered (an IPv4-mapped address as IPv4).
    pub fn matches(&self, ip: IpAddr, port: u16) -> bool {
        let ip = ip.to_canonical();
        port == self.port
            && ip.is_ipv4() == self.addr.is_ipv4()
            && mask(ip, self.prefix) == self.addr
    }
}

/// Addresses a name must not resolve to unless `allow_cidr` lists them:
/// this host and its networks (a name of an allowed domain pointed at them
/// would reach them).
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => {
            let o = a.octets();
            a.is_loopback()
                || a.is_private()
                || a.is_link_local()
                || a.is_unspecified()
                || a.is_broadcast()
                || a.is_multicast()
                || o[0] == 0
                || (o[0] == 100 && (o[1] & 0xc0) == 64) // 100.64.0.0/10
                || o[0] >= 240
        }
        IpAddr::V6(a) => {
            let s = a.segments();
            // Forms that carry an IPv4 address a gateway or relay on the
            // path may deliver to: mapped (::ffff:a.b.c.d), the deprecated
            // compatible form (::a.b.c.d), NAT64's well-known prefix
            // (64:ff9b::a.b.c.d) and 6to4 (2002:AABB:CCDD::).
            if let Some(v4) = a.to_ipv4() {
                if !a.is_loopback() && !a.is_unspecified() {
                    return is_internal(IpAddr::V4(v4));
                }
            }
            let embedded = |hi: u16, lo: u16| {
                let [h1, h2] = hi.to_be_bytes();
                let [l1, l2] = lo.to_be_bytes();
                is_internal(IpAddr::V4(std::net::Ipv4Addr::new(h1, h2, l1, l2)))
            };
            if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                return embedded(s[6], s[7]);
            }
            if s[0] == 0x2002 {
                return embedded(s[1], s[2]);
            }
            a.is_loopback()
                || a.is_unspecified()
                || a.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local
                || (s[0] & 0xffc0) == 0xfe80 // link local
                || (s[0] & 0xffc0) == 0xfec0 // site local (deprecated)
                || s[..3] == [0x64, 0xff9b, 1] // NAT64 local use (64:ff9b:1::/48)
        }
    }
}

/// `addr` with every bit past `prefix` cleared.
fn mask(addr: IpAddr, prefix: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let bits = u32::from(a);
            let m = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V4((bits & m).into())
        }
        IpAddr::V6(a) => {
            let bits = u128::from(a);
            let m = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V6((bits & m).into())
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn rules_that_reach_internal_addresses() {
        for (rule, internal) in [
            ("127.0.0.0/8:8099", true),
            ("127.0.0.1/32:80", true),
            ("10.1.2.0/24:443", true),
            ("8.0.0.0/5:443", true), // holds 10.0.0.0/8
            ("169.254.169.254/32:80", true),
            ("[fe80::]/64:443", true),
            ("[::]/1:443", true),               // holds ::1
            ("[2002:8000::]/17:443", true),     // 6to4 of 192.168.0.0/16
            ("[64:ff9b::8000:0]/97:443", true), // NAT64 of 169.254.169.254
            ("0.0.0.0/0:443", false),           // the public internet only
            ("[::]/0:443", false),
            ("93.184.216.0/24:443", false),
            ("[2606:2800::]/32:443", false),
        ] {
            let r = CidrRule::parse(rule).unwrap();
            assert_eq!(r.reaches_internal(), internal, "{rule}");
        }
    }

    use super::*;

    #[test]
    fn whole_space_rules_cover_public_addresses_only_and_mapped_ones_are_ipv4() {
        let rules = |r: &[&str]| Egress {
            allow_cidr: r.iter().map(|c| CidrRule::parse(c).unwrap()).collect(),
            ..Default::default()
        };
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let any = rules(&["::/0:443", "0.0.0.0/0:443"]);
        for public in ["2001:db8::1", "93.184.216.34", "::ffff:93.184.216.34"] {
            assert!(any.permits_addr(ip(public), 443), "{public}");
        }
        for internal in [
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "127.0.0.1",
            "10.1.2.3",
            "::1",
            "fd00::1",
        ] {
            assert!(!any.permits_addr(ip(internal), 443), "{internal}");
        }
        // An IPv6 rule never covers an IPv4 destination.
        assert!(!rules(&["::/0:443"]).permits_addr(ip("::ffff:93.184.216.34"), 443));
        // Internal ranges are reachable when a rule names them.
        let named = rules(&["10.0.0.0/8:5432", "127.0.0.1/32:80"]);
        assert!(named.permits_addr(ip("10.1.2.3"), 5432));
        assert!(named.permits_addr(ip("::ffff:127.0.0.1"), 80));
        assert!(!named.permits_addr(ip("10.1.2.3"), 5433));
        let e = CidrRule::parse("::ffff:127.0.0.0/104:80").unwrap_err();
        assert_eq!(
            e.suggestion.as_deref(),
            Some("127.0.0.0/8:80"),
            "{}",
            e.message
        );
    }

    #[test]
    fn host_rules() {
        let r = HostRule::parse("GitHub.com:443").unwrap();
        assert_eq!(r.pattern, "github.com");
        assert!(r.matches("github.com", 443));
        assert!(r.matches("GITHUB.COM.", 443));
        assert!(!r.matches("github.com", 80));
        assert!(!r.matches("api.github.com", 443));
        let w = HostRule::parse("*.crates.io:443").unwrap();
        assert!(w.matches("static.crates.io", 443));
        assert!(!w.matches("crates.io", 443));
        assert!(!w.matches("a.b.crates.io", 443));
        assert!(!w.matches("xcrates.io", 443));
        for bad in [
            "github.com",
            "github.com:",
            "github.com:0",
            "github.com:65536",
            "*:443",
            "*.com:443",
            "a.*.com:443",
            "foo*.example.com:443",
            "1.2.3.4:443",
            "[::1]:443",
            "exa_mple.com:443",
            "-a.com:443",
            "a..com:443",
        ] {
            assert!(HostRule::parse(bad).is_err(), "{bad}");
        }
        let ip = HostRule::parse("10.1.2.3:5432").unwrap_err();
        assert_eq!(ip.suggestion.as_deref(), Some("10.1.2.3/32:5432"));
    }

    /// The one grammar for names asked of the gateway, and rules that
    /// never match a name outside it (an escape glibc would decode).
    #[test]
    fn host_names() {
        let long = |n: usize| "a".repeat(n);
        let at_most = format!("{}.{}.{}.{}", long(63), long(63), long(63), long(61));
        for (name, ok) in [
            ("secret.example.test", true),
            ("SECRET.Example.TEST", true),
            ("secret.example.test.", true),
            ("a-1.b2.c", true),
            ("localhost", true),
            (at_most.as_str(), true),
            (&format!("{at_most}."), true),
            (&format!("{at_most}a"), false),
            (&format!("{}.test", long(63)), true),
            (&format!("{}.test", long(64)), false),
            ("\\115ecret.example.test", false),
            ("\\secret.example.test", false),
            ("secret\\.example.test", false),
            ("secret.example.test..", false),
            (".secret.example.test", false),
            ("a..b", false),
            ("", false),
            (".", false),
            ("-a.test", false),
            ("a-.test", false),
            ("a_b.test", false),
            ("*.example.test", false),
            ("a b.test", false),
            ("a\nb.test", false),
            ("pkg:443\", \"*.attacker.test", false),
            ("é.test", false),
            ("[::1]", false),
        ] {
            assert_eq!(valid_host(name), ok, "{name:?}");
        }
        let rules = Egress {
            allow: vec![HostRule::parse("*.example.test:8443").unwrap()],
            deny: vec![HostRule::parse("secret.example.test:8443").unwrap()],
            ..Default::default()
        };
        assert!(rules.permits("public.example.test", 8443));
        assert!(rules.permits("PUBLIC.example.test.", 8443));
        assert!(!rules.permits("Secret.Example.Test.", 8443));
        for escaped in ["\\115ecret.example.test", "\\secret.example.test"] {
            assert!(!rules.permits(escaped, 8443), "{escaped}");
            assert!(!rules.permits_name(escaped), "{escaped}");
            assert!(!rules.allow[0].matches(escaped, 8443), "{escaped}");
        }
    }

    #[test]
    fn cidr_rules() {
        let r = CidrRule::parse("10.0.0.0/8:5432").unwrap();
        assert_eq!((r.prefix, r.port), (8, 5432));
        assert!(r.matches("10.9.8.7".parse().unwrap(), 5432));
        assert!(!r.matches("11.0.0.1".parse().unwrap(), 5432));
        assert!(!r.matches("10.0.0.1".parse().unwrap(), 22));
        let v6 = CidrRule::parse("[fd00::]/8:443").unwrap();
        assert!(v6.matches("fd12::1".parse().unwrap(), 443));
        assert_eq!(CidrRule::parse("0.0.0.0/0:53").unwrap().prefix, 0);
        for bad in [
            "10.0.0.0/8",
            "10.0.0.0:5432",
            "10.0.0.0/33:1",
            "x/8:1",
            "10.0.0.0/8:0",
        ] {
            assert!(CidrRule::parse(bad).is_err(), "{bad}");
        }
        let e = CidrRule::parse("10.1.0.0/8:5432").unwrap_err();
        assert_eq!(e.suggestion.as_deref(), Some("10.0.0.0/8:5432"));
    }
}
