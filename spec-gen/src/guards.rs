//! Seccomp *guards*: named groups of argument-conditioned rules that close
//! the ways around a policy which a plain deny list of syscall names cannot
//! (issue 14): namespaces through `clone` flags, setuid/setgid modes,
//! executable memfds, TCP Fast Open and MPTCP around Landlock's TCP hooks,
//! `listen` on an unbound socket, and socket families or types no `[net]`
//! rule covers.
//!
//! A guard is named like a syscall in `[syscalls]`: the *syscall* guards
//! are part of the built-in deny list (`default_deny = true`), the
//! *network* guards are on whenever the network is restricted (always, but
//! with Landlock off on the host network and no `[net]` rule), whatever
//! `default_deny` says. Either kind
//! is removed with `[syscalls] allow = ["<guard>"]` and added with
//! `[syscalls] deny = ["<guard>"]`; UDP is opened by `[net] udp = [ports]`.
//!
//! Seccomp compares the raw 64-bit register, but the kernel reads `int`
//! arguments (socket family, type, protocol, setsockopt level and name) as
//! 32 bits: those are compared under a `0xffffffff` mask, so garbage in the
//! upper half cannot slip a value past a rule. Flag and mode bits are
//! compared one bit per rule (`SCMP_CMP_MASKED_EQ`), the only way seccomp
//! can test "any of these bits".

use oci_spec::runtime::{
    LinuxSeccompAction, LinuxSeccompArg, LinuxSeccompArgBuilder, LinuxSeccompOperator, LinuxSyscall,
};

use crate::annotations::LandlockMode;
use crate::policy::{NetNamespace, Policy, SeccompAction};

/// When a guard applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Part of the built-in deny list (`default_deny = true`).
    Syscall,
    /// On whenever the network is restricted ([`net_restricted`]).
    Net,
}

/// One guard: its name (as written in `[syscalls]`), kind and a sentence
/// for `explain`.
#[derive(Debug, Clone, Copy)]
pub struct Guard {
    pub name: &'static str,
    pub kind: Kind,
    pub what: &'static str,
}

/// Every guard, by name.
pub const GUARDS: &[Guard] = &[
    Guard {
        name: "clone-namespaces",
        kind: Kind::Syscall,
        what: "clone with a CLONE_NEW* flag is refused and clone3 fails with ENOSYS (libc falls back to clone): no new namespaces",
    },
    Guard {
        name: "setuid-modes",
        kind: Kind::Syscall,
        what: "chmod/fchmod/fchmodat/fchmodat2 and the create modes of open/openat/creat/mknod/mknodat with S_ISUID or S_ISGID are refused; openat2 fails with ENOSYS (libc falls back to openat)",
    },
    Guard {
        name: "memfd-exec",
        kind: Kind::Syscall,
        what: "memfd_create with MFD_EXEC is refused",
    },
    Guard {
        name: "tty-inject",
        kind: Kind::Syscall,
        what: "ioctl TIOCSTI (push bytes into a terminal's input) and TIOCLINUX (console paste and control) fail with EPERM: a step holding the caller's terminal cannot type commands into the shell that runs after it (CVE-2017-5226 class)",
    },
    Guard {
        name: "tcp-fastopen",
        kind: Kind::Net,
        what: "MSG_FASTOPEN in sendto/sendmsg/sendmmsg fails with EOPNOTSUPP, setsockopt TCP_FASTOPEN/TCP_FASTOPEN_CONNECT with ENOPROTOOPT (Landlock's TCP connect hook does not see a Fast Open connect)",
    },
    Guard {
        name: "mptcp",
        kind: Kind::Net,
        what: "IPPROTO_MPTCP sockets fail with EPROTONOSUPPORT (programs fall back to TCP, which Landlock checks)",
    },
    Guard {
        name: "unbound-listen",
        kind: Kind::Net,
        what: "with bind = [], listen() fails with EACCES for every socket (an unbound socket's listen takes an ephemeral port Landlock never sees; UNIX socket servers are refused too)",
    },
    Guard {
        name: "socket-raw",
        kind: Kind::Net,
        what: "SOCK_RAW and SOCK_PACKET sockets in AF_INET/AF_INET6 and ICMP datagram (ping) sockets fail with EPERM",
    },
    Guard {
        name: "socket-sctp",
        kind: Kind::Net,
        what: "SCTP sockets (IPPROTO_SCTP, SOCK_SEQPACKET in AF_INET/AF_INET6) fail with EPERM",
    },
    Guard {
        name: "socket-netlink",
        kind: Kind::Net,
        what: "netlink sockets other than NETLINK_ROUTE (sock_diag, netfilter, audit, …) fail with EPERM; NETLINK_ROUTE stays open for getaddrinfo and ip",
    },
    Guard {
        name: "socket-families",
        kind: Kind::Net,
        what: "address families other than AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK (AF_PACKET, AF_VSOCK — not network-namespaced —, AF_BLUETOOTH, AF_CAN, AF_ALG, AF_XDP, …) fail with EPERM",
    },
];

/// The guard called `name`, if any.
pub fn find(name: &str) -> Option<&'static Guard> {
    GUARDS.iter().find(|g| g.name == name)
}

/// Names of the guards of one kind.
pub fn names(kind: Kind) -> impl Iterator<Item = &'static str> {
    GUARDS
        .iter()
        .filter(move |g| g.kind == kind)
        .map(|g| g.name)
}

/// Whether the policy restricts the network (and so gets the network
/// guards). It does whenever Landlock restricts TCP, which is always but
/// with `[landlock] mode = "off"`: TCP `connect`/`bind` with no port listed
/// mean none, and a Fast Open or MPTCP connect, UDP, vsock or sock_diag
/// would otherwise reach what that refuses. On the host network a
/// "no `[net]` rule" policy once meant "unrestricted" here while Landlock
/// refused TCP (a red team's MPTCP connect went through, issue 14); and
/// wrap's landlock tier, which has no network namespace of its own, runs
/// a `namespace = "none"` policy on the host network, so the namespace is
/// no sign either. With Landlock off, an own namespace or any rule still
/// restricts.
pub fn net_restricted(p: &Policy) -> bool {
    p.landlock_mode != LandlockMode::Off
        || p.net_namespace == NetNamespace::None
        || !p.connect.is_empty()
        || !p.bind.is_empty()
        || !p.udp.is_empty()
        || p.egress.is_active()
}

// Kernel ABI constants (include/uapi); the same on x86_64 and aarch64.
const CLONE_NEW: &[u64] = &[
    0x0002_0000, // CLONE_NEWNS
    0x0200_0000, // CLONE_NEWCGROUP
    0x0400_0000, // CLONE_NEWUTS
    0x0800_0000, // CLONE_NEWIPC
    0x1000_0000, // CLONE_NEWUSER
    0x2000_0000, // CLONE_NEWPID
    0x4000_0000, // CLONE_NEWNET
];
const CLONE_THREAD: u64 = 0x10000;
const S_ISUID: u64 = 0o4000;
const S_ISGID: u64 = 0o2000;
const MFD_EXEC: u64 = 0x10;
const TIOCSTI: u64 = 0x5412;
const TIOCLINUX: u64 = 0x541c;
const MSG_FASTOPEN: u64 = 0x2000_0000;
const IPPROTO_TCP: u64 = 6;
const TCP_FASTOPEN: u64 = 23;
const TCP_FASTOPEN_CONNECT: u64 = 30;
const IPPROTO_ICMP: u64 = 1;
const IPPROTO_ICMPV6: u64 = 58;
const IPPROTO_SCTP: u64 = 132;
const IPPROTO_MPTCP: u64 = 262;
const AF_UNIX: u64 = 1;
const AF_INET: u64 = 2;
const AF_INET6: u64 = 10;
const AF_NETLINK: u64 = 16;
const NETLINK_ROUTE: u64 = 0;
const SOCK_TYPE_MASK: u64 = 0xf; // strips SOCK_NONBLOCK | SOCK_CLOEXEC
const SOCK_DGRAM: u64 = 2;
const SOCK_RAW: u64 = 3;
const SOCK_SEQPACKET: u64 = 5;
const SOCK_PACKET: u64 = 10;
const INT: u64 = 0xffff_ffff;

const EPERM: u32 = 1;
const EACCES: u32 = 13;
/// What a refused socket(2) returns: EPERM, the kernel's own answer for
/// a socket a process may not open (SOCK_RAW without CAP_NET_RAW,
/// AF_PACKET), and what issue 17 promises for UDP, ICMP and raw sockets
/// under `[net] allow` (`[syscalls] action = "log"` only logs).
const SOCKET_ERRNO: u32 = EPERM;
const ENOSYS: u32 = 38;
const ENOPROTOOPT: u32 = 92;
const EPROTONOSUPPORT: u32 = 93;
const EOPNOTSUPP: u32 = 95;

/// `(arg[index] & mask) == value`.
fn masked(index: usize, mask: u64, value: u64) -> LinuxSeccompArg {
    LinuxSeccompArgBuilder::default()
        .index(index)
        .value(mask)
        .value_two(value)
        .op(LinuxSeccompOperator::ScmpCmpMaskedEq)
        .build()
        .expect("all fields set")
}

/// `arg[index] op value` (full 64 bits).
fn cmp(index: usize, op: LinuxSeccompOperator, value: u64) -> LinuxSeccompArg {
    LinuxSeccompArgBuilder::default()
        .index(index)
        .value(value)
        .op(op)
        .build()
        .expect("all fields set")
}

/// The verdict of a guard rule: `log` policies only log; otherwise the
/// rule's errno (`None`: the policy's own action, EPERM or kill).
#[derive(Clone, Copy)]
struct Verdict {
    action: SeccompAction,
    errno: Option<u32>,
}

fn rule(names: &[&str], v: Verdict, args: Vec<LinuxSeccompArg>) -> LinuxSyscall {
    let mut r = LinuxSyscall::default();
    r.set_names(names.iter().map(|s| s.to_string()).collect());
    match (v.action, v.errno) {
        (SeccompAction::Log, _) => {
            r.set_action(LinuxSeccompAction::ScmpActLog);
        }
        (SeccompAction::Kill, None) => {
            r.set_action(LinuxSeccompAction::ScmpActKillProcess);
        }
        (SeccompAction::Errno, None) => {
            r.set_action(LinuxSeccompAction::ScmpActErrno);
            r.set_errno_ret(Some(EPERM));
        }
        (_, Some(e)) => {
            r.set_action(LinuxSeccompAction::ScmpActErrno);
            r.set_errno_ret(Some(e));
        }
    }
    if !args.is_empty() {
        r.set_args(Some(args));
    }
    r
}

/// One rule per bit: `syscall(arg[index] has bit)`.
fn per_bit(out: &mut Vec<LinuxSyscall>, name: &str, index: usize, bits: &[u64], v: Verdict) {
    for &b in bits {
        out.push(rule(&[name], v, vec![masked(index, b, b)]));
    }
}

/// `socket(AF_UNIX, …)` and `socketpair(AF_UNIX, SOCK_DGRAM, …)` fail with
/// EACCES, for processes on the host's filesystem, where pathname UNIX
/// sockets of the user or of root (ssh-agent, D-Bus, an engine's API,
/// journald's `/dev/log`, `$NOTIFY_SOCKET`) answer any process that may
/// connect: Landlock restricts them only from ABI 9 and seccomp cannot see
/// a connect's or a `sendto`'s address. A datagram pair is unbound but not
/// bound to its peer: `sendto` or `connect` with a path reach any datagram
/// socket (a red team wrote to journald so). Stream and seqpacket pairs
/// stay: their sockets are connected for good (`connect` is `EISCONN`).
/// Unprivileged `wrap` adds these unless `[net] unix = true`; the egress
/// gateway's own process always.
pub fn unix_sockets() -> Vec<LinuxSyscall> {
    let v = Verdict {
        action: SeccompAction::Errno,
        errno: Some(EACCES),
    };
    vec![
        rule(&["socket"], v, vec![masked(0, INT, AF_UNIX)]),
        // The type's low bits; SOCK_NONBLOCK and SOCK_CLOEXEC sit above.
        rule(
            &["socketpair"],
            v,
            vec![
                masked(0, INT, AF_UNIX),
                masked(1, SOCK_TYPE_MASK, SOCK_DGRAM),
            ],
        ),
    ]
}

/// `fork`, `vfork` and a `clone` without `CLONE_THREAD` fail with EPERM,
/// `clone3` with ENOSYS (libc falls back to `clone`, whose flags seccomp
/// can read): threads, never a new process. For a process whose tasks
/// `RLIMIT_NPROC` cannot bound on its own, because on the host it counts
/// every task of the user (unprivileged `adapt`'s wasm host in wrap's
/// landlock tier: a user with more tasks than `[limits] pids` could not
/// start it at all).
pub fn threads_only() -> Vec<LinuxSyscall> {
    let v = |errno| Verdict {
        action: SeccompAction::Errno,
        errno: Some(errno),
    };
    vec![
        rule(&["fork", "vfork"], v(EPERM), vec![]),
        rule(&["clone"], v(EPERM), vec![masked(0, CLONE_THREAD, 0)]),
        rule(&["clone3"], v(ENOSYS), vec![]),
    ]
}

/// `seccomp(SECCOMP_SET_MODE_FILTER, …NEW_LISTENER…)` fails with EBUSY,
/// for processes whose runtime decides some of their calls through a
/// listener of its own (unprivileged `wrap`'s landlock tier, the metadata
/// guard). The kernel allows one listener per filter chain, so while the
/// runtime's is attached the call gets EBUSY anyway; but once it is gone
/// (the watchdog killed from outside, leaving a background process of the
/// step orphaned) the runtime's filter notifies nobody, and when two
/// filters both notify the kernel asks the newest one's listener: the
/// step's own, which answers CONTINUE and the call runs undecided (a
/// `chmod 644` of a secret outside every write path). With this rule the
/// orphan's notified calls fail (ENOSYS) instead. Filters without a
/// listener (sandboxes nested in the step) still install.
pub fn own_listeners() -> Vec<LinuxSyscall> {
    const EBUSY: u32 = 16;
    const SECCOMP_SET_MODE_FILTER: u64 = 1;
    const SECCOMP_FILTER_FLAG_NEW_LISTENER: u64 = 1 << 3;
    let v = Verdict {
        action: SeccompAction::Errno,
        errno: Some(EBUSY),
    };
    vec![rule(
        &["seccomp"],
        v,
        vec![
            masked(0, INT, SECCOMP_SET_MODE_FILTER),
            masked(
                1,
                SECCOMP_FILTER_FLAG_NEW_LISTENER,
                SECCOMP_FILTER_FLAG_NEW_LISTENER,
            ),
        ],
    )]
}

/// File attribute ioctls refused with EPERM where the host's files are
/// not read-only underneath the step (unprivileged `wrap`'s landlock
/// tier): Landlock checks no ioctl on regular files, so `chattr` of a file
/// the policy lists read-only set `+A +S +d` (a red team), and the
/// metadata guard sees only the `chmod` family. `FS_IOC_SETFLAGS` (and its
/// 32-bit form), `FS_IOC_FSSETXATTR` and `FS_IOC_SETVERSION` (both forms);
/// reading them (`lsattr`) stays. In a write path too: the step cannot set
/// `+C` (no copy-on-write) or `+c` there either, which programs treat as
/// optional. `file_setattr` (Linux 6.17) sets the same flags by path, with
/// no ioctl at all (a red team's `+S +A +d` on `~/.ssh/id_ed25519`).
pub fn file_attributes() -> Vec<LinuxSyscall> {
    let v = Verdict {
        action: SeccompAction::Errno,
        errno: Some(EPERM),
    };
    std::iter::once(rule(&["file_setattr"], v, vec![]))
        .chain(
            [
                0x4008_6602u64, // FS_IOC_SETFLAGS
                0x4004_6602,    // FS_IOC32_SETFLAGS
                0x401c_5820,    // FS_IOC_FSSETXATTR
                0x4008_7602,    // FS_IOC_SETVERSION
                0x4004_7602,    // FS_IOC32_SETVERSION
            ]
            .into_iter()
            .map(|request| rule(&["ioctl"], v, vec![masked(1, INT, request)])),
        )
        .collect()
}

/// The rules that keep a step which shares the host's pid and IPC
/// namespaces (unprivileged `wrap`'s landlock tier) away from the user's
/// other processes, where Landlock's scopes (signals, abstract sockets,
/// ptrace) do not reach: each fails with EPERM.
///
/// * System V IPC (`shmget`/`shmat`/`shmctl`, `msg*`, `sem*`): without an
///   IPC namespace a step could attach, read and rewrite the user's
///   segments, queues and semaphores outside the sandbox (ids are small
///   integers: `shmat` needs no `shmget`), and leave segments behind that
///   outlive it and its memory limit. `shmdt` stays (it only detaches).
/// * POSIX message queues (`mq_*`): they live in the user's IPC namespace,
///   not in a path Landlock checks on every call (`mq_unlink` removed
///   another process's queue; a refused `mq_open(O_CREAT)` left the queue
///   behind for a name squat).
/// * Calls that act on another process by pid with no ptrace or signal
///   check an LSM scope sees: `prlimit64` (an `RLIMIT_CPU` of 1 s on the
///   watchdog killed it and lost the timeout; `RLIMIT_FSIZE` 0 kills any
///   writer), `setpriority`, `ioprio_set`, `sched_setaffinity`,
///   `sched_setscheduler`, `sched_setparam` and `sched_setattr` are allowed
///   only on the caller itself (pid or `who` 0; for `setpriority` and
///   `ioprio_set` also only `PRIO_PROCESS`/`IOPRIO_WHO_PROCESS`, since `who`
///   0 with a user or group means all of them). glibc's `setrlimit`, `nice`
///   and `sched_setaffinity(0, …)` keep working; setting another thread's
///   affinity by tid does not.
pub fn host_processes() -> Vec<LinuxSyscall> {
    let v = Verdict {
        action: SeccompAction::Errno,
        errno: Some(EPERM),
    };
    let ne = |index: usize, value: u64| cmp(index, LinuxSeccompOperator::ScmpCmpNe, value);
    const IOPRIO_WHO_PROCESS: u64 = 1;
    let mut out = vec![rule(
        &[
            "shmget",
            "shmat",
            "shmctl",
            "msgget",
            "msgsnd",
            "msgrcv",
            "msgctl",
            "semget",
            "semop",
            "semtimedop",
            "semctl",
            // POSIX message queues: `mq_open` makes the queue before
            // Landlock refuses the open (a refused step still squats a
            // name the user's service later opens), and `mq_unlink`
            // never asks Landlock at all.
            "mq_open",
            "mq_unlink",
            "mq_timedsend",
            "mq_timedreceive",
            "mq_notify",
            "mq_getsetattr",
        ],
        v,
        vec![],
    )];
    for name in [
        "prlimit64",
        "sched_setaffinity",
        "sched_setscheduler",
        "sched_setparam",
        "sched_setattr",
    ] {
        out.push(rule(&[name], v, vec![ne(0, 0)]));
    }
    // PRIO_PROCESS is 0.
    out.push(rule(&["setpriority"], v, vec![ne(0, 0)]));
    out.push(rule(&["setpriority"], v, vec![ne(1, 0)]));
    out.push(rule(&["ioprio_set"], v, vec![ne(0, IOPRIO_WHO_PROCESS)]));
    out.push(rule(&["ioprio_set"], v, vec![ne(1, 0)]));
    out
}

/// The seccomp rules of the guards a policy has on, in [`GUARDS`] order.
pub fn rules(p: &Policy) -> Vec<LinuxSyscall> {
    let net = net_restricted(p);
    let mut out = Vec::new();
    for g in GUARDS {
        if !p.deny.iter().any(|d| d == g.name) || (g.kind == Kind::Net && !net) {
            continue;
        }
        push_guard(&mut out, g.name, p.action, p.bind.is_empty());
    }
    // UDP: opened by `[net] udp`; seccomp cannot see ports, so a listed
    // port opens UDP sockets for every port (see explain).
    if net && p.udp.is_empty() {
        push_udp(&mut out, p.action);
    }
    out
}

/// The guards the runtime installs, as a filter of its own, in every
/// container with the `dev.sandboy.egress` annotation, whatever the
/// spec's profile says (an engine's default profile allows UDP and raw
/// sockets): with the egress gateway the only way out, UDP (the stub's
/// included: DNS goes over TCP), ICMP, raw, packet, SCTP and other
/// families' sockets fail with EPERM (issue 17).
pub const EGRESS: &[&str] = &["socket-raw", "socket-sctp", "socket-families"];

/// The rules of [`EGRESS`] and UDP's, each failing with EPERM.
pub fn egress() -> Vec<LinuxSyscall> {
    let mut out = Vec::new();
    for name in EGRESS {
        push_guard(&mut out, name, SeccompAction::Errno, false);
    }
    push_udp(&mut out, SeccompAction::Errno);
    out
}

/// UDP sockets (AF_INET, AF_INET6) refused with EPERM.
fn push_udp(out: &mut Vec<LinuxSyscall>, action: SeccompAction) {
    let v = Verdict {
        action,
        errno: Some(SOCKET_ERRNO),
    };
    for fam in [AF_INET, AF_INET6] {
        out.push(rule(
            &["socket"],
            v,
            vec![masked(0, INT, fam), masked(1, SOCK_TYPE_MASK, SOCK_DGRAM)],
        ));
    }
}

/// The rules of guard `name` with the policy's `action` (`bind_empty`:
/// the policy opens no TCP bind port).
fn push_guard(out: &mut Vec<LinuxSyscall>, name: &str, action: SeccompAction, bind_empty: bool) {
    let own = Verdict {
        action,
        errno: None,
    };
    let fixed = |e: u32| Verdict {
        action,
        errno: Some(e),
    };
    match name {
        "clone-namespaces" => {
            per_bit(out, "clone", 0, CLONE_NEW, own);
            out.push(rule(&["clone3"], fixed(ENOSYS), vec![]));
        }
        "setuid-modes" => {
            let bits = [S_ISUID, S_ISGID];
            for (name, index) in [
                ("chmod", 1),
                ("fchmod", 1),
                ("fchmodat", 2),
                ("fchmodat2", 2),
                ("creat", 1),
                ("open", 2),
                ("openat", 3),
                ("mknod", 1),
                ("mknodat", 2),
            ] {
                per_bit(out, name, index, &bits, own);
            }
            out.push(rule(&["openat2"], fixed(ENOSYS), vec![]));
        }
        "memfd-exec" => per_bit(out, "memfd_create", 1, &[MFD_EXEC], own),
        // The request is an `unsigned int`: compared under the 32-bit
        // mask, so high garbage cannot hide it (CVE-2019-10063).
        "tty-inject" => {
            for request in [TIOCSTI, TIOCLINUX] {
                out.push(rule(
                    &["ioctl"],
                    fixed(EPERM),
                    vec![masked(1, INT, request)],
                ));
            }
        }
        "tcp-fastopen" => {
            let v = fixed(EOPNOTSUPP);
            per_bit(out, "sendto", 3, &[MSG_FASTOPEN], v);
            per_bit(out, "sendmsg", 2, &[MSG_FASTOPEN], v);
            per_bit(out, "sendmmsg", 3, &[MSG_FASTOPEN], v);
            for opt in [TCP_FASTOPEN, TCP_FASTOPEN_CONNECT] {
                out.push(rule(
                    &["setsockopt"],
                    fixed(ENOPROTOOPT),
                    vec![masked(1, INT, IPPROTO_TCP), masked(2, INT, opt)],
                ));
            }
        }
        "mptcp" => out.push(rule(
            &["socket"],
            fixed(EPROTONOSUPPORT),
            vec![masked(2, INT, IPPROTO_MPTCP)],
        )),
        "unbound-listen" if bind_empty => {
            out.push(rule(&["listen"], fixed(EACCES), vec![]));
        }
        "unbound-listen" => {}
        "socket-raw" => {
            let v = fixed(SOCKET_ERRNO);
            // Only in the inet families: netlink sockets are SOCK_RAW
            // too, and AF_PACKET is refused with the exotic families.
            for fam in [AF_INET, AF_INET6] {
                for t in [SOCK_RAW, SOCK_PACKET] {
                    out.push(rule(
                        &["socket"],
                        v,
                        vec![masked(0, INT, fam), masked(1, SOCK_TYPE_MASK, t)],
                    ));
                }
            }
            for (fam, proto) in [(AF_INET, IPPROTO_ICMP), (AF_INET6, IPPROTO_ICMPV6)] {
                out.push(rule(
                    &["socket"],
                    v,
                    vec![
                        masked(0, INT, fam),
                        masked(1, SOCK_TYPE_MASK, SOCK_DGRAM),
                        masked(2, INT, proto),
                    ],
                ));
            }
        }
        "socket-sctp" => {
            let v = fixed(SOCKET_ERRNO);
            for fam in [AF_INET, AF_INET6] {
                out.push(rule(
                    &["socket"],
                    v,
                    vec![masked(0, INT, fam), masked(2, INT, IPPROTO_SCTP)],
                ));
                out.push(rule(
                    &["socket"],
                    v,
                    vec![
                        masked(0, INT, fam),
                        masked(1, SOCK_TYPE_MASK, SOCK_SEQPACKET),
                    ],
                ));
            }
        }
        "socket-netlink" => out.push(rule(
            &["socket"],
            fixed(SOCKET_ERRNO),
            vec![
                masked(0, INT, AF_NETLINK),
                cmp(2, LinuxSeccompOperator::ScmpCmpNe, NETLINK_ROUTE),
            ],
        )),
        "socket-families" => {
            let v = fixed(SOCKET_ERRNO);
            // Allowed: AF_UNIX 1, AF_INET 2, AF_INET6 10, AF_NETLINK 16
            // (AF_UNSPEC 0 fails in the kernel). A value above 16 in
            // the low half is above 16 in the whole register too.
            for fam in (3..=9).chain(11..=15) {
                out.push(rule(&["socket"], v, vec![masked(0, INT, fam)]));
            }
            out.push(rule(
                &["socket"],
                v,
                vec![cmp(0, LinuxSeccompOperator::ScmpCmpGt, AF_NETLINK)],
            ));
        }
        other => unreachable!("guard {other} has no rules"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syscalls;

    #[test]
    fn guard_names_are_not_syscalls() {
        for g in GUARDS {
            assert!(!syscalls::is_known(g.name), "{} is a syscall name", g.name);
        }
    }

    #[test]
    fn every_guard_renders() {
        let src = "version = 1\nname = \"t\"\n[net]\nnamespace = \"none\"\n[process]\nargs = [\"/bin/true\"]\n";
        let p = Policy::parse(src, "t.toml", std::path::Path::new("/")).unwrap();
        let r = rules(&p);
        for name in [
            "clone",
            "clone3",
            "chmod",
            "openat2",
            "memfd_create",
            "ioctl",
            "sendto",
            "setsockopt",
            "listen",
            "socket",
        ] {
            assert!(
                r.iter().any(|x| x.names().iter().any(|n| n == name)),
                "{name}"
            );
        }
    }
}
