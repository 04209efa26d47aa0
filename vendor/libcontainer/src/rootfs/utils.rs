use std::path::PathBuf;
use std::str::FromStr;

use nix::mount::MsFlags;
use nix::sys::stat::SFlag;
use oci_spec::runtime::{LinuxDevice, LinuxDeviceBuilder, LinuxDeviceType, Mount};

use super::mount::MountError;
use crate::syscall::linux::{self, MountOption, MountRecursive};

const IDMAP_FLAG: &str = "idmap";
const RIDMAP_FLAG: &str = "ridmap";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountOptionConfig {
    /// Mount Flags.
    pub flags: MsFlags,

    /// Mount data options applied to the mount (e.g. `lowerdir=...`).
    pub data: Vec<String>,

    /// RecAttr represents mount properties to be applied recursively.
    pub rec_attr: Option<linux::MountAttr>,
}

pub fn default_devices() -> Vec<LinuxDevice> {
    vec![
        LinuxDeviceBuilder::default()
            .path(PathBuf::from("/dev/null"))
            .typ(LinuxDeviceType::C)
            .major(1)
            .minor(3)
            .file_mode(0o0666u32)
            .build()
            .unwrap(),
        LinuxDeviceBuilder::default()
            .path(PathBuf::from("/dev/zero"))
            .typ(LinuxDeviceType::C)
            .major(1)
            .minor(5)
            .file_mode(0o0666u32)
            .build()
            .unwrap(),
        LinuxDeviceBuilder::default()
            .path(PathBuf::from("/dev/full"))
            .typ(LinuxDeviceType::C)
            .major(1)
            .minor(7)
            .file_mode(0o0666u32)
            .build()
            .unwrap(),
        LinuxDeviceBuilder::default()
            .path(PathBuf::from("/dev/tty"))
            .typ(LinuxDeviceType::C)
            .major(5)
            .minor(0)
            .file_mode(0o0666u32)
            .build()
            .unwrap(),
        LinuxDeviceBuilder::default()
            .path(PathBuf::from("/dev/urandom"))
            .typ(LinuxDeviceType::C)
            .major(1)
            .minor(9)
            .file_mode(0o0666u32)
            .build()
            .unwrap(),
        LinuxDeviceBuilder::default()
            .path(PathBuf::from("/dev/random"))
            .typ(LinuxDeviceType::C)
            .major(1)
            .minor(8)
            .file_mode(0o0666u32)
            .build()
            .unwrap(),
    ]
}

pub fn to_sflag(dev_type: LinuxDeviceType) -> SFlag {
    match dev_type {
        LinuxDeviceType::A => SFlag::S_IFBLK | SFlag::S_IFCHR | SFlag::S_IFIFO,
        LinuxDeviceType::B => SFlag::S_IFBLK,
        LinuxDeviceType::C | LinuxDeviceType::U => SFlag::S_IFCHR,
        LinuxDeviceType::P => SFlag::S_IFIFO,
    }
}

pub fn parse_mount(m: &Mount) -> std::result::Result<MountOptionConfig, MountError> {
    let mut flags = MsFlags::empty();
    let mut data = Vec::new();
    let mut mount_attr: Option<linux::MountAttr> = None;

    if let Some(options) = &m.options() {
        for option in options {
            match option.as_str() {
                IDMAP_FLAG => {
                    continue;
                }
                RIDMAP_FLAG => {
                    continue;
                }
                _ => {}
            }

            if let Ok(mount_attr_option) = linux::MountRecursive::from_str(option.as_str()) {
                // Some options aren't corresponding to the mount flags.
                // These options need `AT_RECURSIVE` options.
                // ref: https://github.com/opencontainers/runtime-spec/blob/main/config.md#linux-mount-options
                let (is_clear, flag) = match mount_attr_option {
                    MountRecursive::Rdonly(is_clear, flag) => (is_clear, flag),
                    MountRecursive::Nosuid(is_clear, flag) => (is_clear, flag),
                    MountRecursive::Nodev(is_clear, flag) => (is_clear, flag),
                    MountRecursive::Noexec(is_clear, flag) => (is_clear, flag),
                    MountRecursive::Atime(is_clear, flag) => (is_clear, flag),
                    MountRecursive::Relatime(is_clear, flag) => (is_clear, flag),
                    MountRecursive::Noatime(is_clear, flag) => (is_clear, flag),
                    MountRecursive::StrictAtime(is_clear, flag) => (is_clear, flag),
                    MountRecursive::NoDiratime(is_clear, flag) => (is_clear, flag),
                    MountRecursive::Nosymfollow(is_clear, flag) => (is_clear, flag),
                };

                if mount_attr.is_none() {
                    mount_attr = Some(linux::MountAttr {
                        attr_set: 0,
                        attr_clr: 0,
                        propagation: 0,
                        userns_fd: 0,
                    });
                }

                if let Some(mount_attr) = &mut mount_attr {
                    if is_clear {
                        mount_attr.attr_clr |= flag;
                    } else {
                        mount_attr.attr_set |= flag;
                    }
                    if flag & linux::MOUNT_ATTR__ATIME == flag {
                        // https://man7.org/linux/man-pages/man2/mount_setattr.2.html
                        // "cannot simply specify the access-time setting in attr_set, but must
                        // also include MOUNT_ATTR__ATIME in the attr_clr field."
                        mount_attr.attr_clr |= linux::MOUNT_ATTR__ATIME;
                    }
                }
                continue;
            }

            if let Some((is_clear, flag)) = match MountOption::from_str(option.as_str()) {
                Ok(v) => match v {
                    MountOption::Defaults(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Ro(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Rw(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Suid(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Nosuid(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Dev(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Nodev(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Exec(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Noexec(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Sync(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Async(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Dirsync(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Remount(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Mand(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Nomand(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Atime(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Noatime(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Diratime(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Nodiratime(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Bind(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Rbind(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Unbindable(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Runbindable(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Private(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Rprivate(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Shared(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Rshared(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Slave(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Rslave(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Relatime(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Norelatime(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Strictatime(is_clear, flag) => Some((is_clear, flag)),
                    MountOption::Nostrictatime(is_clear, flag) => Some((is_clear, flag)),
                },
                Err(_) => None,
            } {
                if is_clear {
                    flags &= !flag;
                } else {
                    flags |= flag;
                }
                continue;
            }

            data.push(option.as_str());
        }
    }
    Ok(MountOptionConfig {
        flags,
        data: data.into_iter().map(|s| s.to_string()).collect(),
        rec_attr: mount_attr,
    })
}

pub fn is_bind(m: &Mount) -> bool {
    // The `type == "bind"` check is kept only for backward compatibility
    // with existing configs (see issue #3603); it diverges from runc, which
    // rejects `type: "bind"` alone, and may be removed in a future release
    // once a deprecation path is agreed upon.
    m.typ().as_deref() == Some("bind")
        || m.options()
            .as_deref()
            .is_some_and(|opts| opts.iter().any(|o| o == "bind" || o == "rbind"))
}
