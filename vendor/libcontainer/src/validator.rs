use std::collections::HashSet;
use std::path::Path;

use nix::sys::stat::stat;
use oci_spec::runtime::{LinuxNamespaceType, LinuxSchedulerPolicy, Spec};

use crate::error::ErrInvalidSpec;

pub struct Validator;

impl Validator {
    pub fn validate_spec(spec: &Spec) -> Result<(), ErrInvalidSpec> {
        Self::validate_spec_for_uts_namespace(spec)?;
        Self::validate_spec_for_new_user_ns(spec)?;
        Self::validate_spec_for_mnt_namespace(spec)?;
        Self::validate_spec_for_sysctl(spec)?;
        Self::validate_spec_for_scheduler(spec)?;
        Self::validate_spec_for_io_priority(spec)?;
        Self::validate_spec_for_intel_rdt(spec)?;
        Self::validate_spec_for_time_namespace(spec)?;

        Ok(())
    }

    fn validate_spec_for_uts_namespace(spec: &Spec) -> Result<(), ErrInvalidSpec> {
        let has_uts_namespace = spec
            .linux()
            .as_ref()
            .and_then(|l| l.namespaces().as_ref())
            .is_some_and(|namespaces| {
                namespaces
                    .iter()
                    .any(|ns| ns.typ() == LinuxNamespaceType::Uts)
            });

        if !has_uts_namespace {
            if spec.hostname().is_some() {
                return Err(ErrInvalidSpec::HostnameWithoutUTS);
            }

            if spec.domainname().is_some() {
                return Err(ErrInvalidSpec::DomainnameWithoutUTS);
            }
        }

        Ok(())
    }

    fn validate_spec_for_new_user_ns(spec: &Spec) -> Result<(), ErrInvalidSpec> {
        let has_user_namespace = spec
            .linux()
            .as_ref()
            .and_then(|l| l.namespaces().as_ref())
            .is_some_and(|namespaces| {
                namespaces
                    .iter()
                    .any(|ns| ns.typ() == LinuxNamespaceType::User)
            });

        if !has_user_namespace {
            let has_uid_mappings = spec
                .linux()
                .as_ref()
                .is_some_and(|l| l.uid_mappings().as_ref().is_some_and(|m| !m.is_empty()));
            let has_gid_mappings = spec
                .linux()
                .as_ref()
                .is_some_and(|l| l.gid_mappings().as_ref().is_some_and(|m| !m.is_empty()));

            if has_uid_mappings || has_gid_mappings {
                return Err(ErrInvalidSpec::UserMappingsWithoutNamespace);
            }
        }

        Ok(())
    }

    fn validate_spec_for_mnt_namespace(spec: &Spec) -> Result<(), ErrInvalidSpec> {
        let has_mnt_namespace = spec
            .linux()
            .as_ref()
            .and_then(|l| l.namespaces().as_ref())
            .is_some_and(|namespaces| {
                namespaces
                    .iter()
                    .any(|ns| ns.typ() == LinuxNamespaceType::Mount)
            });

        if !has_mnt_namespace {
            let has_masked_paths = spec
                .linux()
                .as_ref()
                .is_some_and(|l| l.masked_paths().as_ref().is_some_and(|m| !m.is_empty()));
            let has_readonly_paths = spec
                .linux()
                .as_ref()
                .is_some_and(|l| l.readonly_paths().as_ref().is_some_and(|m| !m.is_empty()));

            if has_masked_paths || has_readonly_paths {
                return Err(ErrInvalidSpec::SysEntriesWithoutMntNamespace);
            }
        }

        Ok(())
    }

    fn validate_spec_for_sysctl(spec: &Spec) -> Result<(), ErrInvalidSpec> {
        fn is_host_net_ns(path: &Path) -> Result<bool, nix::Error> {
            let current_netns = "/proc/self/ns/net";

            let host_stat = stat(current_netns)?;
            let target_stat = stat(path)?;

            Ok(host_stat.st_dev == target_stat.st_dev && host_stat.st_ino == target_stat.st_ino)
        }

        if let Some(linux) = spec.linux() {
            if let Some(sysctls) = linux.sysctl() {
                let has_ipc = linux
                    .namespaces()
                    .as_ref()
                    .is_some_and(|ns| ns.iter().any(|n| n.typ() == LinuxNamespaceType::Ipc));
                let has_uts = linux
                    .namespaces()
                    .as_ref()
                    .is_some_and(|ns| ns.iter().any(|n| n.typ() == LinuxNamespaceType::Uts));
                let has_user = linux
                    .namespaces()
                    .as_ref()
                    .is_some_and(|ns| ns.iter().any(|n| n.typ() == LinuxNamespaceType::User));

                let mut valid_ipc_sysctls = HashSet::with_capacity(8);
                valid_ipc_sysctls.insert("kernel.msgmax");
                valid_ipc_sysctls.insert("kernel.msgmnb");
                valid_ipc_sysctls.insert("kernel.msgmni");
                valid_ipc_sysctls.insert("kernel.sem");
                valid_ipc_sysctls.insert("kernel.shmall");
                valid_ipc_sysctls.insert("kernel.shmmax");
                valid_ipc_sysctls.insert("kernel.shmmni");
                valid_ipc_sysctls.insert("kernel.shm_rmid_forced");

                let mut is_host_net_cache: Option<bool> = None;
                let namespaces = linux.namespaces().as_ref();

                for key in sysctls.keys() {
                    let s = key.replace('/', ".");
                    if valid_ipc_sysctls.contains(&s.as_str()) || s.starts_with("fs.mqueue.") {
                        if !has_ipc {
                            return Err(ErrInvalidSpec::SysctlNotAllowedInHostIpc(s));
                        }
                        continue;
                    }

                    if s.starts_with("net.") {
                        let is_host_net = if let Some(cached_result) = is_host_net_cache {
                            cached_result
                        } else {
                            let computed_result = match namespaces.and_then(|ns| {
                                ns.iter().find(|n| n.typ() == LinuxNamespaceType::Network)
                            }) {
                                // No NEWNET namespace means it uses the host's
                                None => true,
                                Some(ns) => match ns.path() {
                                    // No path means a completely fresh, isolated namespace is being created
                                    None => false,
                                    // Empty string is effectively the same as None
                                    Some(path) if path.as_os_str().is_empty() => false,
                                    // A path is provided; we must verify it isn't the host's network namespace
                                    Some(path) => is_host_net_ns(path).map_err(|e| {
                                        ErrInvalidSpec::InvalidNetNsPath(e.to_string())
                                    })?,
                                },
                            };
                            is_host_net_cache = Some(computed_result);
                            computed_result
                        };

                        if is_host_net {
                            return Err(ErrInvalidSpec::SysctlNotAllowedInHostNet(s));
                        }
                        continue;
                    }

                    if has_uts {
                        match s.as_str() {
                            "kernel.domainname" => continue,
                            "kernel.hostname" => {
                                // hostname is supported via an explicit OCI field, so it is denied here
                                return Err(ErrInvalidSpec::SysctlConflictsWithOci(
                                    s,
                                    "hostname".to_string(),
                                ));
                            }
                            _ => {}
                        }
                    }

                    if s.starts_with("user.") {
                        if !has_user {
                            return Err(ErrInvalidSpec::SysctlNotAllowedInHostUser(s));
                        }
                        continue;
                    }

                    return Err(ErrInvalidSpec::SysctlNotInSeparateNamespace(s));
                }
            }
        }

        Ok(())
    }

    fn validate_spec_for_scheduler(spec: &Spec) -> Result<(), ErrInvalidSpec> {
        // https://man7.org/linux/man-pages/man2/sched_setattr.2.html#top_of_page
        if let Some(process) = spec.process() {
            if let Some(scheduler) = process.scheduler() {
                let policy = scheduler.policy();

                if *policy == LinuxSchedulerPolicy::SchedOther
                    || *policy == LinuxSchedulerPolicy::SchedBatch
                {
                    if let Some(nice) = scheduler.nice() {
                        if !(-20..=19).contains(nice) {
                            return Err(ErrInvalidSpec::Scheduler(format!(
                                "invalid scheduler.nice: '{}', must be within -20 to 19",
                                nice
                            )));
                        }
                    }
                }

                if let Some(priority) = scheduler.priority() {
                    if *priority != 0
                        && *policy != LinuxSchedulerPolicy::SchedFifo
                        && *policy != LinuxSchedulerPolicy::SchedRr
                    {
                        return Err(ErrInvalidSpec::Scheduler(
                                "scheduler.priority can only be specified for SchedFIFO or SchedRR policy".to_string(),
                            ));
                    }
                }

                if *policy != LinuxSchedulerPolicy::SchedDeadline
                    && (scheduler.runtime().is_some_and(|r| r != 0)
                        || scheduler.deadline().is_some_and(|d| d != 0)
                        || scheduler.period().is_some_and(|p| p != 0))
                {
                    {
                        return Err(ErrInvalidSpec::Scheduler(
                            "scheduler runtime/deadline/period can only be specified for SchedDeadline policy"
                                .to_string(),
                        ));
                    }
                }
            }
        }

        Ok(())
    }

    fn validate_spec_for_io_priority(spec: &Spec) -> Result<(), ErrInvalidSpec> {
        if let Some(process) = spec.process() {
            if let Some(io_priority) = process.io_priority() {
                let priority = io_priority.priority();

                if !(0..=7).contains(&priority) {
                    return Err(ErrInvalidSpec::IoPriority);
                }
            }
        }

        Ok(())
    }

    fn validate_spec_for_intel_rdt(spec: &Spec) -> Result<(), ErrInvalidSpec> {
        if let Some(linux) = spec.linux() {
            if let Some(intel_rdt) = linux.intel_rdt() {
                if let Some(clos_id) = intel_rdt.clos_id() {
                    if clos_id == "."
                        || clos_id == ".."
                        || (clos_id.len() > 1 && clos_id.contains('/'))
                    {
                        return Err(ErrInvalidSpec::InvalidIntelRdtClosId);
                    }
                }
            }
        }

        Ok(())
    }

    // Validates time namespace configuration. Rejects two invalid combinations
    // when time_offsets is set:
    //   (1) no time namespace in the spec -- nothing for the offsets to apply to
    //   (2) time namespace has a path -- joining an existing NS, whose offsets are
    //       already fixed and cannot be rewritten
    fn validate_spec_for_time_namespace(spec: &Spec) -> Result<(), ErrInvalidSpec> {
        if let Some(linux) = spec.linux()
            && linux.time_offsets().is_some()
        {
            let time_ns = linux
                .namespaces()
                .as_ref()
                .and_then(|nss| nss.iter().find(|ns| ns.typ() == LinuxNamespaceType::Time))
                .ok_or(ErrInvalidSpec::TimeNamespace)?;
            if time_ns.path().is_some() {
                return Err(ErrInvalidSpec::TimeOffsetsWithPath);
            }
        }
        Ok(())
    }
}
