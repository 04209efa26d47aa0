use super::args::{Format, List};
use super::output;
use super::state::{to_json, StateJson};
use crate::container::Runtime;
use crate::error::Result;

pub fn run(rt: &Runtime, args: List) -> Result<i32> {
    // A container being deleted concurrently (or whose state is cut) is
    // simply not listed; `state` names the latter.
    // Another runtime's container in a shared root is named on the log
    // (stderr), as runc names entries it cannot load, and not listed.
    let containers = rt.ids()?.into_iter().filter_map(|id| match rt.load(&id) {
        Ok(c) => Some(c),
        Err(e) => {
            if rt.foreign(&id).is_some() {
                tracing::warn!(id, "not listed: {e}");
            }
            None
        }
    });
    if args.quiet {
        // Ids only: no bundle or rootfs lookups per container.
        for c in containers {
            output::line(c.id());
        }
        return Ok(0);
    }
    let states: Vec<StateJson> = containers.map(|c| StateJson::of(&c)).collect();
    match args.format {
        Format::Json => output::line(&to_json(&states)?),
        Format::Table => {
            let mut rows = vec![["ID", "PID", "STATUS", "BUNDLE", "CREATED", "OWNER"]
                .map(String::from)
                .to_vec()];
            for s in &states {
                rows.push(vec![
                    s.id.clone(),
                    s.pid.to_string(),
                    s.status.clone(),
                    s.bundle.display().to_string(),
                    s.created.clone(),
                    s.owner.clone(),
                ]);
            }
            output::table(&rows);
        }
    }
    Ok(0)
}
