//! `events`: runc's event stream, `{"type":"stats","id":…,"data":…}` lines,
//! once with `--stats`, else every `--interval` until the container stops.

use libcgroups::common::CgroupManager;
use libcontainer::container::ContainerStatus;

use crate::cli::Events;
use crate::error::{Failure, Result};
use crate::ops::{require, Runtime};

pub fn run(rt: &Runtime, args: Events) -> Result<i32> {
    let interval = sandboy_spec_gen::units::Span::parse(&args.interval)
        .map_err(|e| Failure::usage(format!("--interval: {e}")))?;
    let c = rt.load(&args.container_id)?;
    require(&c, c.can_kill(), "events")?;
    let manager = crate::ops::cgroup_manager(&c)?;
    loop {
        let stats = manager
            .stats()
            .map_err(|e| Failure::runtime(format!("stats of {}: {e}", c.id())))?;
        let event = serde_json::json!({ "type": "stats", "id": c.id(), "data": stats });
        crate::output::line(&event.to_string());
        if args.stats {
            return Ok(0);
        }
        std::thread::sleep(interval.0);
        match rt.load(&args.container_id) {
            Ok(c) if c.status() != ContainerStatus::Stopped => continue,
            _ => return Ok(0),
        }
    }
}
