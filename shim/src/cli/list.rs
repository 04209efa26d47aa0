use super::args::{Format, List};
use super::output;
use super::state::{to_json, StateJson};
use crate::container::Runtime;
use crate::error::Result;

pub fn run(rt: &Runtime, args: List) -> Result<i32> {
    let mut states = Vec::new();
    for id in rt.ids()? {
        // A container being deleted concurrently is simply not listed.
        if let Ok(c) = rt.load(&id) {
            states.push(StateJson::of(&c));
        }
    }
    if args.quiet {
        for s in &states {
            output::line(&s.id);
        }
        return Ok(0);
    }
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
