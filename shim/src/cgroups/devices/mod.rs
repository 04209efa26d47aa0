//! Device access rules (`linux.resources.devices`).
//!
//! On every host, a container starts from "deny every device", as under
//! runc: a spec whose rules do not begin with a deny-all gets one put in
//! front (`needs_default_deny`, `with_default_deny`). libcgroups' v1
//! controller would otherwise start from the parent cgroup's allow-all, and
//! a container holding CAP_MKNOD could make and open any host device.
//!
//! cgroup v2 has no devices controller: device access is decided by an eBPF
//! program attached to the container's cgroup. libcgroups 0.7 only builds
//! that program behind a feature which also raises RLIMIT_MEMLOCK to 128 MiB
//! in the process that becomes the container's init (the container then
//! inherits it, unlike under runc) and fails outright without
//! CAP_SYS_RESOURCE; without the feature the rules are skipped silently. So
//! sandboy compiles the rules itself (`program`), loads the program before
//! anything is created (a kernel that refuses it stops `create` there), and
//! attaches it once libcontainer has built the cgroup, before the container
//! process can run (`start`). Kernels ≥ 5.11 charge BPF memory to the
//! memory cgroup, so no memlock limit is touched.
//!
//! Rules are the spec's followed by the devices every container gets (the
//! same defaults libcgroups writes on v1, as runc does): /dev/null, zero,
//! full, tty, random, urandom, console, ptmx, /dev/pts/*, /dev/net/tun, and
//! mknod of any device (opening what was made still needs a rule).

mod program;

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use libcontainer::container::Container;
use oci_spec::runtime::{LinuxDeviceCgroup, LinuxDeviceType, Spec};

use self::program::{Insn, Rule, ACC_MKNOD, ACC_READ, ACC_WRITE, DEV_BLOCK, DEV_CHAR};
use crate::error::{Failure, Result};

const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_PROG_ATTACH: libc::c_long = 8;
const BPF_PROG_TYPE_CGROUP_DEVICE: u32 = 15;
const BPF_CGROUP_DEVICE: u32 = 6;
/// Other programs on the same cgroup (a shared `cgroupsPath`) keep working;
/// every attached program must allow an access.
const BPF_F_ALLOW_MULTI: u32 = 2;

/// The device program of one container, loaded in the kernel.
pub struct Filter {
    prog: OwnedFd,
}

/// On a unified host, the container's device program, loaded; `None` on v1
/// and hybrid hosts, where libcgroups writes the v1 devices controller.
pub fn prepare(spec: &Spec, bundle: &Path, unified: bool) -> Result<Option<Filter>> {
    if !unified {
        return Ok(None);
    }
    let mut rules = spec_rules(spec, bundle)?;
    rules.extend(default_rules());
    load(&program::generate(&rules)).map(|prog| Some(Filter { prog }))
}

impl Filter {
    /// Attach to the container's cgroup (created by libcontainer by now).
    pub fn attach(&self, c: &Container) -> Result<()> {
        let dir = crate::cgroups::cgroup_dir(c, libcgroups::common::DEFAULT_CGROUP_ROOT)?;
        let fail = |e: std::io::Error| {
            Failure::runtime(format!(
                "device rules: cannot attach the eBPF program to {}: {e}",
                dir.display()
            ))
        };
        let cdir = CString::new(dir.as_os_str().as_bytes()).map_err(|e| fail(e.into()))?;
        // SAFETY: `cdir` is NUL-terminated; the fd is owned right below.
        let fd = unsafe {
            libc::open(
                cdir.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(fail(std::io::Error::last_os_error()));
        }
        // SAFETY: fd returned by a successful open, not owned elsewhere.
        let cgroup = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut attr = AttachAttr {
            target_fd: cgroup.as_raw_fd() as u32,
            attach_bpf_fd: self.prog.as_raw_fd() as u32,
            attach_type: BPF_CGROUP_DEVICE,
            attach_flags: BPF_F_ALLOW_MULTI,
            replace_bpf_fd: 0,
        };
        bpf(BPF_PROG_ATTACH, &mut attr).map(drop).map_err(fail)
    }
}

/// The spec's device rules, if any.
fn devices(spec: &Spec) -> Option<&Vec<LinuxDeviceCgroup>> {
    spec.linux()
        .as_ref()
        .and_then(|l| l.resources().as_ref())
        .and_then(|r| r.devices().as_ref())
}

/// Whether the rules do not start from "deny every device".
pub fn needs_default_deny(spec: &Spec) -> bool {
    !devices(spec).and_then(|d| d.first()).is_some_and(|first| {
        !first.allow()
            && matches!(first.typ().unwrap_or_default(), LinuxDeviceType::A)
            && first.major().is_none_or(|m| m < 0)
            && first.minor().is_none_or(|m| m < 0)
            && first
                .access()
                .as_deref()
                .is_none_or(|a| ['r', 'w', 'm'].iter().all(|c| a.contains(*c)))
    })
}

/// Put a deny-all rule in front of the spec's device rules.
pub fn with_default_deny(spec: &mut Spec) {
    let Some(mut linux) = spec.linux().clone() else {
        return;
    };
    let mut resources = linux.resources().clone().unwrap_or_default();
    let mut rules = resources.devices().clone().unwrap_or_default();
    let mut deny_all = LinuxDeviceCgroup::default();
    deny_all.set_allow(false);
    deny_all.set_access(Some("rwm".to_owned()));
    rules.insert(0, deny_all);
    resources.set_devices(Some(rules));
    linux.set_resources(Some(resources));
    spec.set_linux(Some(linux));
}

/// `linux.resources.devices`, checked.
fn spec_rules(spec: &Spec, bundle: &Path) -> Result<Vec<Rule>> {
    let Some(devices) = devices(spec) else {
        return Ok(Vec::new());
    };
    let mut rules = Vec::with_capacity(devices.len());
    for (i, d) in devices.iter().enumerate() {
        let bad = |what: String| {
            Failure::config(format!(
                "{}/config.json: linux.resources.devices[{i}]: {what}",
                bundle.display()
            ))
        };
        let typ = match d.typ().unwrap_or_default() {
            LinuxDeviceType::A => None,
            LinuxDeviceType::B => Some(DEV_BLOCK),
            LinuxDeviceType::C | LinuxDeviceType::U => Some(DEV_CHAR),
            // FIFOs are not devices the kernel asks the program about.
            LinuxDeviceType::P => continue,
        };
        let number = |n: Option<i64>, name: &str| match n {
            None => Ok(None),
            // runc's wildcard.
            Some(-1) => Ok(None),
            Some(n) if (0..=i64::from(program::MAX_NUMBER)).contains(&n) => Ok(Some(n as u32)),
            Some(n) => Err(bad(format!(
                "{name} {n} is out of range; use a device number or leave it out for any"
            ))),
        };
        let access = d.access().as_deref().unwrap_or("rwm");
        let mut bits = 0;
        for ch in access.chars() {
            bits |= match ch {
                'r' => ACC_READ,
                'w' => ACC_WRITE,
                'm' => ACC_MKNOD,
                _ => {
                    return Err(bad(format!(
                        "access {access:?}: {ch:?} is not one of r, w, m"
                    )))
                }
            };
        }
        rules.push(Rule {
            allow: d.allow(),
            typ,
            major: number(d.major(), "major")?,
            minor: number(d.minor(), "minor")?,
            access: bits,
        });
    }
    Ok(rules)
}

/// What every container may use (libcgroups' and runc's defaults).
fn default_rules() -> Vec<Rule> {
    let rwm = ACC_MKNOD | ACC_READ | ACC_WRITE;
    let chr = |major, minor: Option<u32>, access| Rule {
        allow: true,
        typ: Some(DEV_CHAR),
        major,
        minor,
        access,
    };
    let mut rules: Vec<Rule> = [
        (1, 3),    // null
        (1, 5),    // zero
        (1, 7),    // full
        (5, 0),    // tty
        (1, 9),    // urandom
        (1, 8),    // random
        (5, 1),    // console
        (5, 2),    // ptmx
        (10, 200), // tun
    ]
    .into_iter()
    .map(|(major, minor)| chr(Some(major), Some(minor), rwm))
    .collect();
    rules.push(chr(Some(136), None, rwm)); // /dev/pts/*
    rules.push(chr(None, None, ACC_MKNOD));
    rules.push(Rule {
        typ: Some(DEV_BLOCK),
        ..chr(None, None, ACC_MKNOD)
    });
    rules
}

/// `union bpf_attr` for BPF_PROG_LOAD, up to the fields used.
#[repr(C)]
#[derive(Default)]
struct LoadAttr {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
}

/// `union bpf_attr` for BPF_PROG_ATTACH.
#[repr(C)]
struct AttachAttr {
    target_fd: u32,
    attach_bpf_fd: u32,
    attach_type: u32,
    attach_flags: u32,
    replace_bpf_fd: u32,
}

fn bpf<T>(cmd: libc::c_long, attr: &mut T) -> std::io::Result<libc::c_long> {
    // SAFETY: `attr` is a valid, initialised `union bpf_attr` prefix of the
    // size passed; the kernel reads (and for logs writes) only within it and
    // the buffers it points to, which outlive the call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr as *mut T,
            std::mem::size_of::<T>() as libc::c_uint,
        )
    };
    if ret < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Load the program; on refusal, load again with the verifier log so the
/// error says why.
fn load(insns: &[Insn]) -> Result<OwnedFd> {
    let license = c"Apache-2.0";
    let mut name = [0u8; 16];
    name[..7].copy_from_slice(b"sandboy");
    let attr = |log: &mut Vec<u8>| LoadAttr {
        prog_type: BPF_PROG_TYPE_CGROUP_DEVICE,
        insn_cnt: insns.len() as u32,
        insns: insns.as_ptr() as u64,
        license: license.as_ptr() as u64,
        log_level: u32::from(!log.is_empty()),
        log_size: log.len() as u32,
        log_buf: log.as_mut_ptr() as u64,
        prog_name: name,
        ..LoadAttr::default()
    };
    let loaded = bpf(BPF_PROG_LOAD, &mut attr(&mut Vec::new())).or_else(|e| {
        let mut log = vec![0u8; 64 * 1024];
        bpf(BPF_PROG_LOAD, &mut attr(&mut log)).map_err(|_| {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            (e, String::from_utf8_lossy(&log[..end]).trim().to_owned())
        })
    });
    match loaded {
        // SAFETY: BPF_PROG_LOAD returned a new program fd we own.
        Ok(fd) => Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) }),
        Err((e, log)) => Err(Failure::runtime(format!(
            "device rules: the kernel refused the cgroup v2 device program: {e}{}{log}; \
             sandboy needs BPF_PROG_TYPE_CGROUP_DEVICE (CONFIG_CGROUP_BPF) on a cgroup v2 host",
            if log.is_empty() { "" } else { ": " }
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_with(devices: serde_json::Value) -> Spec {
        crate::test_support::spec_with_resources(serde_json::json!({ "devices": devices }))
    }

    #[test]
    fn spec_rules_are_checked_with_their_index() {
        let spec = spec_with(serde_json::json!([
            {"allow": false, "access": "rwm"},
            {"allow": true, "type": "c", "major": 1, "minor": 3, "access": "rx"}
        ]));
        let e = spec_rules(&spec, Path::new("/b")).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.message
                .contains("/b/config.json: linux.resources.devices[1]: access \"rx\": 'x'"),
            "{}",
            e.message
        );
        let spec = spec_with(serde_json::json!([{"allow": true, "type": "b", "major": -7}]));
        let e = spec_rules(&spec, Path::new("/b")).unwrap_err();
        assert!(
            e.message.contains("devices[0]: major -7 is out of range"),
            "{}",
            e.message
        );
    }

    #[test]
    fn spec_rules_map_types_wildcards_and_access() {
        let spec = spec_with(serde_json::json!([
            {"allow": false},
            {"allow": true, "type": "u", "major": 4, "minor": -1, "access": "rw"},
            {"allow": true, "type": "p", "access": "rwm"}
        ]));
        let rules = spec_rules(&spec, Path::new("/b")).unwrap();
        assert_eq!(
            rules,
            vec![
                Rule {
                    allow: false,
                    typ: None,
                    major: None,
                    minor: None,
                    access: ACC_MKNOD | ACC_READ | ACC_WRITE
                },
                Rule {
                    allow: true,
                    typ: Some(DEV_CHAR),
                    major: Some(4),
                    minor: None,
                    access: ACC_READ | ACC_WRITE
                },
            ]
        );
    }

    #[test]
    fn rules_get_a_deny_all_in_front_unless_they_start_with_one() {
        for (rules, needs) in [
            (serde_json::json!([]), true),
            (
                serde_json::json!([{"allow": true, "type": "c", "major": 1, "minor": 3}]),
                true,
            ),
            (
                serde_json::json!([{"allow": false, "type": "c", "major": 1}]),
                true,
            ),
            (serde_json::json!([{"allow": false, "access": "rw"}]), true),
            (serde_json::json!([{"allow": false}]), false),
            (
                serde_json::json!([{"allow": false, "type": "a", "access": "rwm"}]),
                false,
            ),
            (
                serde_json::json!([{"allow": false, "major": -1, "minor": -1, "access": "mwr"}]),
                false,
            ),
        ] {
            let mut spec = spec_with(rules.clone());
            assert_eq!(needs_default_deny(&spec), needs, "{rules}");
            if needs {
                with_default_deny(&mut spec);
                assert!(!needs_default_deny(&spec), "{rules}");
                assert_eq!(
                    devices(&spec).unwrap().len(),
                    rules.as_array().unwrap().len() + 1
                );
            }
        }
        let mut bare: Spec = serde_json::from_value(serde_json::json!({
            "ociVersion": "1.0.2", "root": {"path": "rootfs"}, "linux": {}
        }))
        .unwrap();
        assert!(needs_default_deny(&bare));
        with_default_deny(&mut bare);
        assert!(!needs_default_deny(&bare));
    }

    /// The verifier, not our reading of it, accepts what `program` emits for
    /// a podman-shaped rule list (root only: loading needs CAP_BPF).
    #[test]
    fn kernel_verifier_accepts_the_program() {
        if !sandboy_tests::need_root("kernel_verifier_accepts_the_program") {
            return;
        }
        let spec = spec_with(serde_json::json!([
            {"allow": false, "access": "rwm"},
            {"allow": true, "type": "c", "major": 10, "minor": 229, "access": "rwm"},
            {"allow": false, "type": "c", "major": 1, "minor": 3, "access": "w"},
            {"allow": true, "type": "b", "major": 8, "access": "r"}
        ]));
        let mut rules = spec_rules(&spec, Path::new("/b")).unwrap();
        rules.extend(default_rules());
        load(&program::generate(&rules)).unwrap();
        // Every rule set shape the generator can end with is loadable too.
        load(&program::generate(&[])).unwrap();
        let all = Rule {
            allow: true,
            typ: None,
            major: None,
            minor: None,
            access: ACC_MKNOD | ACC_READ | ACC_WRITE,
        };
        load(&program::generate(&[all])).unwrap();
        load(&program::generate(&[Rule {
            allow: false,
            ..all
        }]))
        .unwrap();
    }
}
