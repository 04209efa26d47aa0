//! `policy list | show NAME | check [NAME]`: the node's named policies, as
//! the runtime will find them (same configuration, same trust checks).

use std::path::Path;

use sandboy_spec_gen::{Diagnostic, Policy};

use super::args::PolicyCmd;
use super::output;
use crate::error::{Failure, Result};
use crate::node::{config, policies, Config};

pub fn run(flag: Option<&Path>, cmd: PolicyCmd) -> Result<i32> {
    let explicit = super::config_path(flag);
    match cmd {
        PolicyCmd::List => {
            let node = Config::load(explicit.as_deref())?;
            policies::check_trusted(&node.policy_dir, true)?;
            for name in policies::list(&node.policy_dir)? {
                let mark = if node.default_policy.as_deref() == Some(name.as_str()) {
                    "  (default)"
                } else {
                    ""
                };
                output::line(&format!("{name}{mark}"));
            }
            Ok(0)
        }
        PolicyCmd::Show { name } => {
            let node = Config::load(explicit.as_deref())?;
            let loaded = policies::load(&node.policy_dir, &name)?;
            output::line(&format!(
                "# {}\n# sha256 {}",
                loaded.path.display(),
                loaded.policy.sha256
            ));
            output::line(loaded.text.trim_end());
            Ok(0)
        }
        PolicyCmd::Check { name } => check(explicit.as_deref(), name),
    }
}

/// The configuration, then each named policy (or every one), each problem
/// drawn with its source line; exit 2 if any.
fn check(explicit: Option<&Path>, name: Option<String>) -> Result<i32> {
    let node = check_config(explicit)?;
    let names = match name {
        Some(n) => vec![n],
        None => {
            policies::check_trusted(&node.policy_dir, true)?;
            policies::list(&node.policy_dir)?
        }
    };
    let mut bad = 0;
    for name in &names {
        let (path, text) = policies::read(&node.policy_dir, name)?;
        // As create will: a policy applied onto an engine's spec must also
        // be renderable (absolute paths; the engine gives the command).
        let engine = oci_spec::runtime::Spec::default();
        let checked =
            Policy::parse(&text, &path.display().to_string(), &node.policy_dir).and_then(|p| {
                sandboy_spec_gen::render::check_renderable(&p, Some(&engine)).map(|()| p)
            });
        match checked {
            Ok(p) => output::line(&format!("{name}: ok (sha256 {})", p.sha256)),
            Err(e) if !e.diagnostics().is_empty() => {
                bad += 1;
                draw(e.diagnostics(), &text);
            }
            Err(e) => return Err(Failure::config(e.to_string())),
        }
    }
    if bad > 0 {
        return Err(Failure::config(format!(
            "{bad} of {} policies have errors",
            names.len()
        )));
    }
    Ok(0)
}

/// `default_policy` names a policy of the directory: a typo otherwise
/// passed the check, and every container naming no policy then failed.
fn default_exists(node: &Config, src: &str, path: &Path) -> Result<()> {
    let Some(name) = &node.default_policy else {
        return Ok(());
    };
    if policies::read(&node.policy_dir, name).is_ok() {
        return Ok(());
    }
    let line = src
        .lines()
        .position(|l| l.trim_start().starts_with("default_policy"))
        .map_or(1, |i| i + 1);
    Err(Failure::config(format!(
        "{}:{line}: default_policy = {name:?} names no policy in {} (sandboy policy list shows them); fix the name or add the policy",
        path.display(),
        node.policy_dir.display()
    )))
}

/// The node configuration, with snippets for its problems.
fn check_config(explicit: Option<&Path>) -> Result<Config> {
    let path = explicit.unwrap_or(Path::new(config::DEFAULT_FILE));
    // Read as `load` reads it (trusted, a capped regular file: a FIFO hung
    // this check); a missing default or an unreadable file: its message.
    let readable = policies::check_trusted(path, false).is_ok();
    let src = readable
        .then(|| sandboy_spec_gen::input::read_text(path, sandboy_spec_gen::input::TEXT_MAX).ok())
        .flatten();
    let Some(src) = src else {
        return Config::load(explicit);
    };
    match Config::parse(&src, &path.display().to_string()) {
        Ok(_) => {
            let node = Config::load(explicit)?;
            default_exists(&node, &src, path)?;
            Ok(node)
        }
        Err(diags) => {
            draw(&diags, &src);
            Err(Failure::config(format!(
                "{}: the node configuration has {} error(s)",
                path.display(),
                diags.len()
            )))
        }
    }
}

fn draw(diags: &[Diagnostic], src: &str) {
    for d in diags {
        output::error_line(d.render_snippet(src, false).trim_end());
    }
}
