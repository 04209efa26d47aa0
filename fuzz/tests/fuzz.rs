//! A bounded fuzzing run of every target in `make test` (as long as asked
//! in `make fuzz`): no input may panic or stall a parser of untrusted input.

use std::time::Duration;

#[test]
fn every_target_survives_a_bounded_run() {
    let cases: u64 = std::env::var("SANDBOY_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000);
    std::panic::set_hook(Box::new(|_| {}));
    let mut findings = Vec::new();
    for t in sandboy_fuzz::targets::ALL {
        let r = sandboy_fuzz::run(t, cases, Duration::from_secs(60), 1);
        println!(
            "{}: {} cases, {} findings",
            t.name,
            r.cases,
            r.findings.len()
        );
        findings.extend(r.findings);
    }
    let _ = std::panic::take_hook();
    assert!(
        findings.is_empty(),
        "{}",
        findings
            .iter()
            .map(|f| format!(
                "{}: {}: input {:?}",
                f.target,
                f.what,
                String::from_utf8_lossy(&f.input)
            ))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
