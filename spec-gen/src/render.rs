//! Rendering a checked [`Policy`] into an OCI runtime `config.json`.
//!
//! Decisions worth knowing:
//! * `root.readonly` is true unless `/` itself is a write path. Every other
//!   write path gets writable storage of its own: a policy `[[mount]]` with
//!   `rw` covering it, one of the standard writable mounts (`/dev`,
//!   `/dev/shm`, …), or else a fresh `tmpfs` (mode 1777; its pages count
//!   against the container's memory limit). So a step can never write into
//!   the image it runs on.
//! * `linux.cgroupsPath` stays unset: `/sandboy/<name>` would collide for
//!   two containers from one policy, and the runtime defaults to
//!   `/sandboy/<container-id>`.
//! * Output is canonical: object keys sorted, pretty JSON with two-space
//!   indentation and a trailing newline, so goldens and digests are stable.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use oci_spec::runtime::{
    Arch, Capabilities, Capability, LinuxCapabilities, LinuxDeviceCgroup, LinuxNamespace,
    LinuxNamespaceType, LinuxPids, LinuxResources, LinuxSeccomp, LinuxSeccompAction, LinuxSyscall,
    Mount, PosixRlimitBuilder, PosixRlimitType, Process, Spec,
};

use crate::annotations::{self, Access, FsRule, LandlockRuleset, NetRules};
use crate::error::{Diagnostic, Error, Location};
use crate::guards;
use crate::policy::diagnostic;
use crate::policy::{is_under, BindMount, NetNamespace, Policy, SeccompAction};

/// OCI runtime-spec version written into generated configs.
pub const OCI_VERSION: &str = "1.0.2";

/// CFS period used to turn `cpus` into a quota (the kernel default).
pub const CPU_PERIOD_US: u64 = 100_000;

/// runc's default masked paths.
pub const DEFAULT_MASKED: &[&str] = &[
    "/proc/acpi",
    "/proc/asound",
    "/proc/interrupts",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/sys/devices/virtual/powercap",
    "/sys/firmware",
];

/// runc's default read-only paths.
pub const DEFAULT_READONLY: &[&str] = &[
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/sysrq-trigger",
];

/// The sysctl that makes every memfd non-executable (per pid namespace).
pub const MEMFD_NOEXEC: &str = "vm.memfd_noexec";

/// Options for [`render`].
#[derive(Debug, Clone, Default)]
pub struct RenderOptions {
    /// `root.path`; `None` keeps the base's, or `rootfs` (bundle-relative).
    pub rootfs: Option<PathBuf>,
    /// Spec to merge onto instead of sandboy's default.
    pub base: Option<Spec>,
}

/// Load a `--base` config.json.
pub fn load_base(path: &Path) -> Result<Spec, Error> {
    let text = crate::input::read_text(path, crate::input::TEXT_MAX)
        .map_err(|e| Error::read("read base config", path, e))?;
    serde_json::from_str(&text).map_err(|e| Error::Base {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: crate::error::json_message(&e),
    })
}

/// The Landlock ruleset of a policy: one rule per path, sorted by path,
/// with the groups of every list the path appears in.
pub fn ruleset(policy: &Policy) -> LandlockRuleset {
    let mut rules: BTreeMap<&str, Vec<Access>> = BTreeMap::new();
    for (list, groups) in [
        (&policy.read, &["read"][..]),
        (&policy.exec, &["read", "exec"][..]),
        (&policy.write, &["read", "write"][..]),
    ] {
        for path in list {
            let access = rules.entry(path).or_default();
            for g in groups {
                let a = Access::Named((*g).to_string());
                if !access.contains(&a) {
                    access.push(a);
                }
            }
        }
    }
    LandlockRuleset {
        mode: policy.landlock_mode,
        fs: rules
            .into_iter()
            .map(|(path, access)| FsRule {
                path: path.to_string(),
                access,
            })
            .collect(),
        net: Some(NetRules {
            connect: connect_ports(policy),
            bind: policy.bind.clone(),
        }),
        scope: policy.scope.clone(),
    }
}

/// Landlock's TCP connect ports: the policy's, and with the egress gateway
/// its proxy, its DNS stub (TCP, `options use-vc`) and every allowed port
/// (the gateway listens on those inside the container's namespace).
fn connect_ports(policy: &Policy) -> Vec<u16> {
    let mut v = policy.connect.clone();
    if policy.egress.is_active() {
        v.extend([policy.egress.proxy_port(), 53]);
        v.extend(policy.egress.ports());
        v.sort_unstable();
        v.dedup();
    }
    v
}

/// The proxy variables of the egress gateway (both cases: curl reads
/// `http_proxy` only in lower case, Go and others the upper).
pub fn proxy_env(policy: &Policy) -> Vec<String> {
    if !policy.egress.is_active() {
        return Vec::new();
    }
    let url = format!("http://127.0.0.1:{}", policy.egress.proxy_port());
    let mut env = Vec::new();
    for (k, v) in [
        ("HTTP_PROXY", url.as_str()),
        ("HTTPS_PROXY", &url),
        ("ALL_PROXY", &url),
        ("NO_PROXY", "localhost,127.0.0.1,::1"),
    ] {
        env.push(format!("{k}={v}"));
        env.push(format!("{}={v}", k.to_ascii_lowercase()));
    }
    env
}

/// The sandboy annotations of a policy (SPEC §5), sorted by key.
/// [`annotations`] with the whole policy ([`POLICY_TEXT`](crate::annotations::POLICY_TEXT)),
/// for an engine that passes its own spec (what `annotate` prints;
/// `generate` renders the policy into config.json instead). `src` is the
/// policy file's text.
pub fn engine_annotations(policy: &Policy, src: &str) -> Result<BTreeMap<String, String>, Error> {
    let mut ann = annotations(policy);
    let text = serde_json::to_string(&crate::policy::without_mounts(src)).map_err(oci_err)?;
    ann.insert(crate::annotations::POLICY_TEXT.to_string(), text);
    Ok(ann)
}

pub fn annotations(policy: &Policy) -> BTreeMap<String, String> {
    let mut a = BTreeMap::new();
    a.insert(annotations::LANDLOCK.to_string(), ruleset(policy).encode());
    a.insert(
        annotations::POLICY_SHA256.to_string(),
        policy.sha256.clone(),
    );
    if let Some(t) = policy.timeout {
        a.insert(annotations::TIMEOUT.to_string(), t.to_string());
    }
    if policy.egress.is_active() {
        a.insert(
            annotations::EGRESS.to_string(),
            policy.egress.to_wire().encode(),
        );
    }
    if let Some(w) = &policy.wasm {
        a.insert(annotations::WASM_LIMITS.to_string(), w.encode());
    }
    if policy.is_wasm() {
        a.insert(annotations::OCI_HANDLER.to_string(), "wasm".to_string());
        a.insert(
            annotations::WASM_VARIANT.to_string(),
            "compat-smart".to_string(),
        );
    }
    a
}

fn oci_err(e: impl std::fmt::Display) -> Error {
    Error::Spec(e.to_string())
}

fn mount(dest: &str, typ: &str, source: &str, options: &[&str]) -> Mount {
    let mut m = Mount::default();
    m.set_destination(PathBuf::from(dest))
        .set_typ(Some(typ.to_string()))
        .set_source(Some(PathBuf::from(source)))
        .set_options(Some(options.iter().map(|s| s.to_string()).collect()));
    m
}

/// proc, dev, devpts, shm, mqueue and a read-only sysfs (runc's set, minus
/// the cgroup mount: nothing under a policy needs to see its cgroup).
pub fn standard_mounts() -> Vec<Mount> {
    vec![
        mount("/proc", "proc", "proc", &["nosuid", "noexec", "nodev"]),
        mount(
            "/dev",
            "tmpfs",
            "tmpfs",
            &["nosuid", "strictatime", "mode=755", "size=65536k"],
        ),
        mount(
            "/dev/pts",
            "devpts",
            "devpts",
            &[
                "nosuid",
                "noexec",
                "newinstance",
                "ptmxmode=0666",
                "mode=0620",
                "gid=5",
            ],
        ),
        mount(
            "/dev/shm",
            "tmpfs",
            "shm",
            &["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"],
        ),
        mount(
            "/dev/mqueue",
            "mqueue",
            "mqueue",
            &["nosuid", "noexec", "nodev"],
        ),
        mount(
            "/sys",
            "sysfs",
            "sysfs",
            &["nosuid", "noexec", "nodev", "ro"],
        ),
    ]
}

/// Whether a mount gives writable storage at its destination.
fn writable(m: &Mount) -> bool {
    let opts = m.options().as_deref().unwrap_or_default();
    let ro = opts.iter().any(|o| o == "ro");
    let typ = m.typ().as_deref().unwrap_or_default();
    !ro && !matches!(
        typ,
        "sysfs" | "proc" | "devpts" | "mqueue" | "cgroup" | "cgroup2"
    )
}

/// Whether a write path may hold programs: it is, lies in, or contains an
/// `[fs] exec` path. Every other write path is mounted `noexec`, so code a
/// step writes cannot be mapped executable or run through the dynamic
/// loader (issue 14).
///
/// The exec paths are indexed once per render: scanning them all for every
/// write path made a policy with many of both quadratic (25,000 write and
/// 25,000 exec paths: 40 s of CPU in a debug build).
struct ExecPaths<'a> {
    /// The exec paths themselves.
    paths: HashSet<&'a str>,
    /// Every proper ancestor of an exec path.
    ancestors: HashSet<&'a str>,
}

impl<'a> ExecPaths<'a> {
    fn new(policy: &'a Policy) -> Self {
        let mut ancestors = HashSet::new();
        for e in &policy.exec {
            for a in Path::new(e.as_str()).ancestors().skip(1) {
                // Its own ancestors were added with it.
                if !a.to_str().is_some_and(|a| ancestors.insert(a)) {
                    break;
                }
            }
        }
        ExecPaths {
            paths: policy.exec.iter().map(String::as_str).collect(),
            ancestors,
        }
    }

    /// `w` is or lies in an exec path (one of its ancestors is one), or an
    /// exec path lies in `w`: `is_under` both ways, without the scan.
    fn executable(&self, w: &str) -> bool {
        Path::new(w)
            .ancestors()
            .any(|a| a.to_str().is_some_and(|a| self.paths.contains(a)))
            || self.ancestors.contains(w)
    }

    /// `nosuid,nodev` plus `noexec` unless `w` is executable.
    fn write_flags(&self, w: &str) -> Vec<&'static str> {
        let mut f = vec!["nosuid", "nodev"];
        if !self.executable(w) {
            f.push("noexec");
        }
        f
    }
}

/// The container-own storage of a write path: a fresh tmpfs, capped at
/// `[limits] disk` bytes and `inodes` files (or their defaults), so a step
/// gets ENOSPC instead of filling memory (issue 14).
fn write_tmpfs(policy: &Policy, exec: &ExecPaths, w: &str) -> Mount {
    let caps = tmpfs_caps(policy);
    let mut opts = exec.write_flags(w);
    opts.push("mode=1777");
    opts.extend(caps.iter().map(String::as_str));
    mount(w, "tmpfs", "tmpfs", &opts)
}

/// The tmpfs options of a policy's disk caps: `size=` and `nr_inodes=`.
pub fn tmpfs_caps(policy: &Policy) -> [String; 2] {
    [
        format!("size={}", policy.disk_cap().0),
        format!("nr_inodes={}", policy.inode_cap()),
    ]
}

/// Each restriction of a bind's top mount, its recursive form
/// (`mount_setattr(2)` with `AT_RECURSIVE`, runc's names, which
/// libcontainer 0.7 accepts) and the recursive form that would undo it.
/// libcontainer applies `ro`, `nosuid`, `nodev` and `noexec` to the top
/// mount of an `rbind` only: a host mount nested below the source (a cache
/// volume, a tmpfs in the checkout) kept them off inside, and since
/// Landlock does not govern chmod, utimes or xattrs, a red team's step
/// chmodded host root's files through a "read-only" bind.
const RECURSIVE: [(&str, &str, &str); 4] = [
    ("ro", "rro", "rrw"),
    ("nosuid", "rnosuid", "rsuid"),
    ("nodev", "rnodev", "rdev"),
    ("noexec", "rnoexec", "rexec"),
];

/// Bind `options` whose restrictions hold for every mount below the bind
/// too: each of `ro`, `nosuid`, `nodev`, `noexec` present gets its
/// recursive form, and a recursive form undoing it is dropped. True if
/// `options` changed. Used for every bind spec-gen renders, and by the
/// runtime on a policy container's hand-written binds.
pub fn recursive_restrictions(options: &mut Vec<String>) -> bool {
    let before = options.clone();
    for (top, rec, undo) in RECURSIVE {
        if options.iter().any(|o| o == top) {
            options.retain(|o| o != undo);
            if !options.iter().any(|o| o == rec) {
                options.push(rec.to_string());
            }
        }
    }
    *options != before
}

/// A bind of `source` at `dest` with `opts`, its restrictions recursive
/// ([`recursive_restrictions`]).
pub fn bind_mount(dest: &Path, source: PathBuf, opts: &[&str]) -> Mount {
    let mut options: Vec<String> = opts.iter().map(|o| o.to_string()).collect();
    recursive_restrictions(&mut options);
    let mut m = Mount::default();
    m.set_destination(dest.to_path_buf())
        .set_typ(Some("bind".to_string()))
        .set_source(Some(source))
        .set_options(Some(options));
    m
}

/// The mounts of one `[[mount]]`. A bind asked `rw` stays writable only
/// where `[fs] write` says so: a destination outside every write path is
/// bound read-only (Landlock does not govern chmod, utimes or xattrs, so a
/// writable mount would let them through), and each write path inside it
/// gets a writable bind of the matching host subdirectory. Writable binds
/// are `nosuid,nodev` and `noexec` unless executable. Every restriction
/// holds for the host mounts below the source too ([`RECURSIVE`]).
pub(crate) fn policy_binds(policy: &Policy, b: &BindMount) -> Vec<Mount> {
    let bind =
        |dest: &str, source: PathBuf, opts: Vec<&str>| bind_mount(Path::new(dest), source, &opts);
    let base: Vec<&str> = b
        .options
        .iter()
        .map(String::as_str)
        .filter(|o| !matches!(*o, "rw" | "ro" | "exec" | "suid" | "dev"))
        .collect();
    let exec = ExecPaths::new(policy);
    let writable_opts = |dest: &str| {
        let mut o = base.clone();
        o.push("rw");
        for f in exec.write_flags(dest) {
            if !o.contains(&f) {
                o.push(f);
            }
        }
        o
    };
    if b.read_only() {
        let opts: Vec<&str> = b.options.iter().map(String::as_str).collect();
        return vec![bind(&b.destination, b.source.clone(), opts)];
    }
    if policy.write.iter().any(|w| is_under(&b.destination, w)) {
        return vec![bind(
            &b.destination,
            b.source.clone(),
            writable_opts(&b.destination),
        )];
    }
    let mut ro = base.clone();
    ro.push("ro");
    let mut out = vec![bind(&b.destination, b.source.clone(), ro)];
    for w in policy
        .write
        .iter()
        .filter(|w| is_under(w, &b.destination) && **w != b.destination)
    {
        let rel = w[b.destination.len()..].trim_start_matches('/');
        let source = b.source.join(rel);
        if source.is_dir() || source.is_file() {
            out.push(bind(w, source, writable_opts(w)));
        } else {
            tracing::debug!(path = %w, "write path has no host directory in its read-only mount; a tmpfs holds it");
        }
    }
    out
}

/// Depth of a container path, for parent-before-child mount order.
fn depth(p: &Path) -> usize {
    p.components().count()
}

/// What a policy must have before it can become a config.json: absolute
/// `[fs]` paths (relative ones are for `sandboy wrap`, which anchors them
/// with [`Policy::resolve_relative`]) and a command, from the policy or
/// from the base spec.
pub fn check_renderable(policy: &Policy, base: Option<&Spec>) -> Result<(), Error> {
    let mut diags: Vec<Diagnostic> = policy
        .relative
        .iter()
        .map(|r| {
            let suggestion = format!("/{}", r.written.trim_start_matches(['.', '~', '/']));
            diagnostic(
                &policy.file,
                r.location,
                r.span.clone(),
                r.grant.key(),
                format!("path \"{}\" is relative: relative paths are only for sandboy wrap; use an absolute path inside the container", r.written),
                Some(suggestion),
                "`sandboy wrap` anchors \".\" at its working directory and \"~\" at the home directory; a generated config.json needs container paths",
            )
        })
        .collect();
    let base_args = base
        .and_then(|b| b.process().as_ref())
        .and_then(|p| p.args().as_ref())
        .is_some_and(|a| !a.is_empty());
    if policy.args.is_empty() && !base_args {
        diags.push(diagnostic(
            &policy.file,
            Location::START,
            0..0,
            "process.args",
            "no command to run",
            None,
            "add [process] args = [\"/bin/sh\", \"-c\", \"make test\"], or pass --base with a config.json whose process.args is set",
        ));
    }
    if diags.is_empty() {
        Ok(())
    } else {
        Err(Error::Policy(diags))
    }
}

/// Render a checked policy into an OCI spec (see [`check_renderable`] for
/// what it refuses).
pub fn render(policy: &Policy, opts: &RenderOptions) -> Result<Spec, Error> {
    check_renderable(policy, opts.base.as_ref())?;
    let from_base = opts.base.is_some();
    let mut spec = opts.base.clone().unwrap_or_default();
    spec.set_version(if from_base {
        spec.version().clone()
    } else {
        OCI_VERSION.to_string()
    });
    if !from_base {
        spec.set_hostname(Some("sandboy".to_string()));
        spec.set_mounts(Some(standard_mounts()));
    }

    // Process.
    let mut process = spec.process().clone().unwrap_or_default();
    if !policy.args.is_empty() {
        process.set_args(Some(policy.args.clone()));
    }
    process.set_cwd(PathBuf::from(&policy.cwd));
    let env: Vec<String> = policy
        .env
        .iter()
        .cloned()
        .chain(proxy_env(policy))
        .collect();
    process.set_env(Some(merge_env(
        process.env().as_deref().filter(|_| from_base),
        &env,
    )));
    let mut user = process.user().clone();
    user.set_uid(policy.uid).set_gid(policy.gid);
    process.set_user(user);
    process.set_no_new_privileges(Some(true));
    process.set_terminal(Some(false));
    if !from_base {
        // runc's default set, minus inheritable and ambient: nothing is
        // handed across execve to a non-root user.
        let caps: Capabilities = [
            Capability::AuditWrite,
            Capability::Kill,
            Capability::NetBindService,
        ]
        .into_iter()
        .collect();
        let mut c = LinuxCapabilities::default();
        c.set_bounding(Some(caps.clone()))
            .set_effective(Some(caps.clone()))
            .set_permitted(Some(caps))
            .set_inheritable(None)
            .set_ambient(None);
        process.set_capabilities(Some(c));
    }
    set_nofile(&mut process, policy.nofile.unwrap_or(1024))?;
    spec.set_process(Some(process));

    // Root: read-only unless "/" itself is writable.
    let mut root = spec.root().clone().unwrap_or_default();
    if let Some(r) = &opts.rootfs {
        root.set_path(r.clone());
    } else if !from_base {
        root.set_path(PathBuf::from("rootfs"));
    }
    let root_writable = policy.write.iter().any(|w| w == "/");
    root.set_readonly(Some(!root_writable));
    spec.set_root(Some(root));

    // Mounts: base/standard, then policy binds and tmpfs for write paths,
    // parents before children.
    let mut mounts: Vec<Mount> = spec.mounts().clone().unwrap_or_default();
    let mut extra: Vec<Mount> = Vec::new();
    for b in &policy.mounts {
        extra.extend(policy_binds(policy, b));
    }
    let mut writes: Vec<&String> = policy.write.iter().filter(|w| *w != "/").collect();
    writes.sort_by_key(|w| (w.matches('/').count(), w.to_string()));
    // Whether each mount point gives writable storage; a later mount at the
    // same place wins, as it does in the kernel. Looking up a write path's
    // ancestors here finds its innermost covering mount without scanning
    // every mount per path (that made 20,000 write paths take seconds).
    let mut storage: HashMap<String, bool> = mounts
        .iter()
        .chain(&extra)
        .map(|m| (m.destination().to_string_lossy().into_owned(), writable(m)))
        .collect();
    let exec = ExecPaths::new(policy);
    for w in writes {
        let covered = Path::new(w.as_str())
            .ancestors()
            .find_map(|a| storage.get(a.to_string_lossy().as_ref()).copied());
        if covered != Some(true) {
            tracing::debug!(path = %w, covered = ?covered, "write path has no writable mount; adding tmpfs");
            extra.push(write_tmpfs(policy, &exec, w));
            storage.insert(w.to_string(), true);
        }
    }
    let new_dests: HashSet<&Path> = extra.iter().map(|m| m.destination().as_path()).collect();
    mounts.retain(|m| !new_dests.contains(m.destination().as_path()));
    extra.sort_by_key(|m| depth(m.destination()));
    mounts.extend(extra);
    spec.set_mounts(Some(mounts));

    // Annotations: base's, then ours on top.
    let mut ann: HashMap<String, String> = spec.annotations().clone().unwrap_or_default();
    ann.extend(annotations(policy));
    spec.set_annotations(Some(ann));

    // Linux.
    let mut linux = spec.linux().clone().unwrap_or_default();
    if !from_base {
        linux.set_masked_paths(Some(DEFAULT_MASKED.iter().map(|s| s.to_string()).collect()));
        linux.set_readonly_paths(Some(
            DEFAULT_READONLY.iter().map(|s| s.to_string()).collect(),
        ));
        linux.set_namespaces(Some(Vec::new()));
        // Deny every device node in the devices cgroup, as runc does; the
        // runtime adds back the standard ones (null, zero, tty, …).
        let mut deny_all = LinuxDeviceCgroup::default();
        deny_all
            .set_allow(false)
            .set_access(Some("rwm".to_string()));
        let mut res = LinuxResources::default();
        res.set_devices(Some(vec![deny_all]));
        linux.set_resources(Some(res));
    }
    let mut masked = linux.masked_paths().clone().unwrap_or_default();
    let mut seen: HashSet<String> = masked.iter().cloned().collect();
    for h in &policy.hide {
        if seen.insert(h.clone()) {
            masked.push(h.clone());
        }
    }
    linux.set_masked_paths(Some(masked));

    let mut namespaces = linux.namespaces().clone().unwrap_or_default();
    let mut wanted = vec![
        LinuxNamespaceType::Pid,
        LinuxNamespaceType::Ipc,
        LinuxNamespaceType::Uts,
        LinuxNamespaceType::Mount,
    ];
    match policy.net_namespace {
        NetNamespace::None => wanted.push(LinuxNamespaceType::Network),
        NetNamespace::Host => namespaces.retain(|n| n.typ() != LinuxNamespaceType::Network),
    }
    for typ in wanted {
        if !namespaces.iter().any(|n| n.typ() == typ) {
            let mut ns = LinuxNamespace::default();
            ns.set_typ(typ);
            namespaces.push(ns);
        }
    }
    linux.set_namespaces(Some(namespaces));

    let mut res = linux.resources().clone().unwrap_or_default();
    if let Some(m) = policy.memory {
        let mut mem = res.memory().unwrap_or_default();
        let m = i64::try_from(m.0).map_err(oci_err)?;
        mem.set_limit(Some(m));
        // On cgroup v1 the kernel charges TCP buffers to the container only
        // under a `memory.kmem.tcp` limit (a red team's 64 MiB container
        // held 262 MiB of them); v2 charges them to memory.max anyway.
        mem.set_kernel_tcp(Some(m));
        res.set_memory(Some(mem));
    }
    if let Some(p) = policy.pids {
        let mut pids = LinuxPids::default();
        pids.set_limit(p);
        res.set_pids(Some(pids));
    }
    if let Some(c) = policy.cpus {
        let mut cpu = res.cpu().clone().unwrap_or_default();
        cpu.set_period(Some(CPU_PERIOD_US));
        cpu.set_quota(Some((c * CPU_PERIOD_US as f64).round() as i64));
        res.set_cpu(Some(cpu));
    }
    linux.set_resources(Some(res));
    linux.set_seccomp(Some(seccomp(policy)));
    // No memfd may be executed (issue 14): the runtime applies this in the
    // container's own pid namespace, where it cannot be lowered.
    let mut sysctl = linux.sysctl().clone().unwrap_or_default();
    sysctl.insert(MEMFD_NOEXEC.to_string(), "2".to_string());
    linux.set_sysctl(Some(sysctl));
    spec.set_linux(Some(linux));
    Ok(spec)
}

/// `base` env overridden by `policy` env, key by key, base order first.
fn merge_env(base: Option<&[String]>, policy: &[String]) -> Vec<String> {
    let key = |e: &str| {
        e.split_once('=')
            .map_or(e.to_string(), |(k, _)| k.to_string())
    };
    let mut out: Vec<String> = Vec::new();
    for e in base.unwrap_or_default().iter().chain(policy) {
        let k = key(e);
        match out.iter_mut().find(|o| key(o) == k) {
            Some(slot) => *slot = e.clone(),
            None => out.push(e.clone()),
        }
    }
    out
}

pub(crate) fn set_nofile(process: &mut Process, n: u64) -> Result<(), Error> {
    let mut limits = process.rlimits().clone().unwrap_or_default();
    limits.retain(|r| r.typ() != PosixRlimitType::RlimitNofile);
    let r = PosixRlimitBuilder::default()
        .typ(PosixRlimitType::RlimitNofile)
        .hard(n)
        .soft(n)
        .build()
        .map_err(oci_err)?;
    limits.push(r);
    process.set_rlimits(Some(limits));
    Ok(())
}

/// `linux.seccomp`: allow by default, one rule for the deny list's
/// syscall names, then the argument rules of the guards it names
/// (see [`guards`]).
pub fn seccomp(policy: &Policy) -> LinuxSeccomp {
    let mut rules = Vec::new();
    let names: Vec<String> = policy
        .deny
        .iter()
        .filter(|d| guards::find(d).is_none())
        .cloned()
        .collect();
    if !names.is_empty() {
        let mut rule = LinuxSyscall::default();
        rule.set_names(names);
        match policy.action {
            SeccompAction::Errno => {
                rule.set_action(LinuxSeccompAction::ScmpActErrno);
                rule.set_errno_ret(Some(1));
            }
            SeccompAction::Kill => {
                rule.set_action(LinuxSeccompAction::ScmpActKillProcess);
            }
            SeccompAction::Log => {
                rule.set_action(LinuxSeccompAction::ScmpActLog);
            }
        }
        rules.push(rule);
    }
    rules.extend(guards::rules(policy));
    allow_but(rules)
}

/// The filter the runtime adds to a container with the egress annotation
/// ([`guards::egress`]): UDP, ICMP, raw and other families' sockets fail
/// with EPERM whatever the spec's own profile allows.
pub fn egress_seccomp() -> LinuxSeccomp {
    allow_but(guards::egress())
}

/// Allow by default, except `rules`.
fn allow_but(rules: Vec<LinuxSyscall>) -> LinuxSeccomp {
    let mut s = LinuxSeccomp::default();
    s.set_default_action(LinuxSeccompAction::ScmpActAllow);
    s.set_architectures(Some(vec![Arch::ScmpArchX86_64, Arch::ScmpArchAarch64]));
    s.set_syscalls(Some(rules));
    s
}

/// Canonical JSON text of a spec: sorted keys, two-space pretty, newline.
pub fn to_json(spec: &Spec) -> Result<String, Error> {
    let mut value = serde_json::to_value(spec).map_err(oci_err)?;
    // Capability sets are hash sets in oci-spec: give them a fixed order.
    if let Some(caps) = value
        .pointer_mut("/process/capabilities")
        .and_then(|c| c.as_object_mut())
    {
        for set in caps.values_mut() {
            if let Some(items) = set.as_array_mut() {
                items.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
            }
        }
    }
    let mut out = serde_json::to_string_pretty(&sorted(value)).map_err(oci_err)?;
    out.push('\n');
    Ok(out)
}

/// Rebuild every object with its keys in order; works whether or not
/// serde_json's `preserve_order` feature is on somewhere in the build.
fn sorted(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// Policy file → canonical config.json text, in one call (what `generate`
/// and the benchmark do): the rendered spec with its default user
/// namespace ([`crate::userns`]); when it keeps host ids, a warning says
/// why, since container root is then host root.
pub fn generate(policy: &Policy, opts: &RenderOptions) -> Result<String, Error> {
    generate_in(policy, opts, None)
}

/// [`generate`] for a bundle directory, against which a relative root is
/// checked to be within a mapped root's reach.
pub fn generate_in(
    policy: &Policy,
    opts: &RenderOptions,
    bundle: Option<&Path>,
) -> Result<String, Error> {
    let mut spec = render(policy, opts)?;
    if let Some(why) = crate::userns::apply(policy, &mut spec, bundle)? {
        tracing::warn!(
            "container root is host root (no user namespace): {why}; set [process] userns = true to map it anyway"
        );
    }
    to_json(&spec)
}
