use oci_spec::runtime::{Linux, LinuxIdMapping, LinuxNamespaceType, Mount as SpecMount};

use crate::error::ErrInvalidSpec;
use crate::syscall::Syscall;
use crate::utils::rootless_required;

fn has_non_empty_mappings(mappings: &[LinuxIdMapping]) -> bool {
    !mappings.is_empty()
}

fn container_userns_has_mappings(linux: Option<&Linux>) -> bool {
    let Some(linux) = linux else {
        return false;
    };
    let Some(namespaces) = linux.namespaces().as_deref() else {
        return false;
    };
    match namespaces
        .iter()
        .find(|ns| ns.typ() == LinuxNamespaceType::User)
    {
        None => false,
        Some(ns) if ns.path().is_some() => true,
        Some(_) => {
            has_non_empty_mappings(linux.uid_mappings().as_deref().unwrap_or(&[]))
                && has_non_empty_mappings(linux.gid_mappings().as_deref().unwrap_or(&[]))
        }
    }
}

fn validate_mount_mappings(mount: &SpecMount) -> Result<bool, ErrInvalidSpec> {
    match (
        mount.uid_mappings().as_deref(),
        mount.gid_mappings().as_deref(),
    ) {
        (Some(uid_mappings), Some(gid_mappings))
            if has_non_empty_mappings(uid_mappings) && has_non_empty_mappings(gid_mappings) =>
        {
            Ok(true)
        }
        // idmap/ridmap can use the container user namespace when mount-specific mappings are absent.
        (None, None) => Ok(false),
        _ => {
            tracing::error!(
                destination = ?mount.destination(),
                "mount uid/gid mappings must be non-empty and specified together"
            );
            Err(ErrInvalidSpec::MountIdmapMissingMappings)
        }
    }
}

pub(crate) fn validate_idmapped_mounts(
    mounts: &[SpecMount],
    linux: Option<&Linux>,
    syscall: &dyn Syscall,
) -> Result<(), ErrInvalidSpec> {
    let can_use_container_userns = container_userns_has_mappings(linux);
    let is_rootless = rootless_required(syscall).unwrap_or(false);

    for mount in mounts {
        let has_any_mount_mappings =
            mount.uid_mappings().is_some() || mount.gid_mappings().is_some();
        let options = mount.options().as_deref().unwrap_or(&[]);
        let has_idmap_option = options.iter().any(|o| o == "idmap" || o == "ridmap");
        if !has_idmap_option && !has_any_mount_mappings {
            continue;
        }

        let is_bind = mount.typ().as_deref() == Some("bind")
            || options.iter().any(|o| o == "bind" || o == "rbind");

        if !is_bind {
            tracing::error!(
                destination = ?mount.destination(),
                "mount specifies idmap option for non-bind mount"
            );
            return Err(ErrInvalidSpec::MountIdmapNonBind);
        }

        if is_rootless {
            tracing::error!(
                destination = ?mount.destination(),
                "idmapped mounts are not supported in rootless containers"
            );
            return Err(ErrInvalidSpec::MountIdmapRootless);
        }

        let has_mount_mappings = validate_mount_mappings(mount)?;

        if !has_mount_mappings && !can_use_container_userns {
            tracing::error!(
                destination = ?mount.destination(),
                "idmap/ridmap without mount uid/gid mappings requires a usable container user namespace"
            );
            return Err(ErrInvalidSpec::MountIdmapMissingMappings);
        }

        // TODO: remove this guard when idmapped mount support is implemented.
        tracing::error!(
            destination = ?mount.destination(),
            "idmapped mounts are not supported"
        );
        return Err(ErrInvalidSpec::MountIdmapUnsupported);
    }

    Ok(())
}
