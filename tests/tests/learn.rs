//! `sandboy wrap --learn`: a real multi-step build (make → cc → cc1, as,
//! collect2/ld, and a shell) run observed by an ordinary user the test
//! creates, the policy it writes, and that policy enforced: the same build
//! passes confined, and the build with one new read added is refused.

use std::fs;
use std::process::Command;

use sandboy_tests::*;

const MAKEFILE: &str = "a: a.c\n\tcc -o a a.c && echo built > log\n";
const C: &str = "#include <stdio.h>\nint main(void) { puts(\"hi\"); return 0; }\n";

#[test]
fn learned_policy_runs_the_build_and_refuses_what_is_new() {
    let test = "learned_policy_runs_the_build_and_refuses_what_is_new";
    if !need_tool(test, "make") || !need_tool(test, "cc") {
        return;
    }
    let Some(sandboy_bin) = need_sandboy(test) else {
        return;
    };
    let Some(user) = TestUser::create(test) else {
        return;
    };
    let dir = TempDir::new("learn");
    let sandboy = user.reachable_copy(&sandboy_bin, &dir);
    let src = dir.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("a.c"), C).unwrap();
    fs::write(src.join("Makefile"), MAKEFILE).unwrap();
    // A variant reading one more (world-readable) file through the shell.
    fs::write(
        src.join("Makefile.new"),
        MAKEFILE.replace("> log", "> log && read x < /etc/debian_version"),
    )
    .unwrap();
    // The whole checkout is the user's, as a real one is (the namespaces
    // tier's staged writes cannot copy up a directory of an unmapped owner).
    user.chown(dir.path());
    user.chown(&src);
    for f in ["a.c", "Makefile", "Makefile.new"] {
        user.chown(&src.join(f));
    }
    let learned = src.join("learned.toml");
    let wrap = |args: &[&str]| {
        let mut c = user.cmd(&sandboy);
        c.arg("wrap").args(args).current_dir(&src);
        capture(&mut c)
    };

    // Observed: the build runs unconfined and the policy is written.
    let o = wrap(&["--learn", learned.to_str().unwrap(), "--", "make"]);
    assert_exit(&o, 0);
    assert!(src.join("a").is_file(), "the build did not run");
    let policy = fs::read_to_string(&learned).unwrap();
    assert!(
        policy.starts_with("# Learned by `sandboy wrap --learn`"),
        "{policy}"
    );
    assert!(policy.contains("default_deny = true"), "{policy}");
    assert!(
        !policy.contains("/etc/debian_version") && !policy.contains("\"/etc\""),
        "{policy}"
    );
    let check = capture(Command::new(spec_gen_bin()).arg("check").arg(&learned));
    assert_exit(&check, 0);

    // Confined by what was learned: the same build passes.
    for f in ["a", "log"] {
        fs::remove_file(src.join(f)).unwrap();
    }
    let o = wrap(&["--policy", learned.to_str().unwrap(), "--", "make"]);
    assert_exit(&o, 0);
    assert!(src.join("a").is_file() && src.join("log").is_file());

    // The variant touches something new: refused (EACCES from Landlock),
    // while the file itself is readable to the user outside the sandbox.
    assert_exit(&capture(user.cmd("cat").arg("/etc/debian_version")), 0);
    for f in ["a", "log"] {
        fs::remove_file(src.join(f)).unwrap();
    }
    let o = wrap(&[
        "--policy",
        learned.to_str().unwrap(),
        "--",
        "make",
        "-f",
        "Makefile.new",
    ]);
    assert!(!o.status.success(), "the new read was let through");
    let err = text(&o.stderr);
    assert!(
        err.contains("/etc/debian_version") && err.contains("Permission denied"),
        "{err}"
    );

    // Bad input: a base policy with an error is a located error, exit 2,
    // and nothing is learned.
    let bad = src.join("bad.toml");
    fs::write(&bad, "version = 1\n[fs]\nread = 3\n").unwrap();
    user.chown(&bad);
    let out = src.join("never.toml");
    let o = wrap(&[
        "--learn",
        out.to_str().unwrap(),
        "--policy",
        bad.to_str().unwrap(),
        "--",
        "true",
    ]);
    assert_exit_stderr(&o, 2, "bad.toml:3:");
    assert!(!out.exists());
}
