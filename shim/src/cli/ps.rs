use std::process::Command;

use libcgroups::common::CgroupManager;

use super::args::{Format, Ps};
use super::output;
use crate::container::Runtime;
use crate::error::{Failure, Result};

pub fn run(rt: &Runtime, args: Ps) -> Result<i32> {
    let c = rt.load(&args.container_id)?;
    let manager = crate::cgroups::cgroup_manager(&c)?;
    let pids: Vec<i32> = manager
        .get_all_pids()
        .map_err(|e| Failure::runtime(format!("listing processes of {}: {e}", c.id())))?
        .iter()
        .map(|p| p.as_raw())
        .collect();
    match args.format {
        Format::Json => output::line(&serde_json::to_string(&pids).expect("pids serialize")),
        Format::Table => {
            let opts = if args.ps_options.is_empty() {
                vec!["-ef".to_owned()]
            } else {
                args.ps_options
            };
            let out = Command::new("ps").args(&opts).output()?;
            if !out.status.success() {
                return Err(Failure::runtime(format!(
                    "ps {}: {}",
                    opts.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
            let text = String::from_utf8_lossy(&out.stdout);
            let mut lines = text.lines();
            let header = lines.next().unwrap_or_default();
            let pid_col = header
                .split_whitespace()
                .position(|h| h == "PID")
                .ok_or_else(|| Failure::usage("ps options must include a PID column"))?;
            output::line(header);
            for l in lines {
                let pid = l
                    .split_whitespace()
                    .nth(pid_col)
                    .and_then(|p| p.parse().ok());
                if pid.is_some_and(|p| pids.contains(&p)) {
                    output::line(l);
                }
            }
        }
    }
    Ok(0)
}
