//! Policies on the node (docs/node.md): the node configuration given with
//! `--config` (never the real /etc/sandboy), a private root-owned policy
//! directory, and real containers created from busybox bundles as an engine
//! writes them (no sandboy annotations of their own).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use sandboy_tests::*;

/// The CI-step policy the tests name: reads /etc and /proc, runs /bin,
/// writes /tmp only; denies chmod on top of the built-in deny list; a pid
/// limit stricter than the engine's.
pub const GATE_STEP: &str = r#"version = 1
[fs]
read = ["/etc", "/proc"]
exec = ["/bin"]
write = ["/tmp", "/dev/null"]
hide = ["/etc/hostname"]
[syscalls]
deny = ["chmod", "fchmodat"]
[limits]
pids = 64
timeout = "10m"
"#;

/// A node: `policies/` (root-owned, 0755) and `config.toml` in a scratch dir.
struct Node {
    dir: TempDir,
    rt: Runtime,
}

impl Node {
    fn new(test: &str, config: &str) -> Option<Node> {
        if !need_root(test) {
            return None;
        }
        need_sandboy(test)?;
        let dir = TempDir::new("node");
        let policies = dir.path().join("policies");
        fs::create_dir_all(&policies).unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
        fs::set_permissions(&policies, fs::Permissions::from_mode(0o755)).unwrap();
        let node = Node {
            dir,
            rt: Runtime::sandboy(),
        };
        node.config(config);
        node.policy("gate-step", GATE_STEP);
        Some(node)
    }

    fn policies(&self) -> PathBuf {
        self.dir.path().join("policies")
    }

    fn config_path(&self) -> PathBuf {
        self.dir.path().join("config.toml")
    }

    /// Write config.toml; `policy_dir` is filled in unless given.
    fn config(&self, body: &str) {
        let mut text = String::new();
        if !body.contains("policy_dir") {
            text.push_str(&format!("policy_dir = \"{}\"\n", self.policies().display()));
        }
        text.push_str(body);
        fs::write(self.config_path(), text).unwrap();
    }

    fn policy(&self, name: &str, text: &str) {
        let path = self.policies().join(format!("{name}.toml"));
        fs::write(&path, text).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    }

    /// `sandboy --root R --config C ARGS…`
    fn sandboy(&self, args: &[&str]) -> Output {
        capture(
            self.rt
                .cmd()
                .arg("--config")
                .arg(self.config_path())
                .args(args),
        )
    }

    fn run(&self, bundle: &Bundle, id: &str) -> Output {
        self.sandboy(&["run", "--bundle", bundle.path().to_str().unwrap(), id])
    }

    /// A refused create: exit 2, `needle` in the error, nothing left.
    #[track_caller]
    fn refused(&self, bundle: &Bundle, needle: &str) -> String {
        let id = unique_id("node-refused");
        let _g = self.rt.guard(&id);
        let o = self.sandboy(&["create", "--bundle", bundle.path().to_str().unwrap(), &id]);
        assert_exit(&o, 2);
        let err = text(&o.stderr);
        assert!(err.contains(needle), "want {needle:?} in: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one error line: {err}");
        assert_nothing_left(&self.rt, &id);
        err
    }
}

/// No state, cgroup, mount or shadow bundle of `id`.
#[track_caller]
fn assert_nothing_left(rt: &Runtime, id: &str) {
    assert!(!rt.root.path().join(id).exists(), "state left for {id}");
    assert!(
        !rt.root.path().join(".bundles").join(id).exists(),
        "shadow bundle left for {id}"
    );
    assert_eq!(cgroups_named(id), Vec::<PathBuf>::new(), "cgroups left");
    assert_eq!(mounts_mentioning(id), Vec::<String>::new(), "mounts left");
}

/// A busybox bundle as an engine writes it, with a writable root (so a
/// refused write is the policy's EACCES, not a read-only root's EROFS).
fn engine_bundle(script: &str, annotations: &[(&str, &str)]) -> Bundle {
    let b = Bundle::busybox(&["sh", "-c", script]);
    b.edit(|c| {
        c["root"]["readonly"] = serde_json::json!(false);
        let ann = c
            .as_object_mut()
            .unwrap()
            .entry("annotations")
            .or_insert_with(|| serde_json::json!({}));
        for (k, v) in annotations {
            ann[*k] = serde_json::json!(v);
        }
    });
    b
}

/// The write test: allowed under /tmp, refused in /root (EACCES).
const WRITES: &str = "echo allowed > /tmp/ok && cat /tmp/ok; \
    if echo escaped 2>&1 > /root/outside; then echo WROTE-OUTSIDE; fi; echo done";

#[track_caller]
fn assert_confined_writes(o: &Output, b: &Bundle) {
    let out = text(&o.stdout);
    assert!(!out.contains("WROTE-OUTSIDE"), "not confined: {out}");
    assert_exit(o, 0);
    assert!(out.starts_with("allowed\n"), "allowed write failed: {out}");
    assert!(out.contains("Permission denied"), "no EACCES: {out}");
    assert!(!b.rootfs().join("root/outside").exists());
}

#[test]
fn named_policy_confines_and_is_recorded() {
    let Some(n) = Node::new("node::named_policy_confines_and_is_recorded", "") else {
        return;
    };
    // Unconfined without the annotation: the same write goes through.
    let free = engine_bundle(WRITES, &[]);
    let id = unique_id("node-free");
    let _g = n.rt.guard(&id);
    let o = n.run(&free, &id);
    assert_exit(&o, 0);
    assert!(
        text(&o.stdout).contains("WROTE-OUTSIDE"),
        "{}",
        text(&o.stdout)
    );

    let b = engine_bundle(WRITES, &[("dev.sandboy.policy", "gate-step")]);
    let id = unique_id("node-named");
    let _g = n.rt.guard(&id);
    assert_confined_writes(&n.run(&b, &id), &b);

    // state names the policy and its digest.
    let b = engine_bundle("sleep 30", &[("dev.sandboy.policy", "gate-step")]);
    let id = unique_id("node-state");
    let _g = n.rt.guard(&id);
    assert_exit(
        &n.sandboy(&["create", "--bundle", b.path().to_str().unwrap(), &id]),
        0,
    );
    let st = n.rt.state(&id);
    assert_eq!(st["annotations"]["dev.sandboy.policy"], "gate-step");
    // And the log an engine keeps says the same (run with --log below).
    let sha = st["annotations"]["dev.sandboy.policy.sha256"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let want = sha256_of(&n.policies().join("gate-step.toml"));
    assert_eq!(sha, want, "{st}");

    let log = n.dir.path().join("runtime.log");
    let b = engine_bundle("true", &[("dev.sandboy.policy", "gate-step")]);
    let id = unique_id("node-log");
    let _g = n.rt.guard(&id);
    let o = n.sandboy(&[
        "--log",
        log.to_str().unwrap(),
        "--log-format",
        "json",
        "run",
        "--bundle",
        b.path().to_str().unwrap(),
        &id,
    ]);
    assert_exit(&o, 0);
    let line = fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .find(|l| l.contains("node policy applied"))
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .unwrap_or_else(|| panic!("no policy event in the log"));
    assert_eq!(line["policy"], "gate-step", "{line}");
    assert_eq!(line["sha256"], want.as_str(), "{line}");
    assert_eq!(line["id"], id.as_str(), "{line}");
}

fn sha256_of(path: &Path) -> String {
    let o = capture(std::process::Command::new("sha256sum").arg(path));
    text(&o.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned()
}

#[test]
fn default_policy_applies_without_annotation() {
    let Some(n) = Node::new(
        "node::default_policy_applies_without_annotation",
        "default_policy = \"gate-step\"\n",
    ) else {
        return;
    };
    let b = engine_bundle(WRITES, &[]);
    let id = unique_id("node-default");
    let _g = n.rt.guard(&id);
    assert_confined_writes(&n.run(&b, &id), &b);
    // An engine's noNewPrivileges = false (Kubernetes' default) is not
    // kept under a policy: a red team's step reached uid 0 through a
    // setuid file of its image. The counterpart: unconfined, it is kept.
    let nnp = |b: &Bundle| {
        b.edit(|c| c["process"]["noNewPrivileges"] = serde_json::json!(false));
    };
    let b = engine_bundle("grep NoNewPrivs /proc/self/status", &[]);
    nnp(&b);
    n.policy("gate-step", GATE_STEP);
    let id = unique_id("node-nnp");
    let _g = n.rt.guard(&id);
    let o = n.run(&b, &id);
    assert_eq!(
        text(&o.stdout).split_whitespace().collect::<Vec<_>>(),
        ["NoNewPrivs:", "1"],
        "{}",
        text(&o.stderr)
    );
    let free = engine_bundle("grep NoNewPrivs /proc/self/status", &[]);
    nnp(&free);
    let id = unique_id("node-nnp-free");
    let _g = n.rt.guard(&id);
    let o = capture(
        n.rt.cmd()
            .args(["run", "--bundle", free.path().to_str().unwrap(), &id]),
    );
    assert_eq!(
        text(&o.stdout).split_whitespace().collect::<Vec<_>>(),
        ["NoNewPrivs:", "0"],
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn require_policy_refuses_unconfined() {
    let Some(n) = Node::new(
        "node::require_policy_refuses_unconfined",
        "require_policy = true\n",
    ) else {
        return;
    };
    n.refused(
        &engine_bundle("true", &[]),
        "names no policy and the node requires one",
    );
    // Its counterpart: the same container naming a policy runs.
    let b = engine_bundle(WRITES, &[("dev.sandboy.policy", "gate-step")]);
    let id = unique_id("node-required");
    let _g = n.rt.guard(&id);
    assert_confined_writes(&n.run(&b, &id), &b);
}

#[test]
fn raw_annotations_refused_when_not_allowed() {
    let Some(n) = Node::new(
        "node::raw_annotations_refused_when_not_allowed",
        "allow_annotations = false\n",
    ) else {
        return;
    };
    let weak = r#"{"mode":"enforce","fs":[{"path":"/","access":["read","write","exec"]}]}"#;
    let err = n.refused(
        &engine_bundle(
            "true",
            &[
                ("dev.sandboy.landlock", weak),
                ("dev.sandboy.policy", "gate-step"),
            ],
        ),
        "annotation dev.sandboy.landlock refused",
    );
    assert!(err.contains("allow_annotations = false"), "{err}");
    // Claiming to be the pod's sandbox does not bring raw rules in either
    // (a red team's container did).
    n.refused(
        &engine_bundle(
            "true",
            &[
                ("dev.sandboy.landlock", weak),
                ("io.kubernetes.cri.container-type", "sandbox"),
            ],
        ),
        "annotation dev.sandboy.landlock refused",
    );
    // Only a name: allowed.
    let b = engine_bundle(WRITES, &[("dev.sandboy.policy", "gate-step")]);
    let id = unique_id("node-names-only");
    let _g = n.rt.guard(&id);
    assert_confined_writes(&n.run(&b, &id), &b);
}

#[test]
fn bad_names_dirs_and_files_are_located_errors() {
    let Some(n) = Node::new("node::bad_names_dirs_and_files_are_located_errors", "") else {
        return;
    };
    let named = |name: &str| engine_bundle("true", &[("dev.sandboy.policy", name)]);
    n.refused(&named("gate-stpe"), "did you mean \"gate-step\"?");
    n.refused(&named("../gate-step"), "is not a plain name");
    // An invalid policy file: file:line:column of the bad key.
    n.policy(
        "broken",
        "version = 1\n[fs]\nread = [\"/etc\"]\nwrit = [\"/tmp\"]\n",
    );
    let err = n.refused(
        &named("broken"),
        "broken.toml:4:1: error: unknown key \"writ\"",
    );
    assert!(err.contains("did you mean \"write\"?"), "{err}");
    // A policy directory others may write.
    fs::set_permissions(n.policies(), fs::Permissions::from_mode(0o777)).unwrap();
    n.refused(
        &named("gate-step"),
        &format!("fix with `chmod go-w {}`", n.policies().display()),
    );
    fs::set_permissions(n.policies(), fs::Permissions::from_mode(0o755)).unwrap();
    // A policy file others may write.
    let file = n.policies().join("gate-step.toml");
    fs::set_permissions(&file, fs::Permissions::from_mode(0o666)).unwrap();
    n.refused(
        &named("gate-step"),
        &format!("chmod go-w {}", file.display()),
    );
}

#[test]
fn config_errors_are_located() {
    let Some(n) = Node::new("node::config_errors_are_located", "require_polcy = true\n") else {
        return;
    };
    let b = engine_bundle("true", &[]);
    let err = n.refused(&b, "config.toml:2:1: error: unknown key \"require_polcy\"");
    assert!(err.contains("did you mean \"require_policy\"?"), "{err}");
    // `policy check` draws it with the source line.
    let o = n.sandboy(&["policy", "check"]);
    assert_exit_stderr(&o, 2, "require_polcy = true");
    // An explicit configuration that does not exist is an error too.
    let id = unique_id("node-noconf");
    let o = capture(
        n.rt.cmd()
            .arg("--config")
            .arg(n.dir.path().join("missing.toml"))
            .args(["create", "--bundle", b.path().to_str().unwrap(), &id]),
    );
    assert_exit_stderr(&o, 2, "missing.toml");
    assert_nothing_left(&n.rt, &id);
}

/// The engine's profile denies mkdir, the policy's denies chmod: both hold
/// (two filters), and what neither denies works.
#[test]
fn engine_and_policy_seccomp_both_hold() {
    let Some(n) = Node::new("node::engine_and_policy_seccomp_both_hold", "") else {
        return;
    };
    let script = "touch /tmp/f && echo touched; \
        mkdir /tmp/d 2>&1 || echo MKDIR-DENIED; \
        chmod 600 /tmp/f 2>&1 || echo CHMOD-DENIED";
    let engine_seccomp = serde_json::json!({
        "defaultAction": "SCMP_ACT_ALLOW",
        "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]
    });
    let b = engine_bundle(script, &[("dev.sandboy.policy", "gate-step")]);
    b.edit(|c| c["linux"]["seccomp"] = engine_seccomp.clone());
    let id = unique_id("node-seccomp");
    let _g = n.rt.guard(&id);
    let o = n.run(&b, &id);
    assert_exit(&o, 0);
    let out = text(&o.stdout);
    assert!(out.starts_with("touched\n"), "{out}");
    assert!(out.contains("MKDIR-DENIED"), "engine's filter: {out}");
    assert!(out.contains("CHMOD-DENIED"), "policy's filter: {out}");

    // Counterpart: the engine's profile alone lets chmod through.
    let b = engine_bundle(script, &[]);
    b.edit(|c| c["linux"]["seccomp"] = engine_seccomp.clone());
    let id = unique_id("node-seccomp-engine");
    let _g = n.rt.guard(&id);
    let o = n.run(&b, &id);
    assert_exit(&o, 0);
    let out = text(&o.stdout);
    assert!(
        out.contains("MKDIR-DENIED") && !out.contains("CHMOD-DENIED"),
        "{out}"
    );

    // And an exec'd process carries both filters too.
    let b = engine_bundle("sleep 30", &[("dev.sandboy.policy", "gate-step")]);
    b.edit(|c| c["linux"]["seccomp"] = engine_seccomp.clone());
    let id = unique_id("node-seccomp-exec");
    let _g = n.rt.guard(&id);
    assert_exit(
        &n.sandboy(&["create", "--bundle", b.path().to_str().unwrap(), &id]),
        0,
    );
    assert_exit(&n.sandboy(&["start", &id]), 0);
    let o = n.sandboy(&["exec", &id, "sh", "-c", script]);
    let out = text(&o.stdout);
    assert!(
        out.contains("MKDIR-DENIED") && out.contains("CHMOD-DENIED"),
        "exec: {out} {}",
        text(&o.stderr)
    );
}

#[test]
fn policy_cli_lists_shows_checks() {
    let Some(n) = Node::new(
        "node::policy_cli_lists_shows_checks",
        "default_policy = \"gate-step\"\n",
    ) else {
        return;
    };
    n.policy("other", "version = 1\n[fs]\nread = [\"/\"]\n");
    let o = n.sandboy(&["policy", "list"]);
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout), "gate-step  (default)\nother\n");
    let o = n.sandboy(&["policy", "show", "gate-step"]);
    assert_exit(&o, 0);
    assert!(
        text(&o.stdout).contains(GATE_STEP.trim_end()),
        "{}",
        text(&o.stdout)
    );
    assert!(text(&o.stdout).contains(&sha256_of(&n.policies().join("gate-step.toml"))));
    assert_exit(&n.sandboy(&["policy", "check"]), 0);
    n.policy("broken", "version = 1\n[fs]\nread = \"/etc\"\n");
    let o = n.sandboy(&["policy", "check", "broken"]);
    assert_exit(&o, 2);
    let err = text(&o.stderr);
    assert!(err.contains("broken.toml:3:8"), "{err}");
    assert!(err.contains("read = \"/etc\""), "snippet: {err}");
    // A relative path is fine for wrap, not for a container: check says so.
    n.policy("relative", "version = 1\n[fs]\nread = [\"./src\"]\n");
    let o = n.sandboy(&["policy", "check", "relative"]);
    assert_exit_stderr(&o, 2, "relative.toml:3:9");
    // A default naming no policy (a typo) is found by the check, not by
    // every later create.
    n.config("default_policy = \"gate-stpe\"\n");
    let o = n.sandboy(&["policy", "check", "other"]);
    assert_exit_stderr(
        &o,
        2,
        "config.toml:2: default_policy = \"gate-stpe\" names no policy",
    );
    n.config("default_policy = \"gate-step\"\n");
    assert_exit(&n.sandboy(&["policy", "check", "other"]), 0);
    // A configuration that is no regular file is refused at once (a FIFO
    // hung create and the check).
    let fifo = n.dir.path().join("fifo.toml");
    assert_exit(&capture(std::process::Command::new("mkfifo").arg(&fifo)), 0);
    let o = output_timeout(
        n.rt.cmd()
            .arg("--config")
            .arg(&fifo)
            .args(["policy", "check"]),
        std::time::Duration::from_secs(20),
    );
    assert_exit_stderr(&o, 2, "not a regular file");
}

/// The policy tightens what the engine asked for: its pid limit (64) wins
/// over the engine's looser one (1000), a looser policy limit does not
/// loosen the engine's, and its hide paths are masked.
#[test]
fn policy_tightens_resources_and_masks_hide_paths() {
    let Some(n) = Node::new("node::policy_tightens_resources_and_masks_hide_paths", "") else {
        return;
    };
    n.policy(
        "loose",
        "version = 1\n[fs]\nread = [\"/\"]\nexec = [\"/bin\"]\nwrite = [\"/tmp\"]\n[limits]\npids = 5000\n",
    );
    let pids_max = |policy: &str, engine: i64| -> (String, String) {
        let b = engine_bundle("sleep 30", &[("dev.sandboy.policy", policy)]);
        b.edit(|c| c["linux"]["resources"]["pids"] = serde_json::json!({ "limit": engine }));
        let id = unique_id("node-limits");
        let _g = n.rt.guard(&id);
        assert_exit(
            &n.sandboy(&["create", "--bundle", b.path().to_str().unwrap(), &id]),
            0,
        );
        let max = cgroups_named(&id)
            .into_iter()
            .map(|p| p.join("pids.max"))
            .find(|p| p.exists())
            .map(|p| fs::read_to_string(p).unwrap().trim().to_owned())
            .unwrap_or_default();
        assert_exit(&n.sandboy(&["start", &id]), 0);
        let o = n.sandboy(&["exec", &id, "cat", "/etc/hostname"]);
        assert_exit(&o, 0);
        (max, text(&o.stdout))
    };
    let (max, hostname) = pids_max("gate-step", 1000);
    assert_eq!(max, "64", "the policy's stricter pid limit");
    assert_eq!(hostname, "", "/etc/hostname is hidden by gate-step");
    let (max, hostname) = pids_max("loose", 1000);
    assert_eq!(max, "1000", "the engine's stricter pid limit");
    assert_eq!(hostname, "sandboy\n", "not hidden by the loose policy");
}

/// A policy's `[[mount]]` reaches the container only where the operator
/// allows it (`allow_mounts = true`); elsewhere it is left out.
#[test]
fn policy_mounts_only_when_allowed() {
    let Some(n) = Node::new("node::policy_mounts_only_when_allowed", "") else {
        return;
    };
    let host = TempDir::new("node-mount");
    fs::write(host.path().join("hello"), "from the host\n").unwrap();
    n.policy(
        "with-mount",
        &format!(
            "version = 1\n[fs]\nread = [\"/etc\", \"/proc\", \"/work\"]\nexec = [\"/bin\"]\nwrite = [\"/tmp\"]\n\
             [[mount]]\nsource = \"{}\"\ndestination = \"/work\"\noptions = [\"rbind\", \"ro\"]\n",
            host.path().display()
        ),
    );
    let b = engine_bundle(
        "cat /work/hello 2>&1 || echo NO-MOUNT",
        &[("dev.sandboy.policy", "with-mount")],
    );
    let run = |config: &str| {
        n.config(config);
        let id = unique_id("node-mount");
        let _g = n.rt.guard(&id);
        let o = n.run(&b, &id);
        assert_exit(&o, 0);
        text(&o.stdout)
    };
    assert!(
        run("").contains("NO-MOUNT"),
        "mount added without allow_mounts"
    );
    assert_eq!(run("allow_mounts = true\n"), "from the host\n");
}

#[test]
fn a_node_policys_user_and_open_files_apply_to_the_engines_process() {
    let Some(n) = Node::new(
        "node::a_node_policys_user_and_open_files_apply_to_the_engines_process",
        "",
    ) else {
        return;
    };
    n.policy(
        "as-nobody",
        &format!("{GATE_STEP}[process]\nuser = \"65534:65534\"\n")
            .replace("pids = 64\n", "pids = 64\nnofile = 64\n"),
    );
    let script = "id -u; ulimit -n";
    // Allowed counterpart: without the policy, the engine's root and limit.
    let free = engine_bundle(script, &[]);
    let id = unique_id("node-user-free");
    let _g = n.rt.guard(&id);
    let o = n.run(&free, &id);
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout), "0\n1024\n");
    // Refused: the engine's uid 0 and its 1024 files (a red team's node
    // policy saying nobody ran as root).
    let b = engine_bundle(script, &[("dev.sandboy.policy", "as-nobody")]);
    let id = unique_id("node-user");
    let _g = n.rt.guard(&id);
    let o = n.run(&b, &id);
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout), "65534\n64\n");

    // exec: the engine's process.json (podman and containerd always send
    // one) said uid 0, 4096 files and no no_new_privs; a red team's exec'd
    // process ran as root. It runs as the init's user with its limits.
    let b = engine_bundle("sleep 30", &[("dev.sandboy.policy", "as-nobody")]);
    let id = unique_id("node-user-exec");
    let _g = n.rt.guard(&id);
    assert_exit(
        &n.sandboy(&["create", "--bundle", b.path().to_str().unwrap(), &id]),
        0,
    );
    assert_exit(&n.sandboy(&["start", &id]), 0);
    let nnp = "id -u; ulimit -n; grep NoNewPrivs /proc/self/status";
    let process = b.path().join("exec-process.json");
    fs::write(
        &process,
        serde_json::json!({
            "user": {"uid": 0, "gid": 0}, "cwd": "/", "noNewPrivileges": false,
            "args": ["sh", "-c", nnp], "env": ["PATH=/bin"],
            "rlimits": [{"type": "RLIMIT_NOFILE", "soft": 4096, "hard": 4096}]
        })
        .to_string(),
    )
    .unwrap();
    let o = n.sandboy(&["exec", "--process", process.to_str().unwrap(), &id]);
    assert_exit(&o, 0);
    assert_eq!(
        text(&o.stdout),
        "65534\n64\nNoNewPrivs:\t1\n",
        "{}",
        text(&o.stderr)
    );
    let o = n.sandboy(&["exec", &id, "sh", "-c", nnp]);
    assert_eq!(
        text(&o.stdout),
        "65534\n64\nNoNewPrivs:\t1\n",
        "{}",
        text(&o.stderr)
    );
    // Asked for by flag: refused, with the user the policy gives.
    let o = n.sandboy(&["exec", "--user", "0:0", &id, "id", "-u"]);
    assert_exit(&o, 2);
    assert!(
        text(&o.stderr).contains("65534:65534"),
        "{}",
        text(&o.stderr)
    );
    // Its counterpart: the policy's own user, asked for, runs.
    let o = n.sandboy(&["exec", "--user", "65534:65534", &id, "id", "-u"]);
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout), "65534\n");
    // `update` may lower the policy's pids limit, never raise it (a red
    // team's took 32 to max).
    let o = n.sandboy(&["update", "--pids-limit", "100000", &id]);
    assert_exit(&o, 2);
    assert!(
        text(&o.stderr).contains("may only be lowered"),
        "{}",
        text(&o.stderr)
    );
    let o = n.sandboy(&["update", "--pids-limit", "-1", &id]);
    assert_exit(&o, 2);
    assert_exit(&n.sandboy(&["update", "--pids-limit", "32", &id]), 0);
    assert_exit(&n.sandboy(&["delete", "--force", &id]), 0);
}

/// A pod's own policy (`dev.sandboy.policy.text`) may not raise the
/// engine's user: a red team's annotation saying `user = "0:0"` ran a
/// container the engine started as uid 1000 as root, with root's
/// capabilities. Refused (exit 2, named); the same policy without the
/// user runs as the engine's 1000.
#[test]
fn an_annotated_policy_never_raises_the_engines_user() {
    let Some(n) = Node::new(
        "node::an_annotated_policy_never_raises_the_engines_user",
        "",
    ) else {
        return;
    };
    let bundle = |policy: &str| {
        let text = serde_json::to_string(policy).unwrap();
        let b = engine_bundle("id -u", &[("dev.sandboy.policy.text", &text)]);
        b.edit(|c| {
            c["process"]["user"] = serde_json::json!({"uid": 1000, "gid": 1000});
        });
        b
    };
    n.refused(
        &bundle(&format!("{GATE_STEP}[process]\nuser = \"0:0\"\n")),
        "may only narrow",
    );
    // Allowed: the same policy without a user, as the engine's 1000.
    let id = unique_id("node-text-user-ok");
    let _g = n.rt.guard(&id);
    let o = n.run(&bundle(GATE_STEP), &id);
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout), "1000\n");
}

/// Under a node configuration, a container's own egress rules (a raw
/// `dev.sandboy.egress`) reach no internal address: a red team's pod with
/// `allow_cidr = ["127.0.0.0/8:8099"]` fetched a service on the host's
/// loopback through the gateway from its own network namespace. Refused
/// (exit 2, named); a public range in the same annotation is accepted.
#[test]
fn a_containers_own_egress_rules_reach_no_internal_address() {
    let Some(n) = Node::new(
        "node::a_containers_own_egress_rules_reach_no_internal_address",
        "",
    ) else {
        return;
    };
    let egress = |cidr: &str| {
        format!(r#"{{"allow":[],"deny":[],"allow_cidr":["{cidr}"],"proxy_port":3128}}"#)
    };
    for internal in ["127.0.0.0/8:8099", "169.254.169.254/32:80", "8.0.0.0/5:443"] {
        let b = engine_bundle("true", &[("dev.sandboy.egress", &egress(internal))]);
        n.refused(&b, "reaches this host or its networks");
    }
    // The host's own address (a service on 0.0.0.0 answers there), not
    // only the private ranges: a red team's node had a public one.
    let own = capture(
        std::process::Command::new("ip").args(["-o", "-4", "addr", "show", "scope", "global"]),
    );
    if let Some(addr) = text(&own.stdout)
        .split_whitespace()
        .skip_while(|w| *w != "inet")
        .nth(1)
        .and_then(|a| a.split('/').next())
    {
        let b = engine_bundle(
            "true",
            &[("dev.sandboy.egress", &egress(&format!("{addr}/32:8099")))],
        );
        n.refused(&b, "reaches this host or its networks");
    }
    let b = engine_bundle(
        "true",
        &[("dev.sandboy.egress", &egress("93.184.216.0/24:443"))],
    );
    let id = unique_id("node-egress-public");
    let _g = n.rt.guard(&id);
    assert_exit(&n.run(&b, &id), 0);
    // What passed is marked as the pod's own, so the gateway checks the
    // host's addresses again at each dial (one acquired after create is
    // refused: unit test `the_hosts_own_addresses_are_internal`); a pod
    // that writes the mark itself cannot clear it.
    let cleared = egress("93.184.216.0/24:443").replace('}', r#","outside_only":false}"#);
    let b = engine_bundle("true", &[("dev.sandboy.egress", &cleared)]);
    let id = unique_id("node-egress-marked");
    let _g = n.rt.guard(&id);
    assert_exit(
        &n.sandboy(&["create", "--bundle", b.path().to_str().unwrap(), &id]),
        0,
    );
    let state = n.sandboy(&["state", &id]);
    assert_exit(&state, 0);
    let state: serde_json::Value = serde_json::from_slice(&state.stdout).unwrap();
    let rules = state["annotations"]["dev.sandboy.egress"].as_str().unwrap();
    assert!(rules.contains(r#""outside_only":true"#), "{rules}");
    assert_exit(&n.sandboy(&["delete", "--force", &id]), 0);
}
