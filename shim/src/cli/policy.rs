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

/// The node configuration, with snippets for its problems.
fn check_config(explicit: Option<&Path>) -> Result<Config> {
    let path = explicit.unwrap_or(Path::new(config::DEFAULT_FILE));
    let Ok(src) = std::fs::read_to_string(path) else {
        // Missing default: the defaults; anything else: load's message.
        return Config::load(explicit);
    };
    match Config::parse(&src, &path.display().to_string()) {
        Ok(_) => Config::load(explicit),
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
