//! `features`: the runtime-spec features document, with sandboy's annotations.

use std::collections::HashMap;

use oci_spec::runtime::{
    Arch, CgroupBuilder, FeaturesBuilder, LinuxFeatureBuilder, LinuxNamespaceType,
    LinuxSeccompAction, SeccompBuilder, VERSION,
};
use sandboy_spec_gen::annotations;

use crate::error::{Failure, Result};

pub fn run() -> Result<i32> {
    let bad = |e: oci_spec::OciSpecError| Failure::runtime(e.to_string());
    let ns = [
        LinuxNamespaceType::Pid,
        LinuxNamespaceType::Network,
        LinuxNamespaceType::Uts,
        LinuxNamespaceType::Ipc,
        LinuxNamespaceType::Mount,
        LinuxNamespaceType::Cgroup,
        LinuxNamespaceType::Time,
    ];
    let seccomp = SeccompBuilder::default()
        .enabled(true)
        .actions(vec![
            LinuxSeccompAction::ScmpActAllow,
            LinuxSeccompAction::ScmpActErrno,
            LinuxSeccompAction::ScmpActKill,
            LinuxSeccompAction::ScmpActKillProcess,
            LinuxSeccompAction::ScmpActKillThread,
            LinuxSeccompAction::ScmpActLog,
            LinuxSeccompAction::ScmpActTrap,
        ])
        .operators(
            [
                "SCMP_CMP_EQ",
                "SCMP_CMP_NE",
                "SCMP_CMP_LT",
                "SCMP_CMP_LE",
                "SCMP_CMP_GT",
                "SCMP_CMP_GE",
                "SCMP_CMP_MASKED_EQ",
            ]
            .map(String::from)
            .to_vec(),
        )
        .archs(vec![Arch::ScmpArchX86_64, Arch::ScmpArchAarch64])
        .build()
        .map_err(bad)?;
    let linux = LinuxFeatureBuilder::default()
        .namespaces(ns.to_vec())
        .cgroup(
            CgroupBuilder::default()
                .v1(true)
                .v2(true)
                .systemd(false)
                .systemd_user(false)
                .build()
                .map_err(bad)?,
        )
        .seccomp(seccomp)
        .build()
        .map_err(bad)?;
    let notes: HashMap<String, String> = [
        (
            annotations::LANDLOCK,
            "Landlock ruleset JSON (fs, net, scope, mode)",
        ),
        (
            annotations::TIMEOUT,
            "wall-clock limit; the container is killed at the deadline",
        ),
        (
            annotations::WASM_LIMITS,
            "JSON of the policy's [wasm] table",
        ),
        (
            annotations::POLICY_SHA256,
            "sha256 of the policy the spec came from",
        ),
        (annotations::OCI_HANDLER, "\"wasm\" selects OCI-wasm mode"),
        (
            annotations::WASM_VARIANT,
            "compat | compat-smart select OCI-wasm mode",
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .chain([(
        "org.opencontainers.runtime-spec.features".to_owned(),
        "sandboy".to_owned(),
    )])
    .collect();
    let features = FeaturesBuilder::default()
        .oci_version_min("1.0.0".to_owned())
        .oci_version_max(VERSION.to_owned())
        .hooks(
            [
                "prestart",
                "createRuntime",
                "createContainer",
                "startContainer",
                "poststart",
                "poststop",
            ]
            .map(String::from)
            .to_vec(),
        )
        .linux(linux)
        .annotations(notes)
        .build()
        .map_err(bad)?;
    crate::cli::output::line(&crate::cli::state::to_json(&features)?);
    Ok(0)
}
