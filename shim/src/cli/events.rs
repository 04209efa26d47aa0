//! `events`: runc's event stream, `{"type":"stats","id":…,"data":…}` lines,
//! once with `--stats`, else every `--interval` until the container stops;
//! and sandboy's `{"type":"denial","id":…,"data":{…}}`, one per distinct
//! refusal in the container's report, as it appears.

use libcgroups::common::{AnyCgroupManager, CgroupManager, DEFAULT_CGROUP_ROOT};
use libcontainer::container::{Container, ContainerStatus};

use super::args::Events;
use crate::cgroups::cgroup_dir;
use crate::cgroups::stats::{self, Stats};
use crate::container::{require, Runtime};
use crate::error::{Failure, Result};

pub fn run(rt: &Runtime, args: Events) -> Result<i32> {
    let interval = sandboy_spec_gen::units::Span::parse(&args.interval)
        .map_err(|e| Failure::usage(format!("--interval: {e}")))?;
    // Zero would print stats as fast as they can be read, one CPU busy for
    // nothing (runc: "interval must be greater than 0").
    if interval.as_millis() == 0 {
        return Err(Failure::usage(format!(
            "--interval {:?} is zero; give a positive interval, e.g. 5s",
            args.interval
        )));
    }
    let c = rt.load(&args.container_id)?;
    require(&c, c.can_kill(), "events")?;
    let manager = crate::cgroups::cgroup_manager(&c)?;
    let mut shown = Denials::default();
    loop {
        let event =
            serde_json::json!({ "type": "stats", "id": c.id(), "data": collect(&c, &manager)? });
        crate::cli::output::line(&event.to_string());
        shown.print_new(rt, c.id());
        if args.stats {
            return Ok(0);
        }
        std::thread::sleep(interval.0);
        match rt.load(&args.container_id) {
            Ok(c) if c.status() != ContainerStatus::Stopped => continue,
            _ => {
                shown.print_new(rt, &args.container_id);
                return Ok(0);
            }
        }
    }
}

/// The report's entries printed so far (by kind, target and process).
#[derive(Default)]
struct Denials(std::collections::HashSet<(String, String, Option<String>)>);

impl Denials {
    fn print_new(&mut self, rt: &Runtime, id: &str) {
        for d in rt.denials(id) {
            if self
                .0
                .insert((d.kind.clone(), d.target.clone(), d.comm.clone()))
            {
                let event = serde_json::json!({ "type": "denial", "id": id, "data": d });
                crate::cli::output::line(&event.to_string());
            }
        }
    }
}

/// One sample, in runc's shape.
fn collect(c: &Container, manager: &AnyCgroupManager) -> Result<Stats> {
    let failed = |e: &dyn std::fmt::Display| Failure::runtime(format!("stats of {}: {e}", c.id()));
    match manager {
        AnyCgroupManager::V2(_) => {
            stats::read_v2(&cgroup_dir(c, DEFAULT_CGROUP_ROOT)?).map_err(|e| failed(&e))
        }
        _ => {
            let s = manager.stats().map_err(|e| failed(&e))?;
            let cpuset = cgroup_dir(c, &format!("{DEFAULT_CGROUP_ROOT}/cpuset"))?;
            Ok(stats::from_v1(&s, &cpuset))
        }
    }
}
