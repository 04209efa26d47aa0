//! The egress tests' world (issue 17): upstream servers on 127.0.0.0/8
//! (tests/egress/upstream.py) and a hosts file naming them, bound over
//! /etc/hosts in a private mount namespace around each command under test
//! (so the supervisor's resolver reads it and nothing of the host changes).

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use crate::*;

/// The upstream servers (tests/egress/upstream.py) and the hosts file.
pub struct World {
    pub dir: TempDir,
    server: Child,
    pub http: u16,
    pub https: u16,
    pub tcp: u16,
    pub other: u16,
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

const HOSTS: &str = "127.0.0.1 localhost
127.77.0.1 web.egress.test a.wild.egress.test no.wild.egress.test
127.77.0.2 tls.egress.test other.egress.test
127.77.0.3 tcp.egress.test
127.78.0.1 bad.egress.test inner.egress.test
";

impl World {
    pub fn start(test: &str) -> Option<World> {
        if !need_root(test) || !need_tool(test, "python3") || !need_tool(test, "openssl") {
            return None;
        }
        if !need_tool(test, "unshare") || !need_tool(test, "curl") {
            return None;
        }
        let dir = TempDir::new("egress");
        let www = dir.path().join("www");
        fs::create_dir_all(&www).unwrap();
        fs::write(www.join("index.html"), "hello from upstream\n").unwrap();
        fs::write(dir.path().join("hosts"), HOSTS).unwrap();
        let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
        let o = capture(
            Command::new("openssl")
                .args([
                    "req",
                    "-x509",
                    "-newkey",
                    "rsa:2048",
                    "-nodes",
                    "-days",
                    "1",
                    "-subj",
                    "/CN=tls.egress.test",
                ])
                .arg("-keyout")
                .arg(&key)
                .arg("-out")
                .arg(&cert),
        );
        assert_exit(&o, 0);
        let mut server = Command::new("python3")
            .arg(repo().join("tests/egress/upstream.py"))
            .args([&www, &cert, &key])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(server.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let ports: serde_json::Value = serde_json::from_str(&line).expect("upstream ports");
        let port = |k: &str| ports[k].as_u64().unwrap() as u16;
        Some(World {
            http: port("http"),
            https: port("https"),
            tcp: port("tcp"),
            other: port("other"),
            dir,
            server,
        })
    }

    pub fn out(&self) -> PathBuf {
        let o = self.dir.path().join("out");
        fs::create_dir_all(&o).unwrap();
        o
    }

    /// `[net]` of the test policies.
    pub fn net(&self) -> String {
        let (h, s, t) = (self.http, self.https, self.tcp);
        format!(
            r#"[net]
allow = ["web.egress.test:{h}", "tls.egress.test:{s}", "tcp.egress.test:{t}", "inner.egress.test:{h}", "*.wild.egress.test:{h}"]
deny = ["no.wild.egress.test:{h}"]
allow_cidr = ["127.77.0.0/24:{h}", "127.77.0.0/24:{s}", "127.77.0.0/24:{t}"]
"#
        )
    }

    /// `program ARGS` in a private mount namespace with the test's hosts.
    pub fn in_hosts(&self, program: &std::path::Path) -> Command {
        let mut c = Command::new("unshare");
        c.args([
            "-m",
            "--",
            "sh",
            "-c",
            "mount --bind \"$0\" /etc/hosts && exec \"$@\"",
        ])
        .arg(self.dir.path().join("hosts"))
        .arg(program);
        c
    }

    /// `program` as `user` (runuser), in a private mount namespace with the
    /// test's hosts, which the unprivileged process inherits.
    pub fn as_user(&self, user: &TestUser, program: &std::path::Path) -> Command {
        let mut c = self.in_hosts(std::path::Path::new("runuser"));
        c.args(["-u", &user.name, "--"]).arg(program);
        c
    }

    /// `sandboy ARGS` in a private mount namespace with the test's hosts.
    pub fn sandboy(&self, rt: &Runtime, args: &[&str]) -> Command {
        let mut c = self.in_hosts(&rt.bin);
        c.arg("--root").arg(rt.root.path()).args(args);
        c
    }
}
