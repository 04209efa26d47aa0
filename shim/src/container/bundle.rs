//! Reading and checking a bundle before libcontainer sees it, so that a bad
//! `config.json` is reported with file:line:column and exit 2, and nothing
//! has been created yet when it is.

use std::fs;
use std::path::{Path, PathBuf};

use oci_spec::runtime::Spec;
use sandboy_spec_gen::annotations::{self, LandlockRuleset, WasmLimits};
use sandboy_spec_gen::policy::{Egress, EgressWire};
use sandboy_spec_gen::units::Span;

use crate::error::{Failure, Result};

/// A bundle whose config.json parsed and passed sandboy's checks.
pub struct Bundle {
    pub dir: PathBuf,
    pub spec: Spec,
    /// `linux.seccomp`, compiled while checking the bundle; handed to the
    /// container's init so it is not compiled a second time there.
    pub seccomp: Option<sandboy_confine::CompiledSeccomp>,
}

impl Bundle {
    /// Load and check `dir/config.json`; its seccomp profile is compiled
    /// through the cache in `seccomp_cache` (a node runs thousands of
    /// containers with the same engine profile: it is compiled once).
    pub fn load(dir: &Path, seccomp_cache: &Path) -> Result<Self> {
        let dir = fs::canonicalize(dir).map_err(|e| {
            Failure::config(format!(
                "bundle {}: {e}; pass --bundle with a directory holding config.json",
                dir.display()
            ))
        })?;
        let path = dir.join("config.json");
        let text = sandboy_spec_gen::input::read_bytes(
            &path,
            sandboy_spec_gen::input::TEXT_MAX,
            0,
        )
        .map_err(|e| {
            Failure::config(format!(
                "{}: {e}; a bundle needs a config.json (create one with `sandboy spec` or `sandboy-spec-gen generate`)",
                path.display()
            ))
        })?;
        let spec: Spec = super::compat::parse_spec(&text).map_err(|e| {
            Failure::config(format!(
                "{}:{}:{}: invalid config.json: {}; fix the field to match the OCI runtime-spec",
                path.display(),
                e.line(),
                e.column(),
                sandboy_spec_gen::json_message(&e)
            ))
        })?;
        let seccomp = check(&spec, &dir, &path, seccomp_cache)?;
        Ok(Self { dir, spec, seccomp })
    }

    /// The rootfs directory (root.path, relative to the bundle).
    pub fn rootfs(&self) -> PathBuf {
        self.dir
            .join(self.spec.root().as_ref().expect("checked by load").path())
    }
}

/// Checks libcontainer would only notice after forking, or not at all.
fn check(
    spec: &Spec,
    dir: &Path,
    path: &Path,
    seccomp_cache: &Path,
) -> Result<Option<sandboy_confine::CompiledSeccomp>> {
    let at = path.display();
    if !spec.version().starts_with("1.") {
        return Err(Failure::config(format!(
            "{at}: ociVersion {:?} is not supported; use a 1.x runtime-spec version",
            spec.version()
        )));
    }
    let process = spec.process().as_ref().ok_or_else(|| {
        Failure::config(format!(
            "{at}: \"process\" is missing; add a process with args"
        ))
    })?;
    if process.args().as_ref().is_none_or(|a| a.is_empty()) {
        return Err(Failure::config(format!(
            "{at}: process.args is empty; give the command to run, e.g. [\"/bin/sh\"]"
        )));
    }
    if !process.cwd().is_absolute() {
        return Err(Failure::config(format!(
            "{at}: process.cwd {:?} must be an absolute path",
            process.cwd()
        )));
    }
    check_process(process, &at.to_string())?;
    let root = spec.root().as_ref().ok_or_else(|| {
        Failure::config(format!(
            "{at}: \"root\" is missing; set root.path to the rootfs"
        ))
    })?;
    let rootfs = dir.join(root.path());
    if !rootfs.is_dir() {
        return Err(Failure::config(format!(
            "{at}: root.path {} does not exist or is not a directory",
            rootfs.display()
        )));
    }
    mapped_root_reaches(spec, &rootfs, &at.to_string())?;
    if let Some(mounts) = spec.mounts() {
        super::mounts::check(mounts, &rootfs, &at.to_string())?;
        super::mounts::check_nested_sources(mounts, &at.to_string())?;
    }
    let Some(linux) = spec.linux() else {
        return Err(Failure::config(format!("{at}: \"linux\" is missing")));
    };
    if let Some(p) = linux.cgroups_path() {
        if crate::cgroups::remove::below_root(p).is_none() {
            return Err(Failure::config(format!(
                "{at}: linux.cgroupsPath {:?} climbs out of the cgroup hierarchy (a \"..\" component); give a path below it without \"..\", e.g. \"/sandboy/<id>\", or leave it out",
                p.display().to_string()
            )));
        }
    }
    super::namespaces::check(spec, &at.to_string())?;
    check_values(spec, &at.to_string())?;
    let decoded = Annotations::decode(spec).map_err(|e| e.context(&at))?;
    // The gateway's sockets live in the container's own network namespace;
    // on a shared one the rules would hold nothing back.
    if decoded.egress.is_some() && !super::loopback::wants_new_netns(spec) {
        return Err(Failure::config(format!(
            "{at}: annotation {} needs a new network namespace (linux.namespaces: {{\"type\": \"network\"}} without a path); egress rules cannot be enforced on a shared network",
            annotations::EGRESS
        )));
    }
    // What can be checked without the kernel is checked here, so a bad
    // ruleset or profile is a config error (exit 2) before anything exists;
    // the container's init then only meets kernel failures.
    if let Some(rs) = &decoded.landlock {
        sandboy_confine::landlock::rule_bits(rs).map_err(|e| {
            Failure::config(format!("{at}: annotation {}: {e}", annotations::LANDLOCK))
        })?;
    }
    spec.linux()
        .as_ref()
        .and_then(|l| l.seccomp().as_ref())
        .map(|profile| {
            sandboy_confine::seccomp::compile_cached(profile, seccomp_cache)
                .map_err(|e| Failure::config(format!("{at}: linux.seccomp: {e}")))
        })
        .transpose()
}

/// Values libcontainer would take to the kernel and fail on after the
/// container exists (exit 1, from deep inside the init), or not check at
/// all (a hook's timeout of 0 never fired, a relative hook path was looked
/// up from whatever the runtime's cwd was).
fn check_values(spec: &Spec, at: &str) -> Result<()> {
    let refused = |(field, why): (String, String)| Failure::config(format!("{at}: {field} {why}"));
    process_values(spec)
        .or_else(|| names(spec))
        .or_else(|| memory_values(spec))
        .or_else(|| hook_values(spec))
        .map_or(Ok(()), |r| Err(refused(r)))
}

/// A refused value: the field (with the value) and why, with the fix.
type Refusal = Option<(String, String)>;

fn process_values(spec: &Spec) -> Refusal {
    use sandboy_spec_gen::policy::{NOFILE_FLOOR, NOFILE_FLOOR_WHY};
    let process = spec.process().as_ref()?;
    if let Some(adj) = process
        .oom_score_adj()
        .filter(|a| !(-1000..=1000).contains(a))
    {
        return Some((
            format!("process.oomScoreAdj {adj}"),
            "is outside the kernel's range; give a value from -1000 to 1000".into(),
        ));
    }
    process.rlimits().iter().flatten().enumerate().find_map(|(i, r)| {
        let low = r.soft().min(r.hard());
        (r.typ() == oci_spec::runtime::PosixRlimitType::RlimitNofile && low < NOFILE_FLOOR).then(
            || {
                (
                    format!("process.rlimits[{i}] RLIMIT_NOFILE {low}"),
                    format!("is below {NOFILE_FLOOR}: {NOFILE_FLOOR_WHY}; raise soft and hard to at least {NOFILE_FLOOR}"),
                )
            },
        )
    })
}

/// HOST_NAME_MAX: sethostname and setdomainname take no more.
fn names(spec: &Spec) -> Refusal {
    [
        ("hostname", spec.hostname()),
        ("domainname", spec.domainname()),
    ]
    .into_iter()
    .find_map(|(field, name)| {
        let n = name.as_ref().filter(|n| n.len() > 64)?;
        Some((
            field.to_owned(),
            format!(
                "is {} bytes; the kernel takes at most 64, shorten it",
                n.len()
            ),
        ))
    })
}

fn memory_values(spec: &Spec) -> Refusal {
    let m = spec
        .linux()
        .as_ref()?
        .resources()
        .as_ref()?
        .memory()
        .as_ref()?;
    [
        ("limit", m.limit()),
        ("swap", m.swap()),
        ("reservation", m.reservation()),
    ]
    .into_iter()
    .find_map(|(field, v)| {
        let v = v.filter(|&v| v < -1)?;
        Some((
            format!("linux.resources.memory.{field} {v}"),
            "is negative; give a number of bytes, or -1 for unlimited".into(),
        ))
    })
}

fn hook_values(spec: &Spec) -> Refusal {
    let hooks = spec.hooks().as_ref()?;
    let kinds = [
        ("prestart", hooks.prestart()),
        ("createRuntime", hooks.create_runtime()),
        ("createContainer", hooks.create_container()),
        ("startContainer", hooks.start_container()),
        ("poststart", hooks.poststart()),
        ("poststop", hooks.poststop()),
    ];
    kinds.into_iter().find_map(|(kind, list)| {
        list.iter().flatten().enumerate().find_map(|(i, hook)| {
            if !hook.path().is_absolute() {
                let path = hook.path().display().to_string();
                return Some((
                    format!("hooks.{kind}[{i}].path {path:?}"),
                    "is relative; give the hook's absolute path".into(),
                ));
            }
            let t = hook.timeout().filter(|&t| t <= 0)?;
            Some((
                format!("hooks.{kind}[{i}].timeout {t}"),
                "is not positive; give a number of seconds above 0, or leave timeout out".into(),
            ))
        })
    })
}

/// What the kernel would misread in a process (config.json's, or an
/// `exec --process` file at `at`): an id of 4294967295 is `(uid_t)-1`,
/// which `setresuid` takes as "leave unchanged", so a red team's step
/// with that user ran as root; a NUL byte in an environment entry or an
/// argument panicked the container's init.
pub fn check_process(process: &oci_spec::runtime::Process, at: &str) -> Result<()> {
    let user = process.user();
    let ids = [("uid", user.uid()), ("gid", user.gid())]
        .into_iter()
        .chain(
            user.additional_gids()
                .iter()
                .flatten()
                .map(|&g| ("additionalGids", g)),
        );
    for (field, id) in ids {
        real_id(id).map_err(|why| Failure::config(format!("{at}: process.user.{field} {why}")))?;
    }
    for (i, e) in process.env().iter().flatten().enumerate() {
        if e.contains('\0') || !e.contains('=') || e.starts_with('=') {
            return Err(Failure::config(format!(
                "{at}: process.env[{i}] {e:?} is not NAME=VALUE without NUL bytes; fix or remove the entry"
            )));
        }
    }
    if let Some(i) = process
        .args()
        .iter()
        .flatten()
        .position(|a| a.contains('\0'))
    {
        return Err(Failure::config(format!(
            "{at}: process.args[{i}] holds a NUL byte, which no program argument can; remove it"
        )));
    }
    Ok(())
}

/// A user or group id the kernel takes as an id: 4294967295 is
/// `(uid_t)-1`, which `setresuid` reads as "leave unchanged", so a process
/// given it keeps the runtime's (root's). The one check for config.json, an
/// `exec --process` file and `exec --user`; the error says why and the fix,
/// the caller names the field.
pub fn real_id(id: u32) -> std::result::Result<u32, String> {
    if id == u32::MAX {
        return Err("4294967295 is (uid_t)-1, which the kernel takes as \"leave the id unchanged\" (the process would keep the runtime's, root's); give a real id such as 65534".to_owned());
    }
    Ok(id)
}

/// Whether the spec makes a new namespace of type `typ` (not joined by
/// path).
fn own_namespace(spec: &Spec, typ: oci_spec::runtime::LinuxNamespaceType) -> bool {
    spec.linux()
        .as_ref()
        .and_then(|l| l.namespaces().as_ref())
        .is_some_and(|ns| ns.iter().any(|n| n.typ() == typ && n.path().is_none()))
}

/// Whether the spec makes a new pid namespace (not joined by path).
pub fn own_pid_namespace(spec: &Spec) -> bool {
    own_namespace(spec, oci_spec::runtime::LinuxNamespaceType::Pid)
}

/// Whether root is creating a container with a user namespace of its own:
/// the container's root is then a mapped id, which host-owned directories
/// treat as "others" (its rootfs must be searchable, its mount points made
/// beforehand).
pub fn root_maps_a_user_namespace(spec: &Spec) -> bool {
    own_namespace(spec, oci_spec::runtime::LinuxNamespaceType::User)
        && rustix::process::geteuid().is_root()
}

/// `dev.sandboy.timeout`, parsed (at create to refuse a bad one, and again
/// by whichever command starts the watcher, from the saved state).
pub fn timeout(map: &std::collections::HashMap<String, String>) -> Result<Option<Span>> {
    map.get(annotations::TIMEOUT)
        .map(|v| {
            let span = Span::parse(v)
                .map_err(|e| Failure::config(format!("annotation {}: {e}", annotations::TIMEOUT)))?;
            // As a policy's `[limits] timeout`: zero would kill the
            // container before its process ran, an accident, not a limit.
            if span.as_millis() == 0 {
                return Err(Failure::config(format!(
                    "annotation {}: {v:?} is zero; give a positive duration, e.g. \"30s\", or leave the annotation out for no timeout",
                    annotations::TIMEOUT
                )));
            }
            Ok(span)
        })
        .transpose()
}

/// `dev.sandboy.egress`, decoded and every rule checked again (fail closed:
/// a bad rule is a config error, never an open network).
pub fn egress(map: &std::collections::HashMap<String, String>) -> Result<Option<(Egress, u16)>> {
    let Some(v) = map.get(annotations::EGRESS) else {
        return Ok(None);
    };
    let wire = EgressWire::decode(v).map_err(|e| Failure::config(e.to_string()))?;
    let rules = Egress::from_wire(&wire).map_err(|e| {
        Failure::config(format!(
            "annotation {}: {}; {}",
            annotations::EGRESS,
            e.message,
            e.hint
        ))
    })?;
    Ok(Some((rules, wire.proxy_port)))
}

/// sandboy's annotations, decoded.
#[derive(Debug, Clone, Default)]
pub struct Annotations {
    pub landlock: Option<LandlockRuleset>,
    pub timeout: Option<Span>,
    pub wasm_limits: Option<WasmLimits>,
    /// `dev.sandboy.egress`: the gateway's rules and its proxy port.
    pub egress: Option<(Egress, u16)>,
}

impl Annotations {
    pub fn decode(spec: &Spec) -> Result<Self> {
        let mut out = Annotations::default();
        let Some(map) = spec.annotations() else {
            return Ok(out);
        };
        let mut keys: Vec<&String> = map.keys().collect();
        keys.sort_unstable();
        for key in keys {
            annotations::check_key(key).map_err(|e| Failure::config(e.to_string()))?;
        }
        if let Some(v) = map.get(annotations::LANDLOCK) {
            out.landlock =
                Some(LandlockRuleset::decode(v).map_err(|e| Failure::config(e.to_string()))?);
        }
        out.timeout = timeout(map)?;
        out.egress = egress(map)?;
        if let Some(v) = map.get(annotations::WASM_LIMITS) {
            out.wasm_limits =
                Some(WasmLimits::decode(v).map_err(|e| Failure::config(e.to_string()))?);
        }
        Ok(out)
    }
}

/// A container with a user namespace of its own, made by root, mounts its
/// rootfs as the mapped root, which host directories that others cannot
/// search keep out: said here, rather than libcontainer's bare EACCES
/// from "bind mount rootfs".
fn mapped_root_reaches(spec: &Spec, rootfs: &Path, at: &str) -> Result<()> {
    if !root_maps_a_user_namespace(spec) {
        return Ok(());
    }
    match sandboy_spec_gen::userns::unsearchable(rootfs) {
        Some((dir, mode)) => Err(Failure::config(format!(
            "{at}: the container has a user namespace, and its root filesystem {} is out of the mapped root's reach: {} is mode {mode:o}; chmod o+x {}, or generate the bundle with [process] userns = false",
            rootfs.display(),
            dir.display(),
            dir.display()
        ))),
        None => Ok(()),
    }
}
