//! `make bench`: time policy → config.json for a policy with 200 Landlock
//! path rules. Parsing and validation are included, since that is what a
//! `sandboy wrap` pays per call. Prints `generate_200_rules_median_us=<n>`.

use std::path::Path;
use std::time::Instant;

use sandboy_spec_gen::{render, Policy, RenderOptions};

const ITERATIONS: usize = 200;

fn policy_text() -> String {
    let paths = |prefix: &str, n: usize| -> String {
        let v: Vec<String> = (0..n).map(|i| format!("\"/{prefix}/dir{i}\"")).collect();
        v.join(", ")
    };
    format!(
        r#"version = 1
name = "bench"
[fs]
read = [{}]
exec = [{}]
write = [{}]
hide = ["/data/secret"]
[net]
connect = [443, 8443]
[syscalls]
deny = ["personality"]
[process]
args = ["/bin/sh", "-c", "true"]
env = ["CI=true"]
user = "1000:1000"
[limits]
memory = "512MiB"
pids = 256
cpus = 1.5
nofile = 1024
timeout = "10m"
[wasm]
fuel = 1000
"#,
        paths("usr", 100),
        paths("opt", 60),
        paths("work", 40)
    )
}

fn main() {
    let src = policy_text();
    let mut samples = Vec::with_capacity(ITERATIONS);
    let mut bytes = 0;
    for _ in 0..ITERATIONS {
        let start = Instant::now();
        let policy =
            Policy::parse(&src, "bench.toml", Path::new("/")).expect("bench policy is valid");
        let json = render::generate(&policy, &RenderOptions::default()).expect("renders");
        samples.push(start.elapsed());
        bytes = json.len();
    }
    samples.sort();
    let median = samples[ITERATIONS / 2];
    assert!(bytes > 0);
    println!("generate_200_rules_median_us={}", median.as_micros());
}
