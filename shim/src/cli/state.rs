//! `state`: runc's JSON shape (the OCI state plus rootfs, created, owner).

use std::collections::HashMap;
use std::path::PathBuf;

use libcontainer::container::Container;
use serde::Serialize;

use super::args::Id;
use crate::container::{rootfs_of, Runtime};
use crate::error::{Failure, Result};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StateJson {
    pub oci_version: String,
    pub id: String,
    pub pid: i32,
    pub status: String,
    pub bundle: PathBuf,
    pub rootfs: PathBuf,
    pub created: String,
    pub owner: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<HashMap<String, String>>,
}

impl StateJson {
    pub fn of(c: &Container) -> Self {
        let status = c.status();
        let pid = match status {
            libcontainer::container::ContainerStatus::Stopped => 0,
            _ => c.pid().map_or(0, |p| p.as_raw()),
        };
        StateJson {
            oci_version: c.state.oci_version.clone(),
            id: c.id().to_owned(),
            pid,
            status: serde_json::to_value(status)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
            bundle: crate::container::bundle_of(c),
            rootfs: rootfs_of(c),
            created: c
                .created()
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true))
                .unwrap_or_default(),
            owner: String::new(),
            annotations: c.state.annotations.clone(),
        }
    }
}

pub fn to_json<T: Serialize>(v: &T) -> Result<String> {
    serde_json::to_string_pretty(v).map_err(|e| Failure::runtime(e.to_string()))
}

pub fn run(rt: &Runtime, args: Id) -> Result<i32> {
    let c = rt.load(&args.container_id)?;
    crate::cli::output::line(&to_json(&StateJson::of(&c))?);
    Ok(0)
}
