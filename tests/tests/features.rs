//! `sandboy features` against `runc features` on this host, field by field:
//! where sandboy says something different from runc, the difference is
//! listed here with its reason, so the document cannot drift from the truth.

use std::collections::BTreeSet;

use sandboy_tests::*;

fn json(o: &std::process::Output) -> serde_json::Value {
    assert_exit(o, 0);
    serde_json::from_slice(&o.stdout).expect("features JSON")
}

fn set(v: &serde_json::Value) -> BTreeSet<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

fn strs(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[test]
fn features_match_runc_field_by_field() {
    let test = "features::features_match_runc_field_by_field";
    let Some(runc) = Runtime::runc() else {
        return skip(test, "runc is not installed");
    };
    let Some(_) = need_sandboy(test) else {
        return;
    };
    let ours = json(&Runtime::sandboy().run(&["features"]));
    let theirs = json(&runc.run(&["features"]));

    assert_eq!(ours["ociVersionMin"], theirs["ociVersionMin"]);
    assert_eq!(set(&ours["hooks"]), set(&theirs["hooks"]));

    // Mount options: libcontainer's table; runc's extra ones are handed to
    // mount(2) as data by libcontainer, so sandboy does not claim them.
    let runc_only = strs(&[
        "acl",
        "noacl",
        "iversion",
        "noiversion",
        "lazytime",
        "nolazytime",
        "loud",
        "silent",
        "nosymfollow",
        "symfollow",
        "tmpcopyup",
    ]);
    let ours_only = strs(&["idmap", "ridmap"]);
    let mo = set(&ours["mountOptions"]);
    let want: BTreeSet<String> = set(&theirs["mountOptions"])
        .difference(&runc_only)
        .cloned()
        .chain(ours_only.iter().cloned())
        .collect();
    assert_eq!(mo, want, "mountOptions");

    let (l, r) = (&ours["linux"], &theirs["linux"]);
    // Namespaces: runc 1.1.5 predates time namespaces, libcontainer has them.
    let mut ns = set(&r["namespaces"]);
    ns.insert("time".into());
    assert_eq!(set(&l["namespaces"]), ns, "namespaces");
    assert!(set(&l["namespaces"]).contains("user"));
    // Capabilities: the same list, in the same (kernel) order, as far as
    // the running kernel goes.
    let last: usize = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let runc_caps: Vec<&serde_json::Value> = r["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .take(last + 1)
        .collect();
    let our_caps: Vec<&serde_json::Value> = l["capabilities"].as_array().unwrap().iter().collect();
    assert_eq!(our_caps, runc_caps, "capabilities");
    // cgroups: v1 and v2 as runc; no systemd manager in this build.
    assert_eq!(l["cgroup"]["v1"], r["cgroup"]["v1"]);
    assert_eq!(l["cgroup"]["v2"], r["cgroup"]["v2"]);
    assert_eq!(l["cgroup"]["systemd"], false);
    assert_eq!(l["cgroup"]["systemdUser"], false);
    // seccomp: every action and operator runc has; only the native
    // architectures sandboy compiles for (a subset of runc's).
    let (ls, rs) = (&l["seccomp"], &r["seccomp"]);
    assert_eq!(ls["enabled"], rs["enabled"]);
    assert_eq!(set(&ls["actions"]), set(&rs["actions"]), "seccomp actions");
    assert_eq!(
        set(&ls["operators"]),
        set(&rs["operators"]),
        "seccomp operators"
    );
    let archs = set(&ls["archs"]);
    assert!(archs.is_subset(&set(&rs["archs"])), "{archs:?}");
    assert!(archs.contains("SCMP_ARCH_X86_64") && archs.contains("SCMP_ARCH_AARCH64"));
    // AppArmor and SELinux: sandboy does not apply them; not claimed.
    assert!(l["apparmor"].is_null() && l["selinux"].is_null());

    // sandboy's own annotations: each described, plus this host's facts.
    let ann = ours["annotations"].as_object().unwrap();
    for key in [
        "dev.sandboy.landlock",
        "dev.sandboy.timeout",
        "dev.sandboy.wasm.limits",
        "dev.sandboy.policy",
        "dev.sandboy.policy.sha256",
        "run.oci.handler",
        "module.wasm.image/variant",
    ] {
        let v = ann[key].as_str().unwrap_or_default();
        assert!(v.contains(": "), "{key}: {v:?} is not `<type>: <what>`");
    }
    let reported: i32 = ann["dev.sandboy.landlock.abi"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(reported >= 1, "Landlock ABI {reported}");
    let tiers = ann["dev.sandboy.wrap.tiers"].as_str().unwrap();
    assert!(tiers.split(',').any(|t| t == "landlock"), "{tiers}");
    if is_root() {
        assert!(tiers.starts_with("container"), "{tiers}");
    }
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .is_some_and(|l| l.split_whitespace().nth(2) == Some("0"))
}
