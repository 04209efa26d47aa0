//! Each example policy under `policies/` is generated into a bundle by
//! `sandboy-spec-gen` and run under sandboy, with what it promises checked.

use std::fs;

use sandboy_tests::*;

#[test]
fn strict_policy_runs_as_nobody_in_tmp() {
    if !need_root("strict_policy_runs_as_nobody_in_tmp") {
        return;
    }
    let pb = PolicyBundle::new("strict");
    let rt = Runtime::sandboy();
    let id = unique_id("strict");
    let _g = rt.guard(&id);
    let o = rt.run(&["run", "--bundle", pb.bundle.path().to_str().unwrap(), &id]);
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout), "strict-ok\n");
}

#[test]
fn gate_step_policy_runs_the_fixture_step_and_hides_env() {
    if !need_root("gate_step_policy_runs_the_fixture_step_and_hides_env") {
        return;
    }
    let pb = PolicyBundle::new("gate-step");
    let rt = Runtime::sandboy();
    let id = unique_id("gate");
    let _g = rt.guard(&id);
    let o = rt.run(&["run", "--bundle", pb.bundle.path().to_str().unwrap(), &id]);
    assert_exit(&o, 0);
    assert!(
        text(&o.stdout).contains("gate-step fixture: ok"),
        "{}",
        text(&o.stdout)
    );

    // The hidden secret reads empty; the allowed file next to it does not.
    pb.bundle.edit(|c| {
        c["process"]["args"] = serde_json::json!([
            "/bin/sh",
            "-c",
            "cat /work/.env | wc -c; cat /work/src/hello.txt | wc -c"
        ])
    });
    let id2 = unique_id("gate-env");
    let _g2 = rt.guard(&id2);
    let o = rt.run(&["run", "--bundle", pb.bundle.path().to_str().unwrap(), &id2]);
    assert_exit(&o, 0);
    let counts: Vec<u64> = text(&o.stdout)
        .split_whitespace()
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(counts[0], 0, ".env is not hidden");
    assert!(counts[1] > 0);
    assert!(
        !fs::read(pb.scratch.path().join("bundles/fixtures/repo/.env"))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn agent_tool_policy_writes_scratch_only() {
    if !need_root("agent_tool_policy_writes_scratch_only") {
        return;
    }
    let pb = PolicyBundle::new("agent-tool");
    let rt = Runtime::sandboy();
    let id = unique_id("agent");
    let _g = rt.guard(&id);
    let o = rt.run(&["run", "--bundle", pb.bundle.path().to_str().unwrap(), &id]);
    assert_exit(&o, 0);
    assert!(text(&o.stdout).contains("test.sh"), "{}", text(&o.stdout));
    // Writing into the read-only repo is refused; the scratch dir works.
    pb.bundle.edit(|c| {
        c["process"]["args"] = serde_json::json!([
            "/bin/sh",
            "-c",
            "echo x > /repo/new; echo rc=$?; echo y > /scratch/ok && echo scratch-ok"
        ])
    });
    let id2 = unique_id("agent-w");
    let _g2 = rt.guard(&id2);
    let o = rt.run(&["run", "--bundle", pb.bundle.path().to_str().unwrap(), &id2]);
    assert_exit(&o, 0);
    assert!(
        text(&o.stdout).contains("rc=1") && text(&o.stdout).contains("scratch-ok"),
        "{}",
        text(&o.stdout)
    );
    assert!(!pb.scratch.path().join("bundles/fixtures/repo/new").exists());
}
