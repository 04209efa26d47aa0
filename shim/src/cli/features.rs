//! `features`: the runtime-spec features document, saying what this build
//! on this kernel really does (checked field by field against `runc
//! features` by tests/tests/features.rs), plus sandboy's annotations, each
//! with a short machine-readable description (`<type>: <what>`).

use std::collections::HashMap;

use oci_spec::runtime::{
    Arch, CgroupBuilder, FeaturesBuilder, LinuxFeatureBuilder, LinuxNamespaceType,
    LinuxSeccompAction, SeccompBuilder, VERSION,
};
use sandboy_spec_gen::annotations;

use crate::error::{Failure, Result};

/// Mount options libcontainer 0.7 parses (its option tables in
/// `syscall/linux.rs` and `rootfs/utils.rs`); anything else is handed to
/// mount(2) as filesystem data, so it is not claimed here.
const MOUNT_OPTIONS: &[&str] = &[
    "async",
    "atime",
    "bind",
    "defaults",
    "dev",
    "diratime",
    "dirsync",
    "exec",
    "idmap",
    "mand",
    "noatime",
    "nodev",
    "nodiratime",
    "noexec",
    "nomand",
    "norelatime",
    "nostrictatime",
    "nosuid",
    "private",
    "ratime",
    "rbind",
    "rdev",
    "rdiratime",
    "relatime",
    "remount",
    "rexec",
    "ridmap",
    "rnoatime",
    "rnodev",
    "rnodiratime",
    "rnoexec",
    "rnorelatime",
    "rnostrictatime",
    "rnosuid",
    "rnosymfollow",
    "ro",
    "rprivate",
    "rrelatime",
    "rro",
    "rrw",
    "rshared",
    "rslave",
    "rstrictatime",
    "rsuid",
    "rsymfollow",
    "runbindable",
    "rw",
    "shared",
    "slave",
    "strictatime",
    "suid",
    "sync",
    "unbindable",
];

/// Capabilities by number, as the kernel numbers them (and runc lists them).
const CAPABILITIES: &[&str] = &[
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_DAC_READ_SEARCH",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
    "CAP_NET_ADMIN",
    "CAP_NET_RAW",
    "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",
    "CAP_SYS_MODULE",
    "CAP_SYS_RAWIO",
    "CAP_SYS_CHROOT",
    "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",
    "CAP_SYS_ADMIN",
    "CAP_SYS_BOOT",
    "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",
    "CAP_SYS_TTY_CONFIG",
    "CAP_MKNOD",
    "CAP_LEASE",
    "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL",
    "CAP_SETFCAP",
    "CAP_MAC_OVERRIDE",
    "CAP_MAC_ADMIN",
    "CAP_SYSLOG",
    "CAP_WAKE_ALARM",
    "CAP_BLOCK_SUSPEND",
    "CAP_AUDIT_READ",
    "CAP_PERFMON",
    "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE",
];

/// The filter flags sandboy's seccomp installer knows and supports.
const SECCOMP_FLAGS: &[&str] = &[
    "SECCOMP_FILTER_FLAG_TSYNC",
    "SECCOMP_FILTER_FLAG_LOG",
    "SECCOMP_FILTER_FLAG_SPEC_ALLOW",
];

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// The capabilities the running kernel has (`cap_last_cap`).
fn capabilities() -> Vec<String> {
    let last = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .unwrap_or(CAPABILITIES.len() - 1);
    strings(&CAPABILITIES[..=last.min(CAPABILITIES.len() - 1)])
}

/// sandboy's annotations, `<type>: <what>`, and facts of this host.
fn notes() -> HashMap<String, String> {
    let described = [
        (
            annotations::LANDLOCK,
            "json: Landlock ruleset (mode, fs, net, scope)",
        ),
        (
            annotations::TIMEOUT,
            "duration: wall-clock limit, the container is killed at the deadline",
        ),
        (annotations::WASM_LIMITS, "json: the policy's [wasm] limits"),
        (
            annotations::POLICY,
            "name: a policy of the node's policy_dir, applied at create",
        ),
        (
            annotations::POLICY_SHA256,
            "hex: sha256 of the policy the spec came from",
        ),
        (
            annotations::OCI_HANDLER,
            "enum(wasm): selects OCI-wasm mode",
        ),
        (
            annotations::WASM_VARIANT,
            "enum(compat|compat-smart): selects OCI-wasm mode",
        ),
    ];
    let mut notes: HashMap<String, String> = described
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    notes.insert(
        "org.opencontainers.runtime-spec.features".to_owned(),
        "sandboy".to_owned(),
    );
    notes.insert(
        "dev.sandboy.landlock.abi".to_owned(),
        sandboy_confine::landlock::abi_version().to_string(),
    );
    notes.insert(
        "dev.sandboy.wrap.tiers".to_owned(),
        crate::wrap::tiers_available().join(","),
    );
    notes.insert(
        "dev.sandboy.version".to_owned(),
        env!("CARGO_PKG_VERSION").to_owned(),
    );
    notes
}

pub fn run() -> Result<i32> {
    let bad = |e: oci_spec::OciSpecError| Failure::runtime(e.to_string());
    let ns = [
        LinuxNamespaceType::Cgroup,
        LinuxNamespaceType::Ipc,
        LinuxNamespaceType::Mount,
        LinuxNamespaceType::Network,
        LinuxNamespaceType::Pid,
        LinuxNamespaceType::Time,
        LinuxNamespaceType::User,
        LinuxNamespaceType::Uts,
    ];
    let seccomp = SeccompBuilder::default()
        .enabled(true)
        .actions(vec![
            LinuxSeccompAction::ScmpActAllow,
            LinuxSeccompAction::ScmpActErrno,
            LinuxSeccompAction::ScmpActKill,
            LinuxSeccompAction::ScmpActKillProcess,
            LinuxSeccompAction::ScmpActKillThread,
            LinuxSeccompAction::ScmpActLog,
            LinuxSeccompAction::ScmpActNotify,
            LinuxSeccompAction::ScmpActTrace,
            LinuxSeccompAction::ScmpActTrap,
        ])
        .operators(strings(&[
            "SCMP_CMP_EQ",
            "SCMP_CMP_GE",
            "SCMP_CMP_GT",
            "SCMP_CMP_LE",
            "SCMP_CMP_LT",
            "SCMP_CMP_MASKED_EQ",
            "SCMP_CMP_NE",
        ]))
        // Only the native architecture is filtered; a syscall from any
        // other is killed (sandboy-confine's seccomp docs).
        .archs(vec![Arch::ScmpArchAarch64, Arch::ScmpArchX86_64])
        .known_flags(strings(SECCOMP_FLAGS))
        .supported_flags(strings(SECCOMP_FLAGS))
        .build()
        .map_err(bad)?;
    let linux = LinuxFeatureBuilder::default()
        .namespaces(ns.to_vec())
        .capabilities(capabilities())
        .cgroup(
            CgroupBuilder::default()
                .v1(true)
                .v2(true)
                .systemd(false)
                .systemd_user(false)
                .build()
                .map_err(bad)?,
        )
        .seccomp(seccomp)
        .build()
        .map_err(bad)?;
    let features = FeaturesBuilder::default()
        .oci_version_min("1.0.0".to_owned())
        .oci_version_max(VERSION.to_owned())
        .hooks(strings(&[
            "prestart",
            "createRuntime",
            "createContainer",
            "startContainer",
            "poststart",
            "poststop",
        ]))
        .mount_options(strings(MOUNT_OPTIONS))
        .linux(linux)
        .annotations(notes())
        .build()
        .map_err(bad)?;
    crate::cli::output::line(&crate::cli::state::to_json(&features)?);
    Ok(0)
}
