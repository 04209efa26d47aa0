//! `sandboy-spec-gen explain`: a policy in plain words, for reviewers who
//! do not read TOML or OCI JSON.

use std::fmt::Write as _;

use crate::annotations::{LandlockMode, Scope};
use crate::guards;
use crate::policy::{
    Anchor, Egress, Grant, HostRule, NetNamespace, Policy, SeccompAction, DEFAULT_DENY,
};

/// Landlock ABI that added TCP bind/connect rules.
const ABI_TCP: i32 = 4;
/// Landlock ABI from which sandboy expects UDP port rules (not in any kernel
/// this build knows; `udp = [...]` opens UDP sockets for every port until then).
const ABI_UDP: i32 = 10;

/// What each `[net]` rule enforces on the running kernel, and what not.
fn net_enforcement(o: &mut String, p: &Policy, ports: &dyn Fn(&[u16]) -> String) {
    let _ = writeln!(o, "  enforcement by kernel Landlock ABI:");
    let _ = writeln!(o, "    connect/bind: TCP ports enforced by Landlock from ABI {ABI_TCP} (EACCES; with mode = \"enforce\" an older kernel refuses to start); TCP Fast Open and MPTCP bypass Landlock's hooks, so seccomp guards refuse them");
    if !p.bind.is_empty() {
        let _ = writeln!(o, "    listen() on a socket never bound takes an ephemeral port Landlock does not see; with bind = [] listen is refused, with bind ports it cannot be");
    }
    if guards::net_restricted(p) {
        if p.udp.is_empty() {
            let _ = writeln!(
                o,
                "    UDP sockets: refused (EPERM; add `udp = [53]` to open them, except with allow/allow_cidr)"
            );
        } else {
            let _ = writeln!(o, "    UDP ports {}: UDP sockets opened for EVERY port (seccomp cannot see ports; Landlock has no UDP port rules below ABI {ABI_UDP}, the first that could scope them)", ports(&p.udp));
        }
        let _ = writeln!(o, "    raw, packet, ICMP, SCTP, vsock and exotic-family sockets and netlink other than NETLINK_ROUTE: refused by seccomp; NETLINK_ROUTE stays open (it lists the interfaces of the namespace)");
    } else {
        let _ = writeln!(o, "    Landlock off and no [net] rule on the host network: every socket family, UDP and raw socket works as for the host user");
    }
    if p.unix {
        let _ = writeln!(o, "    unix = true: unprivileged `sandboy wrap` may create UNIX sockets and so connect to any host socket the user can (ssh-agent, D-Bus, docker); Landlock restricts pathname sockets only from ABI 9");
    } else {
        let _ = writeln!(o, "    UNIX sockets under unprivileged `sandboy wrap`: refused (EACCES on socket(AF_UNIX) and on datagram socketpair(AF_UNIX), whose sockets could sendto any path; stream socketpair works), since below Landlock ABI 9 nothing else keeps the step from the user's host sockets; `unix = true` opens them");
    }
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "nothing".to_string()
    } else {
        items.join(", ")
    }
}

/// Plain-text explanation of a checked policy.
pub fn explain(p: &Policy) -> String {
    let mut o = String::new();
    // Writing into a String cannot fail; the results are ignored on purpose.
    let _ = writeln!(o, "Policy \"{}\" ({})", p.name, p.file);
    process(&mut o, p);
    let _ = writeln!(o);
    files(&mut o, p);
    let _ = writeln!(o);
    network(&mut o, p);
    let _ = writeln!(o);
    system_calls(&mut o, p);
    let _ = writeln!(o);
    limits(&mut o, p);
    if !p.ignore.is_empty() {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "Agent context (not a security boundary): tools are asked to ignore {}",
            p.ignore.join(", ")
        );
    }
    // Defence in depth: the loader refuses control characters in paths and
    // patterns, and whatever else came from the policy prints as escapes.
    crate::printable::printable(&o).into_owned()
}

fn process(o: &mut String, p: &Policy) {
    if p.args.is_empty() {
        let _ = writeln!(
            o,
            "Runs: the command given to `sandboy wrap` (or --base's process.args)"
        );
    } else {
        let _ = writeln!(o, "Runs: {}", p.args.join(" "));
    }
    let who = if p.user_set {
        format!("as uid {} gid {}", p.uid, p.gid)
    } else {
        "as uid 0 gid 0 in a container (the default); `sandboy wrap` as root runs it as the sudo caller (SUDO_UID/SUDO_GID) or nobody (65534:65534), never as host root without user = \"0:0\"".to_string()
    };
    let _ = writeln!(
        o,
        "  {who}, in {}, without gaining privileges (no_new_privileges)",
        p.cwd
    );
    let _ = writeln!(o, "  {}", crate::userns::explain(p));
    if p.is_wasm() {
        let _ = writeln!(o, "  as a WebAssembly program (OCI-wasm mode)");
    }
}

/// A list with the relative entries of `grant` appended as written, so a
/// reviewer sees `.` rather than nothing.
fn with_relative(p: &Policy, list: &[String], grant: Grant) -> String {
    let mut items: Vec<String> = list.to_vec();
    for r in p.relative.iter().filter(|r| r.grant == grant) {
        let anchor = match r.anchor {
            Anchor::Cwd => "the working directory",
            Anchor::Home => "the home directory",
        };
        items.push(format!("{} ({anchor} of sandboy wrap)", r.written));
    }
    self::list(&items)
}

fn files(o: &mut String, p: &Policy) {
    let mode = match p.landlock_mode {
        LandlockMode::Enforce => {
            "enforced (the container does not start if the kernel cannot enforce every rule)"
        }
        LandlockMode::BestEffort => {
            "best effort (rules the kernel does not support are skipped with a warning)"
        }
        LandlockMode::Off => "OFF: the file and network rules below are NOT enforced by Landlock",
    };
    let _ = writeln!(o, "Files — Landlock {mode}:");
    let _ = writeln!(
        o,
        "  can read:            {}",
        with_relative(p, &p.read, Grant::Read)
    );
    let _ = writeln!(
        o,
        "  can run programs in: {}",
        with_relative(p, &p.exec, Grant::Exec)
    );
    let _ = writeln!(
        o,
        "  can write/create/delete in: {}",
        with_relative(p, &p.write, Grant::Write)
    );
    let _ = writeln!(o, "  hidden even there:   {}", list(&p.hide));
    let _ = writeln!(
        o,
        "  everything else is denied. The image itself is {}.",
        if p.write.iter().any(|w| w == "/") {
            "writable"
        } else {
            "read-only"
        }
    );
    for m in &p.mounts {
        let _ = writeln!(
            o,
            "  host directory {} appears at {} ({})",
            m.source.display(),
            m.destination,
            if m.read_only() {
                "read-only"
            } else {
                "writable"
            }
        );
    }
}

fn ports(v: &[u16]) -> String {
    if v.is_empty() {
        "none".to_string()
    } else {
        v.iter().map(u16::to_string).collect::<Vec<_>>().join(", ")
    }
}

fn network(o: &mut String, p: &Policy) {
    let _ = writeln!(o, "Network:");
    match p.net_namespace {
        NetNamespace::None => {
            let _ = writeln!(
                o,
                "  own network namespace: only loopback, no outside network"
            );
        }
        NetNamespace::Host => {
            let _ = writeln!(o, "  shares the host's network");
        }
    }
    let _ = writeln!(o, "  may connect to TCP ports: {}", ports(&p.connect));
    if p.egress.is_active() {
        let mut gw = vec![53, p.egress.proxy_port()];
        gw.extend(p.egress.ports());
        gw.sort_unstable();
        gw.dedup();
        let _ = writeln!(
            o,
            "    and, inside its namespace, the egress gateway's: {}",
            ports(&gw)
        );
    }
    let _ = writeln!(o, "  may listen on TCP ports:  {}", ports(&p.bind));
    if !p.udp.is_empty() {
        let _ = writeln!(o, "  may use UDP ports:        {}", ports(&p.udp));
    }
    net_enforcement(o, p, &ports);
    egress(o, &p.egress);
    if p.scope.contains(&Scope::AbstractUnixSocket) {
        let _ = writeln!(
            o,
            "  cannot reach abstract unix sockets outside the sandbox"
        );
    }
    if p.scope.contains(&Scope::Signal) {
        let _ = writeln!(o, "  cannot send signals to processes outside the sandbox");
    }
}

fn egress(o: &mut String, e: &Egress) {
    let hosts = |rules: &[HostRule]| {
        let v: Vec<String> = rules
            .iter()
            .map(|r| format!("{}:{}", r.pattern, r.port))
            .collect();
        list(&v)
    };
    if !e.deny.is_empty() {
        let _ = writeln!(o, "  never reaches (checked first): {}", hosts(&e.deny));
    }
    if !e.allow.is_empty() {
        let _ = writeln!(o, "  may reach hosts: {}", hosts(&e.allow));
    }
    if !e.allow_cidr.is_empty() {
        let v: Vec<String> = e
            .allow_cidr
            .iter()
            .map(|c| format!("{}/{} port {}", c.addr, c.prefix, c.port))
            .collect();
        let _ = writeln!(o, "  may reach addresses: {}", list(&v));
    }
    if e.is_active() {
        let _ = writeln!(o, "    host rules: enforced by sandboy's egress gateway (docs/egress.md): own network namespace with only loopback; an HTTP proxy on 127.0.0.1:{} (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY set), a DNS stub on 127.0.0.53 giving each allowed name a synthetic 127.x.y.z, served from outside by the container's supervisor (unprivileged `sandboy wrap`: by wrap itself, namespaces tier only; the landlock tier refuses the rules under enforce)", e.proxy_port());
        let _ = writeln!(o, "    refused (403, NXDOMAIN or a closed connection; warned and reported): unlisted names and ports, IP literals outside allow_cidr, names resolving to loopback/private/link-local addresses outside allow_cidr, TLS whose server name is not the allowed host");
        let _ = writeln!(o, "    DNS goes over TCP (resolv.conf `options use-vc`); UDP sockets fail with EPERM (`udp` cannot be set with allow/allow_cidr), so a resolver that only speaks UDP (musl, busybox) resolves nothing, and proxy-unaware clients without the libc resolver reach nothing");
    }
}

fn system_calls(o: &mut String, p: &Policy) {
    let action = match p.action {
        SeccompAction::Errno => "fail with EPERM",
        SeccompAction::Kill => "kill the process",
        SeccompAction::Log => "are only logged (NOT blocked)",
    };
    let (guarded, names): (Vec<String>, Vec<String>) = p
        .deny
        .iter()
        .cloned()
        .partition(|d| guards::find(d).is_some());
    let _ = writeln!(o, "System calls: {} denied calls {action}:", names.len());
    let _ = writeln!(o, "  {}", list(&names));
    for g in guards::GUARDS {
        if !guarded.iter().any(|n| n == g.name) {
            continue;
        }
        if g.kind == guards::Kind::Net && !guards::net_restricted(p) {
            continue;
        }
        let _ = writeln!(o, "  guard {}: {}", g.name, g.what);
    }
    if !p.default_deny {
        let _ = writeln!(o, "  (the built-in deny list is switched off)");
        return;
    }
    let removed: Vec<String> = DEFAULT_DENY
        .iter()
        .copied()
        .chain(guards::names(guards::Kind::Syscall))
        .filter(|d| !p.deny.iter().any(|x| x == *d))
        .map(|d| d.to_string())
        .collect();
    if !removed.is_empty() {
        let _ = writeln!(
            o,
            "  allowed back from the built-in list: {}",
            list(&removed)
        );
    }
}

fn limits(o: &mut String, p: &Policy) {
    let or = |v: Option<String>, none: &str| v.unwrap_or_else(|| none.to_string());
    let _ = writeln!(o, "Limits:");
    let _ = writeln!(
        o,
        "  memory: {}",
        or(p.memory.map(|m| m.to_string()), "unlimited")
    );
    let _ = writeln!(
        o,
        "  processes/threads: {}",
        or(p.pids.map(|n| n.to_string()), "unlimited")
    );
    let _ = writeln!(
        o,
        "  CPUs: {}",
        or(p.cpus.map(|n| n.to_string()), "unlimited")
    );
    let _ = writeln!(o, "  open files: {}", p.nofile.unwrap_or(1024));
    let _ = writeln!(
        o,
        "  wall clock: {}",
        or(
            p.timeout
                .map(|t| format!("{t}, then the whole container is killed")),
            "no timeout"
        )
    );
    let default = |set: bool| if set { "" } else { " (default)" };
    let _ = writeln!(
        o,
        "  writable storage: {}{} and {} files and directories{} per write path; beyond that the step gets ENOSPC",
        p.disk_cap(),
        default(p.disk.is_some()),
        p.inode_cap(),
        default(p.inodes.is_some()),
    );
    let _ = writeln!(
        o,
        "    (a tmpfs of that size for container-own paths; `sandboy wrap` stages host write paths on one and commits them only when the step exits 0; host [[mount]] binds and wrap's landlock tier are not capped)"
    );
    if let Some(w) = &p.wasm {
        let f = |v: Option<String>| v.unwrap_or_else(|| "runtime default".into());
        let _ = writeln!(
            o,
            "  WebAssembly: fuel {}, deadline {}, memory {}, input {}, output {}, results {}",
            f(w.fuel.map(|n| n.to_string())),
            f(w.deadline.map(|d| d.to_string())),
            f(w.memory.map(|m| m.to_string())),
            f(w.max_input.map(|m| m.to_string())),
            f(w.max_output.map(|m| m.to_string())),
            f(w.max_results.map(|n| n.to_string()))
        );
    }
}
