//! Differential compatibility table: each row edits the busybox bundle's
//! config.json, runs it under runc and under sandboy (`run`, foreground),
//! and requires the same outcome: both start or both refuse, and a started
//! container prints the same thing (what it sees of its mounts, status,
//! environment). A row sandboy still gets wrong stays in the table as a
//! known difference and is reported with `skip`, never passed silently. A
//! field this host's runc (1.1.5) predates is compared with crun instead.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use sandboy_tests::*;
use serde_json::{json, Value};

/// Where the bundle lives on the host: its rootfs propagation outcome
/// depends on the propagation of the mount holding it.
#[derive(Clone, Copy, Debug)]
enum Place {
    /// A plain temporary directory (on the host's `/`).
    Host,
    /// On a tmpfs made shared.
    Shared,
    /// On a slave of a shared tmpfs.
    Slave,
}

/// What a row's edit may use besides the config.
struct Ctx<'a> {
    rootfs: &'a Path,
    /// A host directory for files a hook writes (compared after the run).
    scratch: &'a Path,
}

/// A row's change to config.json.
type Edit = Box<dyn Fn(&mut Value, &Ctx)>;

struct Row {
    name: String,
    place: Place,
    edit: Edit,
    /// The container's command (`sh -c SCRIPT`).
    script: &'static str,
    /// A known difference: the row runs but a mismatch is a skip with this reason.
    known: Option<&'static str>,
    /// Compared with crun instead of runc, for this reason (a field this
    /// host's runc predates).
    crun: Option<&'static str>,
}

fn row(name: &str, script: &'static str, edit: impl Fn(&mut Value, &Ctx) + 'static) -> Row {
    Row {
        name: name.into(),
        place: Place::Host,
        edit: Box::new(edit),
        script,
        known: None,
        crun: None,
    }
}

/// Prints the mount point and optional (propagation) fields of `/`.
const ROOT_PROPAGATION: &str =
    r#"awk '$5=="/"{s=$5; for(i=7;$i!="-";i++) s=s" "$i; print s}' /proc/self/mountinfo"#;

fn table() -> Vec<Row> {
    let mut rows = Vec::new();
    for place in [Place::Host, Place::Shared, Place::Slave] {
        for value in [
            None,
            Some("private"),
            Some("rprivate"),
            Some("slave"),
            Some("rslave"),
            Some("shared"),
            Some("rshared"),
            Some("unbindable"),
            Some("runbindable"),
        ] {
            let mut r = row(
                &format!(
                    "rootfsPropagation={} on {place:?}",
                    value.unwrap_or("(none)")
                ),
                ROOT_PROPAGATION,
                move |c, _| {
                    if let Some(v) = value {
                        c["linux"]["rootfsPropagation"] = json!(v);
                    }
                },
            );
            r.place = place;
            rows.push(r);
        }
    }
    rows.push(row(
        "proc, mqueue and tmpfs mounts without source",
        "awk '$5==\"/proc\"||$5==\"/dev/mqueue\"||$5==\"/tmp\"{print $5, $9, $10}' /proc/self/mountinfo",
        |c, _| {
            for m in c["mounts"].as_array_mut().unwrap() {
                if ["proc", "mqueue", "tmpfs"].contains(&m["type"].as_str().unwrap_or("")) {
                    m.as_object_mut().unwrap().remove("source");
                }
            }
        },
    ));
    let cwd = row("missing process.cwd is created", "pwd", |c, _| {
        c["process"]["cwd"] = json!("/no/such/dir");
    });
    rows.push(cwd);
    rows.push(row(
        "missing process.cwd on a tmpfs mount",
        "pwd",
        |c, _| {
            c["process"]["cwd"] = json!("/tmp/no/such/dir");
        },
    ));
    rows.push(row(
        "HOME for a uid without a passwd entry",
        "echo \"HOME=$HOME\"; id -u",
        |c, _| {
            c["process"]["user"] = json!({"uid": 4321, "gid": 4321});
            let env = c["process"]["env"].as_array_mut().unwrap();
            env.retain(|e| !e.as_str().unwrap().starts_with("HOME="));
        },
    ));
    rows.push(row(
        "tmpfs mode= kept on the mount point",
        "stat -c %a /mnt/t",
        |c, _| {
            c["mounts"].as_array_mut().unwrap().push(json!({
                "destination": "/mnt/t", "type": "tmpfs", "source": "tmpfs",
                "options": ["nosuid", "mode=0712"]
            }));
        },
    ));
    let dangling = row(
        "bind mount onto a dangling symlink",
        "cat /nowhere/hostname >/dev/null && echo mounted",
        |c, ctx| {
            std::os::unix::fs::symlink("/nowhere", ctx.rootfs.join("dangle")).unwrap();
            c["mounts"].as_array_mut().unwrap().push(json!({
                "destination": "/dangle", "type": "bind", "source": "/etc",
                "options": ["rbind", "ro"]
            }));
        },
    );
    rows.push(dangling);
    let caps = row(
        "inheritable = bounding = [CAP_SYS_ADMIN], no permitted/effective",
        "grep -E '^Cap(Inh|Prm|Eff|Bnd)' /proc/self/status",
        |c, _| {
            c["process"]["capabilities"] = json!({
                "bounding": ["CAP_SYS_ADMIN"], "inheritable": ["CAP_SYS_ADMIN"],
                "permitted": [], "effective": [], "ambient": []
            });
        },
    );
    rows.push(caps);
    let held = row(
        "CAP_SYS_ADMIN bounding only, with seccomp and no noNewPrivileges",
        "grep -E '^Cap(Inh|Prm|Eff|Bnd)' /proc/self/status",
        |c, _| {
            c["process"]["noNewPrivileges"] = json!(false);
            c["process"]["capabilities"] = json!({
                "bounding": ["CAP_SYS_ADMIN", "CAP_CHOWN"], "inheritable": ["CAP_SYS_ADMIN"],
                "permitted": ["CAP_CHOWN"], "effective": ["CAP_CHOWN"], "ambient": []
            });
            c["linux"]["seccomp"] = json!({"defaultAction": "SCMP_ACT_ALLOW"});
        },
    );
    rows.push(held);
    let sched = row("SCHED_FIFO with no capabilities", "echo started", |c, _| {
        c["process"]["scheduler"] = json!({"policy": "SCHED_FIFO", "priority": 1,
                "flags": ["SCHED_FLAG_RESET_ON_FORK"]});
    });
    rows.push(sched);
    let outside = row(
        "device path outside /dev",
        "ls -l /mydev/null | cut -c1",
        |c, _| {
            c["linux"]["devices"] = json!([{"path": "/mydev/null", "type": "c",
                "major": 1, "minor": 3, "fileMode": 438, "uid": 0, "gid": 0}]);
        },
    );
    rows.push(outside);
    rows.push(row(
        "device rules with the host /dev rbind-mounted",
        "test -c /dev/null && echo null",
        |c, _| {
            let mounts = c["mounts"].as_array_mut().unwrap();
            mounts.retain(|m| !m["destination"].as_str().unwrap().starts_with("/dev"));
            mounts.push(
                json!({"destination": "/dev", "type": "bind", "source": "/dev",
                "options": ["rbind", "rw"]}),
            );
        },
    ));
    let hook = row(
        "a hook without env inherits the runtime's environment",
        "true",
        |c, ctx| {
            let out = ctx.scratch.join("hook-env");
            c["hooks"] = json!({"prestart": [{"path": "/bin/sh",
                "args": ["sh", "-c", format!("echo \"${{COMPAT_MARK:-unset}}\" > {}", out.display())]}]});
        },
    );
    rows.push(hook);
    rows.push(row("process.rlimits", "ulimit -n; ulimit -Hn", |c, _| {
        c["process"]["rlimits"] = json!([{"type": "RLIMIT_NOFILE", "soft": 321, "hard": 654}]);
    }));
    rows.push(row(
        "process.oomScoreAdj",
        "cat /proc/self/oom_score_adj",
        |c, _| {
            c["process"]["oomScoreAdj"] = json!(123);
        },
    ));
    rows.push(row(
        "linux.sysctl in the container's namespaces",
        "cat /proc/sys/kernel/shm_rmid_forced /proc/sys/net/ipv4/ip_unprivileged_port_start",
        |c, _| {
            c["linux"]["sysctl"] = json!({"kernel.shm_rmid_forced": "1",
                "net.ipv4.ip_unprivileged_port_start": "0"});
        },
    ));
    rows.push(row(
        "linux.sysctl of the host's namespace is refused",
        "true",
        |c, _| {
            c["linux"]["sysctl"] = json!({"kernel.pid_max": "32768"});
        },
    ));
    let mut personality = row("linux.personality LINUX32", "uname -m", |c, _| {
        c["linux"]["personality"] = json!({"domain": "LINUX32"});
    });
    personality.crun =
        Some("runc 1.1.5 predates linux.personality (added in runc 1.2) and ignores it");
    rows.push(personality);
    rows.push(row("process.ioPriority", "echo started", |c, _| {
        c["process"]["ioPriority"] = json!({"class": "IOPRIO_CLASS_BE", "priority": 3});
    }));
    rows.push(row(
        "uid/gid mappings in a user namespace",
        "id -u; id -g; cat /proc/self/uid_map /proc/self/gid_map",
        |c, _| {
            c["linux"]["namespaces"]
                .as_array_mut()
                .unwrap()
                .push(json!({"type": "user"}));
            c["linux"]["uidMappings"] =
                json!([{"containerID": 0, "hostID": 200000, "size": 65536}]);
            c["linux"]["gidMappings"] =
                json!([{"containerID": 0, "hostID": 200000, "size": 65536}]);
        },
    ));
    rows
}

/// A mount made for a row (shared or slave tmpfs), unmounted on drop.
struct PlaceMount {
    dirs: TempDir,
    mounted: Vec<PathBuf>,
    at: PathBuf,
}

impl PlaceMount {
    fn new(place: Place) -> Option<Self> {
        let dirs = TempDir::new("compat-mnt");
        let master = dirs.path().join("master");
        fs::create_dir(&master).unwrap();
        let sh =
            |args: &[&str]| assert!(Command::new("mount").args(args).status().unwrap().success());
        let m = master.to_str().unwrap();
        let mut pm = PlaceMount {
            mounted: vec![],
            at: master.clone(),
            dirs,
        };
        match place {
            Place::Host => return None,
            Place::Shared => {
                sh(&["-t", "tmpfs", "tmpfs", m]);
                pm.mounted.push(master.clone());
                sh(&["--make-shared", m]);
            }
            Place::Slave => {
                sh(&["-t", "tmpfs", "tmpfs", m]);
                pm.mounted.push(master.clone());
                sh(&["--make-shared", m]);
                let slave = pm.dirs.path().join("slave");
                fs::create_dir(&slave).unwrap();
                sh(&["--bind", m, slave.to_str().unwrap()]);
                pm.mounted.push(slave.clone());
                sh(&["--make-slave", slave.to_str().unwrap()]);
                pm.at = slave;
            }
        }
        Some(pm)
    }
}

impl Drop for PlaceMount {
    fn drop(&mut self) {
        for m in self.mounted.iter().rev() {
            let _ = Command::new("umount").arg("-l").arg(m).status();
        }
    }
}

/// Outcome of a row under one runtime: started (exit status, output) or refused.
#[derive(Debug, PartialEq)]
enum Outcome {
    Ran {
        status: i32,
        stdout: String,
        hook: Option<String>,
    },
    Refused,
}

fn run_row(rt: &Runtime, r: &Row) -> (Outcome, String) {
    let bundle = Bundle::busybox(&["sh", "-c", r.script]);
    let scratch = TempDir::new("compat-scratch");
    let mount = PlaceMount::new(r.place);
    let dir: PathBuf = match &mount {
        None => bundle.path().to_owned(),
        Some(m) => {
            let d = m.at.join("bundle");
            assert!(Command::new("cp")
                .arg("-a")
                .arg(bundle.path())
                .arg(&d)
                .status()
                .unwrap()
                .success());
            d
        }
    };
    let cfg_path = dir.join("config.json");
    let mut cfg: Value = serde_json::from_slice(&fs::read(&cfg_path).unwrap()).unwrap();
    (r.edit)(
        &mut cfg,
        &Ctx {
            rootfs: &dir.join("rootfs"),
            scratch: scratch.path(),
        },
    );
    fs::write(&cfg_path, serde_json::to_vec_pretty(&cfg).unwrap()).unwrap();
    let id = unique_id("compat");
    let _g = rt.guard(&id);
    let o = capture(rt.cmd().env("COMPAT_MARK", "inherited").args([
        "run",
        "--bundle",
        dir.to_str().unwrap(),
        &id,
    ]));
    let stderr = text(&o.stderr);
    let hook = fs::read_to_string(scratch.path().join("hook-env")).ok();
    let code = o.status.code().unwrap_or(-1);
    // A runtime refusal is exit 1 or 2 with nothing from the container.
    let outcome = if (code == 1 || code == 2) && o.stdout.is_empty() {
        Outcome::Refused
    } else {
        Outcome::Ran {
            status: code,
            stdout: text(&o.stdout),
            hook,
        }
    };
    (outcome, stderr)
}

/// crun, run in a private mount namespace where the cgroup2 controller
/// list is hidden: crun refuses a hybrid host otherwise (bench/bench.sh
/// does the same).
fn crun_runtime(dir: &Path) -> Option<Runtime> {
    use std::os::unix::fs::PermissionsExt;
    let crun = which("crun")?;
    let wrapper = dir.join("crun");
    let script = format!(
        "#!/bin/sh\nexec unshare -m --propagation private sh -c 'mount --bind /dev/null /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null; exec \"$0\" \"$@\"' {} \"$@\"\n",
        crun.display()
    );
    fs::write(&wrapper, script).unwrap();
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
    Some(Runtime::new("crun", wrapper))
}

#[test]
fn same_outcome_as_runc() {
    let test = "same_outcome_as_runc";
    if !need_root(test) {
        return;
    }
    let Some(runc) = Runtime::runc() else {
        return skip(test, "runc is not installed");
    };
    let sandboy = Runtime::sandboy();
    let wrapper = TempDir::new("compat-crun");
    let crun = crun_runtime(wrapper.path());
    let mut failures = Vec::new();
    for r in table() {
        let reference = match (r.crun, &crun) {
            (None, _) => &runc,
            (Some(_), Some(crun)) => crun,
            (Some(why), None) => {
                skip(
                    &format!("{test}: {}", r.name),
                    &format!("{why}, and crun is not installed"),
                );
                continue;
            }
        };
        let (want, ref_err) = run_row(reference, &r);
        let (got, sandboy_err) = run_row(&sandboy, &r);
        if want == got {
            println!("ok: {} (against {}): {want:?}", r.name, reference.name);
            continue;
        }
        let detail = format!(
            "{}: {} {want:?} (stderr {ref_err:?}), sandboy {got:?} (stderr {sandboy_err:?})",
            r.name, reference.name
        );
        match r.known {
            Some(reason) => skip(
                &format!("{test}: {}", r.name),
                &format!("known difference: {reason}; {detail}"),
            ),
            None => failures.push(detail),
        }
    }
    assert!(
        failures.is_empty(),
        "differences from runc:\n{}",
        failures.join("\n")
    );
}

/// A bind mount at /dev, from the user's side: the container sees the
/// bound directory and the spec's later mounts below /dev on top of it, and
/// the bound directory gets nothing of libcontainer's defaults (symlinks,
/// device nodes, ptmx), as under runc. Its counterpart is every other row:
/// the default tmpfs at /dev, with those defaults in it.
#[test]
fn bind_mounted_dev_is_left_alone() {
    let test = "bind_mounted_dev_is_left_alone";
    if !need_root(test) {
        return;
    }
    let rt = Runtime::sandboy();
    let script =
        "ls /dev; grep -c ' /dev/shm ' /proc/self/mountinfo; test -e /dev/fd || echo no-fd";
    let bundle = Bundle::busybox(&["sh", "-c", script]);
    let source = TempDir::new("compat-dev");
    fs::write(source.path().join("marker"), "").unwrap();
    fs::create_dir(source.path().join("shm")).unwrap();
    // The runtime reopens the init's stdio on /dev/null (runc too).
    let null = source.path().join("null");
    let made = Command::new("mknod")
        .arg(&null)
        .args(["c", "1", "3"])
        .status();
    assert!(made.unwrap().success(), "mknod {}", null.display());
    bundle.edit(|c| {
        let mounts = c["mounts"].as_array_mut().unwrap();
        mounts.retain(|m| !m["destination"].as_str().unwrap().starts_with("/dev"));
        mounts.push(json!({"destination": "/dev", "type": "bind",
            "source": source.path(), "options": ["rbind", "rw"]}));
        mounts.push(json!({"destination": "/dev/shm", "type": "tmpfs",
            "source": "shm", "options": ["nosuid", "nodev", "size=64k"]}));
    });
    let id = unique_id("compat-dev");
    let _g = rt.guard(&id);
    let o = rt.run(&["run", "--bundle", bundle.path().to_str().unwrap(), &id]);
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout), "marker\nnull\nshm\n1\nno-fd\n");
    // Nothing was written into the bound directory.
    let mut left: Vec<_> = fs::read_dir(source.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["marker", "null", "shm"]);
}

/// A missing cwd reached through a rootfs symlink to a host path is made
/// inside the rootfs (the link resolved there, as runc's securejoin does),
/// never on the host; the container starts in it.
#[test]
fn missing_cwd_through_a_symlink_is_made_inside_the_rootfs() {
    let test = "missing_cwd_through_a_symlink_is_made_inside_the_rootfs";
    if !need_root(test) {
        return;
    }
    let rt = Runtime::sandboy();
    let bundle = Bundle::busybox(&["sh", "-c", "cd /link/made && echo in"]);
    // A host path no one has: it must still not exist afterwards. (Not
    // below /tmp, which the bundle mounts a tmpfs over.)
    let host = PathBuf::from("/var/tmp").join(unique_id("sandboy-compat-cwd"));
    std::os::unix::fs::symlink(&host, bundle.rootfs().join("link")).unwrap();
    bundle.edit(|c| c["process"]["cwd"] = json!("/link/made"));
    let id = unique_id("compat-cwd");
    let _g = rt.guard(&id);
    let o = rt.run(&["run", "--bundle", bundle.path().to_str().unwrap(), &id]);
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout), "in\n");
    assert!(!host.exists(), "made on the host");
    let inside = bundle
        .rootfs()
        .join(host.strip_prefix("/").unwrap())
        .join("made");
    assert!(inside.is_dir(), "{} not made", inside.display());
}
