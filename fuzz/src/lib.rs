//! Fuzzing on stable Rust (no nightly toolchain can be had here, so no
//! libFuzzer): a small deterministic mutator over a committed corpus, plus
//! `arbitrary`-driven structured inputs, run against every parser of
//! untrusted input the runtime has: policies, sandboy's annotations, OCI
//! seccomp profiles (parsed and compiled), SARIF from adapters, and the
//! adapter argument line.
//!
//! A finding is a panic (caught and reported with the input), or a case that
//! runs for longer than [`SLOW`] (a hang in the making). `make test` runs a
//! bounded number of cases per target (`tests/fuzz.rs`); `make fuzz` runs as
//! long as asked (`sandboy-fuzz TARGET --seconds N`). Every finding becomes
//! a regression case in `corpus/<target>/`.

pub mod mutate;
pub mod targets;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A case slower than this is reported as a finding.
pub const SLOW: Duration = Duration::from_secs(2);

/// What one fuzzing run found.
#[derive(Debug, Default)]
pub struct Report {
    pub cases: u64,
    pub findings: Vec<Finding>,
}

/// One input that made a target panic or stall.
#[derive(Debug)]
pub struct Finding {
    pub target: &'static str,
    pub what: String,
    pub input: Vec<u8>,
}

/// The committed seed corpus of `target`.
pub fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target)
}

fn seeds(target: &targets::Target) -> Vec<Vec<u8>> {
    let mut seeds: Vec<Vec<u8>> = Vec::new();
    if let Ok(dir) = std::fs::read_dir(corpus_dir(target.name)) {
        let mut paths: Vec<PathBuf> = dir.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        seeds.extend(paths.iter().filter_map(|p| std::fs::read(p).ok()));
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    for rel in target.extra_seeds {
        let dir = repo.join(rel);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        seeds.extend(
            paths
                .iter()
                .filter(|p| p.extension().is_some_and(|e| e == target.extension))
                .filter_map(|p| std::fs::read(p).ok()),
        );
    }
    if seeds.is_empty() {
        seeds.push(Vec::new());
    }
    seeds
}

/// Run `target` on its seeds, then on mutants, until `cases` cases or
/// `budget` time, whichever comes first. Deterministic for a given `seed`.
pub fn run(target: &targets::Target, cases: u64, budget: Duration, seed: u64) -> Report {
    let seeds = seeds(target);
    let mut rng = mutate::Rng::new(seed ^ fnv(target.name));
    let start = Instant::now();
    let mut report = Report::default();
    let mut pool = seeds.clone();
    while report.cases < cases && start.elapsed() < budget {
        let input = if (report.cases as usize) < seeds.len() {
            seeds[report.cases as usize].clone()
        } else {
            let base = &pool[rng.below(pool.len())];
            let other = &pool[rng.below(pool.len())];
            mutate::mutate(&mut rng, base, other, target.dictionary)
        };
        report.cases += 1;
        let t0 = Instant::now();
        let outcome = std::panic::catch_unwind(|| (target.run)(&input));
        let took = t0.elapsed();
        match outcome {
            Err(panic) => report.findings.push(Finding {
                target: target.name,
                what: format!("panic: {}", panic_text(&panic)),
                input,
            }),
            Ok(_) if took > SLOW => report.findings.push(Finding {
                target: target.name,
                what: format!("slow: {took:?}"),
                input,
            }),
            // Inputs the target accepted are good parents: mutants of
            // valid documents reach deeper than mutants of garbage.
            Ok(true) if pool.len() < 4096 => pool.push(input),
            Ok(_) => {}
        }
    }
    report
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic".into())
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}
