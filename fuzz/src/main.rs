//! `sandboy-fuzz [TARGET…] [--seconds N] [--seed S]`: fuzz the named targets
//! (all by default) for N seconds each; exit 1 when anything was found, with
//! each finding written to `corpus/<target>/finding-<n>` for a regression.

use std::time::Duration;

fn main() {
    let mut seconds = 60u64;
    let mut seed = 1u64;
    let mut names = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let num = |v: Option<String>| v.and_then(|v| v.parse().ok());
        match a.as_str() {
            "--seconds" => seconds = num(args.next()).unwrap_or_else(|| usage()),
            "--seed" => seed = num(args.next()).unwrap_or_else(|| usage()),
            "--help" | "-h" => usage(),
            name => names.push(name.to_owned()),
        }
    }
    let targets: Vec<_> = if names.is_empty() {
        sandboy_fuzz::targets::ALL.iter().collect()
    } else {
        names
            .iter()
            .map(|n| {
                sandboy_fuzz::targets::by_name(n).unwrap_or_else(|| {
                    eprintln!("sandboy-fuzz: unknown target {n:?}");
                    std::process::exit(2)
                })
            })
            .collect()
    };
    // Findings are reported below with their input; the default hook would
    // print every caught panic a second time.
    std::panic::set_hook(Box::new(|_| {}));
    let mut found = 0;
    for t in targets {
        let r = sandboy_fuzz::run(t, u64::MAX, Duration::from_secs(seconds), seed);
        println!(
            "{}: {} cases, {} findings",
            t.name,
            r.cases,
            r.findings.len()
        );
        for (i, f) in r.findings.iter().enumerate() {
            let path = sandboy_fuzz::corpus_dir(t.name).join(format!("finding-{seed}-{i}"));
            let _ = std::fs::create_dir_all(path.parent().unwrap());
            let _ = std::fs::write(&path, &f.input);
            println!("  {}: {} ({})", f.target, f.what, path.display());
            found += 1;
        }
    }
    std::process::exit(if found > 0 { 1 } else { 0 });
}

fn usage() -> ! {
    eprintln!("usage: sandboy-fuzz [TARGET…] [--seconds N] [--seed S]");
    std::process::exit(2)
}
