//! adapt [--tool T --artifact NAME=PATH … | --all DIR | --list], audit DIR:
//! flags to options, summaries to stderr; the work is `crate::adapt`.

use super::args::{self, Adapt, Audit};
use super::output;
use crate::adapt::{self, merge::AllOptions, AdaptOptions};
use crate::container::Runtime;
use crate::error::{Failure, Result};

pub fn run(global: &args::Global, rt: impl FnOnce() -> Result<Runtime>, a: Adapt) -> Result<i32> {
    // An adapter container has nothing to report denials of (a wasm guest
    // makes no system calls of its own): no audit unless asked for.
    let asked =
        global.audit.is_some() || std::env::var_os("SANDBOY_AUDIT").is_some_and(|v| !v.is_empty());
    let rt = || {
        let mut rt = rt()?;
        if !asked {
            rt.audit = crate::supervisor::audit::Mode::Off;
        }
        Ok(rt)
    };
    if a.list {
        for line in adapt::list(a.common.registry.as_deref(), a.common.components.as_deref())? {
            output::line(&line);
        }
        return Ok(0);
    }
    if let Some(dir) = a.all.clone() {
        let tools = a.common.tool.clone();
        return all(global, dir, tools, options(a, None));
    }
    if a.common.tool.len() > 1 {
        return Err(Failure::usage(
            "adapt: --tool given more than once (several tools: --all DIR --tool A --tool B)",
        ));
    }
    let tool = a.common.tool.first().cloned();
    adapt::run_one(rt, &options(a, tool))
}

/// `audit DIR` = `adapt --all DIR`.
pub fn audit(global: &args::Global, a: Audit) -> Result<i32> {
    let tools = a.common.tool.clone();
    let opts = AdaptOptions {
        output: a.common.output,
        registry: a.common.registry,
        components: a.common.components,
        policy: a.common.policy,
        ..AdaptOptions::default()
    };
    all(global, a.dir, tools, opts)
}

fn all(
    global: &args::Global,
    dir: std::path::PathBuf,
    tools: Vec<String>,
    common: AdaptOptions,
) -> Result<i32> {
    let mut g = Vec::new();
    if let Some(root) = &global.root {
        g.extend(["--root".to_string(), root.display().to_string()]);
    }
    if global.debug {
        g.push("--debug".into());
    }
    let audit = adapt::run_all(&AllOptions {
        dir,
        tools,
        common,
        global: g,
    })?;
    for line in &audit.summary {
        output::error_line(line);
    }
    Ok(audit.status)
}

fn options(a: Adapt, tool: Option<String>) -> AdaptOptions {
    AdaptOptions {
        registry: a.common.registry,
        components: a.common.components,
        policy: a.common.policy,
        output: a.common.output,
        tool,
        component: a.component,
        artifacts: a.artifact,
        stdout: a.stdout,
        stderr: a.stderr,
        options: a.options,
    }
}
