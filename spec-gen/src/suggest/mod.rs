//! `sandboy-spec-gen suggest`: the smallest policy change that would allow
//! what a denial report (`denials.jsonl`, `run --report`) says was refused,
//! printed as a unified diff of the policy's own TOML.
//!
//! Three steps, one module each: [`report`] reads the report (located
//! errors for a corrupted line), [`plan`] decides what to add — collapsing
//! sibling paths into their directory, refusing protected paths unless
//! forced, skipping what the policy already allows — and [`edit`] applies
//! the plan to the TOML text without disturbing its comments and layout
//! (`toml_edit`), then renders the diff (`similar`). Every widening is in
//! the diff and, when it is more than the refused access itself (a
//! collapse), also said in a note: nothing widens silently.

pub mod edit;
pub mod plan;
pub mod protect;
pub mod report;

use std::path::Path;

use crate::{Error, Policy};

pub use plan::{Edit, Options, Plan};

/// What `suggest` produces: the edited policy text, its diff against the
/// original, and the notes to print beside it.
#[derive(Debug, Clone)]
pub struct Suggestion {
    pub text: String,
    pub diff: String,
    pub notes: Vec<String>,
}

/// Suggest the change to the policy at `policy_path` for the refusals in
/// `reports`.
pub fn suggest(policy_path: &Path, reports: &[&Path], opts: &Options) -> Result<Suggestion, Error> {
    let policy = Policy::load(policy_path)?;
    let src = crate::input::read_text(policy_path, crate::input::TEXT_MAX)
        .map_err(|e| Error::read("read", policy_path, e))?;
    let mut refused = Vec::new();
    for r in reports {
        refused.extend(report::load(r)?);
    }
    let plan = plan::plan(&policy, &refused, opts);
    let text = edit::apply(&src, &plan.edits);
    let name = policy_path.display().to_string();
    let diff = edit::diff(&src, &text, &name);
    Ok(Suggestion {
        text,
        diff,
        notes: plan.notes,
    })
}
