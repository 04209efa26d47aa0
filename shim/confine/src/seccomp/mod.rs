//! OCI `linux.seccomp` compiled to **one** classic-BPF program by sandboy's
//! own compiler, and installed right before execve. libcontainer is built
//! without its `libseccomp` feature, so this is the only seccomp path:
//! anything that cannot be expressed is an error, never a silent drop.
//!
//! * [`profile`] reads the OCI profile the way runc does and reduces it to a
//!   normalised filter (syscall numbers, rules in order of precedence);
//! * [`compile`] lays that out as one program: architecture check, a binary
//!   search on the syscall number, then argument checks where rules have
//!   them;
//! * [`bpf`] is the instruction encoding and the jump-resolving builder.
//!
//! Semantics (the same as the chain of per-action filters sandboy installed
//! before):
//!
//! * when several rules of a syscall match, the most restrictive action
//!   wins: KILL_PROCESS > KILL_THREAD > TRAP > ERRNO > USER_NOTIF > TRACE >
//!   LOG > ALLOW (the kernel's own order between filters); between two
//!   ERRNO (or TRACE) rules the smaller errno wins. No rule matching means
//!   `defaultAction`;
//! * only the native architecture is filtered: a syscall from any other
//!   (e.g. i386 `int 0x80`) kills the process, even if the profile lists it;
//! * on x86_64, x32-ABI syscall numbers (`nr >= 0x40000000`), which share
//!   the x86_64 audit arch and would otherwise slip past a deny-list
//!   profile, get ENOSYS, or the default action if that is at least as
//!   restrictive. Number -1 (no syscall: how a ptrace tracer skips one) is
//!   left to the default action, as libseccomp does.
//!
//! libseccomp itself has no such precedence inside one filter: an
//! unconditional rule silently overrides every other rule of its syscall
//! whatever their actions, and conflicting conditional rules are refused
//! (EEXIST). Where a profile has no such conflicts the program decides
//! exactly as libseccomp's does (the differential test checks it).

mod bpf;
mod cache;
mod compile;
mod profile;

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use oci_spec::runtime::{LinuxSeccomp, LinuxSeccompFilterFlag};
use sandboy_spec_gen::syscalls::Arch;
use seccompiler::BpfProgram;

pub use cache::{cache_key, compile_cached, compile_cached_for};
pub use profile::notifies;

use crate::ConfineError;

/// A compiled profile: the one program to install and the `seccomp(2)`
/// flags to install it with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompiledSeccomp {
    program: BpfProgram,
    flags: libc::c_ulong,
    /// Whether the program has SCMP_ACT_NOTIFY verdicts: it is installed
    /// with a new listener, whose fd goes to the spec's `listenerPath`.
    notify: bool,
    /// Install with SECCOMP_FILTER_FLAG_LOG whatever the profile says (an
    /// install option, not part of the profile: never serialised).
    log: bool,
}

impl CompiledSeccomp {
    fn new(program: BpfProgram, flags: libc::c_ulong) -> Self {
        let notify = program
            .iter()
            .any(|i| i.code == bpf::RET_K && i.k == libc::SECCOMP_RET_USER_NOTIF);
        CompiledSeccomp {
            program,
            flags,
            notify,
            log: false,
        }
    }

    /// Installs with `SECCOMP_FILTER_FLAG_LOG`, so that the kernel logs
    /// every verdict but ALLOW (errno, kill, trap, …; which ones the
    /// `kernel.seccomp.actions_logged` sysctl says) for denial reports.
    /// Off unless the profile's `flags` ask for it.
    pub fn with_log(mut self, on: bool) -> Self {
        self.log = on;
        self
    }

    /// The program to install.
    pub fn program(&self) -> &BpfProgram {
        &self.program
    }

    /// The programs in installation order: always exactly one now (kept for
    /// callers of the chain-of-filters API).
    pub fn filters(&self) -> &[BpfProgram] {
        std::slice::from_ref(&self.program)
    }

    /// `SECCOMP_FILTER_FLAG_*` bits the program is installed with.
    pub fn flags(&self) -> libc::c_ulong {
        self.flags
    }

    /// Whether the profile has SCMP_ACT_NOTIFY rules (so `install` returns
    /// a listener).
    pub fn has_notify(&self) -> bool {
        self.notify
    }

    /// The flags `install` passes to `seccomp(2)`.
    pub fn install_flags(&self) -> libc::c_ulong {
        let mut flags = self.flags;
        if self.log {
            flags |= libc::SECCOMP_FILTER_FLAG_LOG;
        }
        if self.notify {
            flags |= libc::SECCOMP_FILTER_FLAG_NEW_LISTENER;
            // TSYNC and NEW_LISTENER both use the return value: the kernel
            // accepts them together only with TSYNC_ESRCH.
            if flags & libc::SECCOMP_FILTER_FLAG_TSYNC != 0 {
                flags |= libc::SECCOMP_FILTER_FLAG_TSYNC_ESRCH;
            }
        }
        flags
    }

    /// Installs the program on the calling thread (all threads with TSYNC).
    /// Needs `no_new_privs` or `CAP_SYS_ADMIN`; does not set `no_new_privs`
    /// itself (that is the spec's `process.noNewPrivileges`). Returns the
    /// user-notification listener when the profile has SCMP_ACT_NOTIFY rules.
    pub fn install(&self) -> Result<Option<OwnedFd>, ConfineError> {
        let flags = self.install_flags();
        let fprog = libc::sock_fprog {
            len: self.program.len() as libc::c_ushort,
            // seccompiler's sock_filter is a repr(C) copy of the kernel's
            // struct sock_filter, identical to libc's.
            filter: self.program.as_ptr() as *mut libc::sock_filter,
        };
        // SAFETY: fprog points to `len` valid BPF instructions that stay
        // alive for the call; the kernel copies them and writes nothing.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                flags,
                &fprog as *const libc::sock_fprog,
            )
        };
        if rc < 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EACCES) {
                return Err(ConfineError::Privilege { what: "seccomp" });
            }
            return Err(ConfineError::kernel("seccomp(SET_MODE_FILTER)", err));
        }
        if self.notify {
            // SAFETY: with NEW_LISTENER a successful call returns a new fd
            // that nothing else owns.
            return Ok(Some(unsafe { OwnedFd::from_raw_fd(rc as RawFd) }));
        }
        if rc > 0 {
            return Err(ConfineError::kernel(
                format!("seccomp TSYNC: thread {rc} could not be synchronised"),
                io::Error::from_raw_os_error(libc::ESRCH),
            ));
        }
        Ok(None)
    }
}

fn flags(seccomp: &LinuxSeccomp) -> Result<libc::c_ulong, ConfineError> {
    let mut bits = 0;
    for flag in seccomp.flags().iter().flatten() {
        bits |= match flag {
            LinuxSeccompFilterFlag::SeccompFilterFlagTsync => libc::SECCOMP_FILTER_FLAG_TSYNC,
            LinuxSeccompFilterFlag::SeccompFilterFlagLog => libc::SECCOMP_FILTER_FLAG_LOG,
            LinuxSeccompFilterFlag::SeccompFilterFlagSpecAllow => {
                libc::SECCOMP_FILTER_FLAG_SPEC_ALLOW
            }
            other => {
                return Err(ConfineError::seccomp(
                    ".flags",
                    format!("filter flag {other} is not supported by sandboy"),
                    "remove it (supported: SECCOMP_FILTER_FLAG_TSYNC, SECCOMP_FILTER_FLAG_LOG, SECCOMP_FILTER_FLAG_SPEC_ALLOW)",
                ))
            }
        };
    }
    Ok(bits)
}

/// The architecture sandboy runs on, if it has a syscall table for it.
fn native_arch() -> Result<Arch, ConfineError> {
    Arch::native().ok_or_else(|| {
        ConfineError::seccomp(
            "",
            format!(
                "sandboy has no syscall table for {}",
                std::env::consts::ARCH
            ),
            "run on x86_64 or aarch64, or remove linux.seccomp",
        )
    })
}

/// Compiles a profile for the native architecture.
pub fn compile(seccomp: &LinuxSeccomp) -> Result<CompiledSeccomp, ConfineError> {
    compile_for(seccomp, native_arch()?)
}

/// Compiles a profile for `arch` (tests compile for the non-native one too).
pub fn compile_for(seccomp: &LinuxSeccomp, arch: Arch) -> Result<CompiledSeccomp, ConfineError> {
    let filter = profile::filter(seccomp, arch)?;
    let flags = flags(seccomp)?;
    let program = compile::compile(&filter);
    debug_assert_eq!(bpf::well_formed(&program), Ok(()));
    if program.len() > bpf::MAX_INSNS {
        return Err(ConfineError::seccomp(
            "",
            format!(
                "the profile compiles to {} BPF instructions, more than the kernel's limit of {}",
                program.len(),
                bpf::MAX_INSNS
            ),
            "simplify the profile (fewer rules or conditions)",
        ));
    }
    Ok(CompiledSeccomp::new(program, flags))
}

// The interpreter the differential test uses; the unit tests need only part of it.
#[cfg(test)]
#[allow(dead_code)]
#[path = "../../tests/common/cbpf.rs"]
mod cbpf;

#[cfg(test)]
mod tests {
    use super::cbpf::{self, Insn, SeccompData};
    use super::*;
    use sandboy_spec_gen::syscalls;

    const X86_64: u32 = 0xc000_003e;
    const AARCH64: u32 = 0xc000_00b7;
    const ERRNO: u32 = libc::SECCOMP_RET_ERRNO;

    fn profile(json: &str) -> LinuxSeccomp {
        serde_json::from_str(json).expect("profile JSON")
    }

    fn insns(c: &CompiledSeccomp) -> Vec<Insn> {
        cbpf::insns(c.program())
    }

    /// The verdict of `c` for syscall `name` (or a number) with `args`.
    fn verdict(c: &CompiledSeccomp, arch: Arch, name: &str, args: &[u64]) -> u32 {
        let nr = match name.parse::<u32>() {
            Ok(nr) => nr,
            Err(_) => syscalls::number(arch, name).expect("known syscall") as u32,
        };
        let mut data = SeccompData {
            nr,
            arch: if arch == Arch::X86_64 {
                X86_64
            } else {
                AARCH64
            },
            ..SeccompData::default()
        };
        data.args[..args.len()].copy_from_slice(args);
        cbpf::run(&insns(c), &data).0
    }

    #[test]
    fn deny_list_profile() {
        let p = profile(
            r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[
                {"names":["ptrace","mount"],"action":"SCMP_ACT_ERRNO","errnoRet":1},
                {"names":["kexec_load"],"action":"SCMP_ACT_KILL_PROCESS"}]}"#,
        );
        let c = compile_for(&p, Arch::X86_64).unwrap();
        // One program: x32 guard, errno and kill rules, no default rules.
        assert_eq!(c.filters().len(), 1);
        assert_eq!(c.flags(), 0);
        let v = |name| verdict(&c, Arch::X86_64, name, &[]);
        assert_eq!(v("ptrace"), ERRNO | 1);
        assert_eq!(v("mount"), ERRNO | 1);
        assert_eq!(v("kexec_load"), libc::SECCOMP_RET_KILL_PROCESS);
        assert_eq!(v("read"), libc::SECCOMP_RET_ALLOW);
        assert_eq!(v("1073741825"), ERRNO | libc::ENOSYS as u32); // x32 write
        assert_eq!(v("4294967295"), libc::SECCOMP_RET_ALLOW); // -1: no syscall
                                                              // The newest syscall the tables know runs; the next number, which
                                                              // nobody reviewed, fails as on an older kernel.
        assert_eq!(v("file_setattr"), libc::SECCOMP_RET_ALLOW);
        assert_eq!(v("470"), ERRNO | libc::ENOSYS as u32);
        let c = compile_for(&p, Arch::Aarch64).unwrap();
        assert_eq!(c.filters().len(), 1);
        let v = |name| verdict(&c, Arch::Aarch64, name, &[]);
        assert_eq!(v("ptrace"), ERRNO | 1);
        assert_eq!(v("file_setattr"), libc::SECCOMP_RET_ALLOW);
        assert_eq!(v("470"), ERRNO | libc::ENOSYS as u32);
        // No x32 on arm64, and past the tables.
        assert_eq!(v("1073741825"), ERRNO | libc::ENOSYS as u32);
        assert_eq!(v("4294967295"), libc::SECCOMP_RET_ALLOW); // -1: no syscall
    }

    #[test]
    fn allow_list_profile_with_conditions() {
        let p = profile(
            r#"{"defaultAction":"SCMP_ACT_ERRNO","defaultErrnoRet":38,
                "architectures":["SCMP_ARCH_X86_64","SCMP_ARCH_X86","SCMP_ARCH_X32","SCMP_ARCH_AARCH64"],
                "flags":["SECCOMP_FILTER_FLAG_LOG"],
                "syscalls":[
                {"names":["read","write","exit_group","no_such_syscall"],"action":"SCMP_ACT_ALLOW"},
                {"names":["personality"],"action":"SCMP_ACT_ALLOW","args":[
                    {"index":0,"value":0,"op":"SCMP_CMP_EQ"},
                    {"index":0,"value":8,"op":"SCMP_CMP_EQ"}]},
                {"names":["clone"],"action":"SCMP_ACT_ALLOW","args":[
                    {"index":0,"value":2114060288,"valueTwo":0,"op":"SCMP_CMP_MASKED_EQ"},
                    {"index":1,"value":5,"op":"SCMP_CMP_LE"}]},
                {"names":["ptrace"],"action":"SCMP_ACT_ERRNO","errnoRet":38},
                {"names":["uname"],"action":"SCMP_ACT_LOG"},
                {"names":["getpid"],"action":"SCMP_ACT_TRACE","errnoRet":7},
                {"names":["kill"],"action":"SCMP_ACT_TRAP"}]}"#,
        );
        for arch in Arch::ALL {
            let c = compile_for(&p, arch).unwrap();
            assert_eq!(c.filters().len(), 1, "{arch}");
            assert_eq!(c.flags(), libc::SECCOMP_FILTER_FLAG_LOG);
            let v = |name, args: &[u64]| verdict(&c, arch, name, args);
            let allow = libc::SECCOMP_RET_ALLOW;
            assert_eq!(v("read", &[]), allow);
            assert_eq!(v("exit_group", &[]), allow);
            assert_eq!(v("personality", &[8]), allow);
            assert_eq!(v("personality", &[9]), ERRNO | 38);
            assert_eq!(v("clone", &[0x11, 5]), allow);
            assert_eq!(v("clone", &[0x1000_0000, 5]), ERRNO | 38);
            assert_eq!(v("clone", &[0x11, 1 << 32]), ERRNO | 38);
            assert_eq!(v("ptrace", &[]), ERRNO | 38);
            assert_eq!(v("uname", &[]), libc::SECCOMP_RET_LOG);
            assert_eq!(v("getpid", &[]), libc::SECCOMP_RET_TRACE | 7);
            assert_eq!(v("kill", &[]), libc::SECCOMP_RET_TRAP);
            assert_eq!(v("seccomp", &[]), ERRNO | 38);
        }
    }

    #[test]
    fn notify_rules_become_user_notif_in_one_filter() {
        let c = compile_for(
            &profile(
                r#"{"defaultAction":"SCMP_ACT_ALLOW","listenerPath":"/run/a.sock","syscalls":[{"names":["getcwd"],"action":"SCMP_ACT_NOTIFY"}]}"#,
            ),
            Arch::X86_64,
        )
        .unwrap();
        assert!(c.has_notify());
        let rets = |k: u32| {
            c.filters()
                .iter()
                .flatten()
                .filter(|i| i.code == bpf::RET_K && i.k == k)
                .count()
        };
        assert!(rets(libc::SECCOMP_RET_USER_NOTIF) >= 1);
        // The old compiler's stand-in (TRACE with data 0xfff7) is gone.
        assert_eq!(rets(libc::SECCOMP_RET_TRACE | 0xfff7), 0);
        let flags = c.install_flags();
        assert_ne!(flags & libc::SECCOMP_FILTER_FLAG_NEW_LISTENER, 0);
    }

    #[test]
    fn unsupported_things_are_errors() {
        let cases = [
            (
                r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["ptrace"],"action":"SCMP_ACT_NOTIFY"}]}"#,
                ".listenerPath",
            ),
            (
                r#"{"defaultAction":"SCMP_ACT_NOTIFY","listenerPath":"/run/a.sock"}"#,
                ".defaultAction",
            ),
            (
                r#"{"defaultAction":"SCMP_ACT_ALLOW","flags":["SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"]}"#,
                ".flags",
            ),
            (
                r#"{"defaultAction":"SCMP_ACT_ALLOW","architectures":["SCMP_ARCH_ARM"]}"#,
                ".architectures",
            ),
            (
                r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["read"],"action":"SCMP_ACT_ERRNO","args":[{"index":6,"value":1,"op":"SCMP_CMP_EQ"}]}]}"#,
                ".syscalls[0].args[0]",
            ),
        ];
        for (json, location) in cases {
            let err = compile_for(&profile(json), Arch::X86_64).unwrap_err();
            assert!(err.is_config(), "{err}");
            let msg = err.to_string();
            assert!(msg.contains(location), "{json}: {msg}");
        }
    }

    #[test]
    fn allow_all_still_checks_arch() {
        let p = profile(r#"{"defaultAction":"SCMP_ACT_ALLOW"}"#);
        let c = compile_for(&p, Arch::Aarch64).unwrap();
        assert_eq!(c.filters().len(), 1);
        // arch load, jeq, kill; nr load, two jumps (past the tables: ENOSYS,
        // but -1 allowed), three returns.
        assert_eq!(c.filters()[0].len(), 8);
        let data = SeccompData {
            arch: X86_64,
            ..SeccompData::default()
        };
        assert_eq!(
            cbpf::run(&insns(&c), &data).0,
            libc::SECCOMP_RET_KILL_PROCESS
        );
    }

    #[test]
    fn log_flag_only_when_asked() {
        let p = profile(r#"{"defaultAction":"SCMP_ACT_ALLOW"}"#);
        let c = compile_for(&p, Arch::X86_64).unwrap();
        assert_eq!(c.install_flags() & libc::SECCOMP_FILTER_FLAG_LOG, 0);
        let logged = c.clone().with_log(true);
        assert_eq!(logged.install_flags(), libc::SECCOMP_FILTER_FLAG_LOG);
        assert_eq!(logged.with_log(false).install_flags(), 0);
        // Serialising keeps the profile's flags only.
        let back = CompiledSeccomp::from_bytes(&c.clone().with_log(true).to_bytes()).unwrap();
        assert_eq!(back, c);
        let p = profile(
            r#"{"defaultAction":"SCMP_ACT_ALLOW","flags":["SECCOMP_FILTER_FLAG_TSYNC"],"listenerPath":"/a",
                "syscalls":[{"names":["getcwd"],"action":"SCMP_ACT_NOTIFY"}]}"#,
        );
        let c = compile_for(&p, Arch::X86_64).unwrap().with_log(true);
        assert_eq!(
            c.install_flags(),
            libc::SECCOMP_FILTER_FLAG_LOG
                | libc::SECCOMP_FILTER_FLAG_TSYNC
                | libc::SECCOMP_FILTER_FLAG_NEW_LISTENER
                | libc::SECCOMP_FILTER_FLAG_TSYNC_ESRCH
        );
    }

    #[test]
    fn most_restrictive_matching_rule_wins() {
        let p = profile(
            r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[
                {"names":["dup"],"action":"SCMP_ACT_ERRNO","errnoRet":38},
                {"names":["dup"],"action":"SCMP_ACT_ERRNO","errnoRet":5,
                 "args":[{"index":0,"value":7,"op":"SCMP_CMP_EQ"}]},
                {"names":["dup"],"action":"SCMP_ACT_KILL_PROCESS",
                 "args":[{"index":1,"value":7,"op":"SCMP_CMP_GE"}]},
                {"names":["dup"],"action":"SCMP_ACT_LOG",
                 "args":[{"index":2,"value":7,"op":"SCMP_CMP_LT"}]}]}"#,
        );
        let c = compile_for(&p, Arch::X86_64).unwrap();
        let v = |args: &[u64]| verdict(&c, Arch::X86_64, "dup", args);
        assert_eq!(v(&[7, 0, 9]), ERRNO | 5);
        assert_eq!(v(&[7, 7, 0]), libc::SECCOMP_RET_KILL_PROCESS);
        assert_eq!(v(&[1, 0, 0]), ERRNO | 38);
    }

    #[test]
    fn rules_normalised() {
        use compile::{normalize, CmpOp, Cond, Rule};
        let cond = Cond {
            index: 0,
            op: CmpOp::Eq,
            value: 1,
        };
        let conditional = Rule {
            ret: ERRNO | 1,
            conds: vec![cond],
        };
        let mut rules = vec![conditional.clone(), conditional.clone()];
        normalize(&mut rules);
        assert_eq!(rules.len(), 2);
        // An unconditional rule makes less restrictive rules unreachable.
        rules.push(Rule {
            ret: ERRNO | 1,
            conds: vec![],
        });
        rules.push(conditional.clone());
        rules.push(Rule {
            ret: libc::SECCOMP_RET_ALLOW,
            conds: vec![cond],
        });
        normalize(&mut rules);
        assert_eq!(rules.len(), 3);
        assert!(rules[2].conds.is_empty());
    }

    #[test]
    fn large_profiles_take_long_jumps() {
        let names: Vec<_> = syscalls::names(Arch::X86_64).collect();
        let entries: Vec<String> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                format!(
                    r#"{{"names":["{n}"],"action":"SCMP_ACT_ERRNO","errnoRet":{},"args":[{{"index":{},"value":{i},"op":"SCMP_CMP_GT"}}]}}"#,
                    i % 4000,
                    i % 6
                )
            })
            .collect();
        let p = profile(&format!(
            r#"{{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{}]}}"#,
            entries.join(",")
        ));
        let c = compile_for(&p, Arch::X86_64).unwrap();
        assert!(c.program().iter().any(|i| i.code == bpf::JA));
        bpf::well_formed(c.program()).unwrap();
        for (i, n) in names.iter().enumerate() {
            let (idx, i64v) = (i % 6, i as u64);
            let mut args = [0u64; 6];
            args[idx] = i64v + 1;
            assert_eq!(
                verdict(&c, Arch::X86_64, n, &args),
                ERRNO | (i % 4000) as u32,
                "{n}"
            );
            args[idx] = i64v;
            assert_eq!(
                verdict(&c, Arch::X86_64, n, &args),
                libc::SECCOMP_RET_ALLOW,
                "{n}"
            );
        }
    }
}
