//! A tiny binding to libseccomp, loaded with dlopen so that a machine
//! without it skips the differential test instead of failing to link.

use std::ffi::{c_int, c_uint, c_void, CStr};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::FromRawFd;

use crate::cbpf::Insn;

/// `struct scmp_arg_cmp`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ArgCmp {
    pub arg: c_uint,
    /// `enum scmp_compare`: NE 1, LT 2, LE 3, EQ 4, GE 5, GT 6, MASKED_EQ 7.
    pub op: c_uint,
    pub datum_a: u64,
    pub datum_b: u64,
}

type Ctx = *mut c_void;
type InitFn = unsafe extern "C" fn(u32) -> Ctx;
type AttrSetFn = unsafe extern "C" fn(Ctx, c_int, u32) -> c_int;
type RuleAddArrayFn = unsafe extern "C" fn(Ctx, u32, c_int, c_uint, *const ArgCmp) -> c_int;
type ExportBpfFn = unsafe extern "C" fn(Ctx, c_int) -> c_int;
type ReleaseFn = unsafe extern "C" fn(Ctx);

pub struct Libseccomp {
    init: InitFn,
    attr_set: AttrSetFn,
    rule_add_array: RuleAddArrayFn,
    export_bpf: ExportBpfFn,
    release: ReleaseFn,
}

const SCMP_FLTATR_ACT_BADARCH: c_int = 2;
const SCMP_FLTATR_CTL_OPTIMIZE: c_int = 8;

/// One rule for libseccomp: action, syscall number, conditions (ANDed).
pub struct LibRule<'a> {
    pub action: u32,
    pub nr: u32,
    pub conds: &'a [ArgCmp],
}

impl Libseccomp {
    pub fn load() -> Result<Self, String> {
        // SAFETY: dlopen of a shared library by name; libseccomp has no
        // constructors with side effects.
        let handle = unsafe { libc::dlopen(c"libseccomp.so.2".as_ptr(), libc::RTLD_NOW) };
        if handle.is_null() {
            return Err("libseccomp.so.2 cannot be loaded (apt-get install libseccomp2)".into());
        }
        let sym = |name: &CStr| {
            // SAFETY: handle is a live dlopen handle; name is a C string.
            let p = unsafe { libc::dlsym(handle, name.as_ptr()) };
            if p.is_null() {
                Err(format!("libseccomp has no {name:?}"))
            } else {
                Ok(p)
            }
        };
        // SAFETY: each symbol has the C signature of libseccomp 2.5's
        // seccomp.h, which the field types restate.
        unsafe {
            Ok(Libseccomp {
                init: std::mem::transmute::<*mut c_void, InitFn>(sym(c"seccomp_init")?),
                attr_set: std::mem::transmute::<*mut c_void, AttrSetFn>(sym(c"seccomp_attr_set")?),
                rule_add_array: std::mem::transmute::<*mut c_void, RuleAddArrayFn>(sym(
                    c"seccomp_rule_add_array",
                )?),
                export_bpf: std::mem::transmute::<*mut c_void, ExportBpfFn>(sym(
                    c"seccomp_export_bpf",
                )?),
                release: std::mem::transmute::<*mut c_void, ReleaseFn>(sym(c"seccomp_release")?),
            })
        }
    }

    /// libseccomp's program for the native architecture: `default`, bad
    /// architectures get KILL_PROCESS; `optimize` 2 is its binary tree.
    pub fn program(
        &self,
        default: u32,
        rules: &[LibRule],
        optimize: u32,
    ) -> Result<Vec<Insn>, String> {
        // SAFETY: plain calls into libseccomp with a context it created,
        // released on every path; arrays outlive the calls.
        unsafe {
            let ctx = (self.init)(default);
            if ctx.is_null() {
                return Err(format!("seccomp_init({default:#x}) failed"));
            }
            let result = self
                .fill(ctx, rules, optimize)
                .and_then(|()| self.export(ctx));
            (self.release)(ctx);
            result
        }
    }

    unsafe fn fill(&self, ctx: Ctx, rules: &[LibRule], optimize: u32) -> Result<(), String> {
        // SAFETY: ctx is live (caller).
        let rc = unsafe {
            (self.attr_set)(ctx, SCMP_FLTATR_ACT_BADARCH, libc::SECCOMP_RET_KILL_PROCESS)
        };
        check(rc, "attr BADARCH")?;
        // SAFETY: as above.
        let rc = unsafe { (self.attr_set)(ctx, SCMP_FLTATR_CTL_OPTIMIZE, optimize) };
        check(rc, "attr OPTIMIZE")?;
        for r in rules {
            // SAFETY: conds points to conds.len() valid structs.
            let rc = unsafe {
                (self.rule_add_array)(
                    ctx,
                    r.action,
                    r.nr as c_int,
                    r.conds.len() as c_uint,
                    r.conds.as_ptr(),
                )
            };
            check(
                rc,
                &format!("rule {:#x} for {} {:?}", r.action, r.nr, r.conds),
            )?;
        }
        Ok(())
    }

    unsafe fn export(&self, ctx: Ctx) -> Result<Vec<Insn>, String> {
        // SAFETY: memfd_create with a C string name; the fd is owned below.
        let fd = unsafe { libc::memfd_create(c"bpf".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(format!("memfd_create: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: fd is a fresh fd nothing else owns.
        let mut file = unsafe { File::from_raw_fd(fd) };
        // SAFETY: ctx is live; fd is open for writing.
        check(unsafe { (self.export_bpf)(ctx, fd) }, "export")?;
        let mut bytes = Vec::new();
        file.seek(SeekFrom::Start(0)).map_err(|e| e.to_string())?;
        file.read_to_end(&mut bytes).map_err(|e| e.to_string())?;
        Ok(bytes
            .chunks_exact(8)
            .map(|c| Insn {
                code: u16::from_ne_bytes([c[0], c[1]]),
                jt: c[2],
                jf: c[3],
                k: u32::from_ne_bytes([c[4], c[5], c[6], c[7]]),
            })
            .collect())
    }
}

fn check(rc: c_int, what: &str) -> Result<(), String> {
    if rc < 0 {
        Err(format!(
            "libseccomp {what}: {}",
            std::io::Error::from_raw_os_error(-rc)
        ))
    } else {
        Ok(())
    }
}
