//! Differential test: sandboy's seccomp compiler against libseccomp.
//!
//! Random OCI profiles (seeded, reproducible) and podman's default profile
//! are compiled by sandboy and by libseccomp 2.5; both programs run in a
//! small cBPF interpreter on biased random `seccomp_data`, and the 32-bit
//! return values must be identical.
//!
//! Two oracles, because libseccomp has no action precedence inside one
//! filter (an unconditional rule silently overrides every other rule of its
//! syscall, whatever the actions; conflicting conditional rules are refused
//! with EEXIST), while sandboy keeps the kernel's precedence between
//! filters (most restrictive matching rule wins):
//!
//! * **direct** — for profiles where every syscall's rules share one action,
//!   libseccomp's single program for the whole profile;
//! * **per action** — for every profile: one libseccomp program per action
//!   (a union of that action's rules, where libseccomp is unambiguous),
//!   combined the way the kernel combines filters: the most restrictive
//!   matching action (the smaller errno between two ERRNO), else the default.
//!
//! The profile is read the way runc feeds libseccomp: rules equal to the
//! default action dropped, several conditions on one argument split into
//! one rule each, `errnoRet` absent = EPERM for ERRNO and 0 for TRACE (what
//! sandboy always did), names resolved with sandboy's syscall tables.
//!
//! Where sandboy deliberately differs from libseccomp, the test checks
//! sandboy's documented choice and that libseccomp returns its bad-arch
//! action (set to KILL_PROCESS, sandboy's): x32 syscall numbers on x86_64
//! get ENOSYS (or the default if at least as restrictive) from sandboy,
//! where libseccomp kills; and numbers past the newest syscall in sandboy's
//! tables get the same ENOSYS from sandboy, where libseccomp lets the
//! default decide.
//!
//! Set `SANDBOY_SECCOMP_SEED` to replay another seed.

#[path = "common/cbpf.rs"]
mod cbpf;
#[path = "common/libseccomp.rs"]
mod libseccomp;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use cbpf::{Insn, SeccompData};
use libseccomp::{ArgCmp, LibRule, Libseccomp};
use oci_spec::runtime::{LinuxSeccomp, LinuxSeccompAction as Act, LinuxSeccompOperator as Op};
use sandboy_confine::seccomp;
use sandboy_spec_gen::syscalls::{self, Arch};
use serde_json::{json, Value};

const X86_64: u32 = 0xc000_003e;
const I386: u32 = 0x4000_0003;
const AARCH64: u32 = 0xc000_00b7;
const X32_BIT: u32 = 0x4000_0000;
const KILL_PROCESS: u32 = 0x8000_0000;
const ALLOW: u32 = 0x7fff_0000;
const LOG: u32 = 0x7ffc_0000;
const ERRNO: u32 = 0x0005_0000;
const PODMAN_PROFILE: &str = "/usr/share/containers/seccomp.json";

// ---- a seeded PRNG (xorshift64*) ----

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    /// A 64-bit value near the edges comparisons care about.
    fn value(&mut self) -> u64 {
        let r = self.next();
        match self.below(10) {
            0 => r % 16,
            1 => 1 << (r % 64),
            2 => u64::from(u32::MAX) + (r % 3) - 1,
            3 => u64::MAX - (r % 3),
            4 => r & 0xffff_ffff,
            5 => (r & 0xffff_ffff_0000_0000) | (r % 4),
            6 => 0xffff_ffff_0000_0000 | (r & 0xffff_ffff),
            7 => r,
            8 => (r % 3) << 32,
            _ => r % 0x1_0000,
        }
    }
}

fn seed() -> u64 {
    std::env::var("SANDBOY_SECCOMP_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_5a4d_b0e5_2026)
}

// ---- the test's own reading of a profile (runc's) ----

/// libseccomp's SCMP_ACT_* value of an OCI action.
fn act(a: Act, errno: Option<u32>) -> u32 {
    match a {
        Act::ScmpActKillProcess => KILL_PROCESS,
        Act::ScmpActKill | Act::ScmpActKillThread => 0,
        Act::ScmpActTrap => 0x0003_0000,
        Act::ScmpActErrno => ERRNO | (errno.unwrap_or(1) & 0xffff),
        Act::ScmpActNotify => 0x7fc0_0000,
        Act::ScmpActTrace => 0x7ff0_0000 | (errno.unwrap_or(0) & 0xffff),
        Act::ScmpActLog => LOG,
        Act::ScmpActAllow => ALLOW,
    }
}

fn op_code(op: Op) -> u32 {
    match op {
        Op::ScmpCmpNe => 1,
        Op::ScmpCmpLt => 2,
        Op::ScmpCmpLe => 3,
        Op::ScmpCmpEq => 4,
        Op::ScmpCmpGe => 5,
        Op::ScmpCmpGt => 6,
        Op::ScmpCmpMaskedEq => 7,
    }
}

struct ModelRule {
    action: u32,
    nr: u32,
    conds: Vec<ArgCmp>,
}

struct Model {
    default: u32,
    rules: Vec<ModelRule>,
}

fn model(p: &LinuxSeccomp) -> Model {
    let default = act(p.default_action(), p.default_errno_ret());
    let mut rules = Vec::new();
    for sc in p.syscalls().iter().flatten() {
        let action = act(sc.action(), sc.errno_ret());
        if action == default {
            continue; // libseccomp refuses it; runc drops it
        }
        let conds: Vec<ArgCmp> = sc
            .args()
            .iter()
            .flatten()
            .map(|a| ArgCmp {
                arg: a.index() as u32,
                op: op_code(a.op()),
                datum_a: a.value(),
                datum_b: a.value_two().unwrap_or(0),
            })
            .collect();
        let shared_arg = conds
            .iter()
            .any(|c| conds.iter().filter(|d| d.arg == c.arg).count() > 1);
        let alternatives: Vec<Vec<ArgCmp>> = if shared_arg {
            conds.iter().map(|c| vec![*c]).collect()
        } else {
            vec![conds]
        };
        for name in sc.names() {
            let Some(nr) = syscalls::number(Arch::X86_64, name) else {
                continue;
            };
            for conds in &alternatives {
                rules.push(ModelRule {
                    action,
                    nr: nr as u32,
                    conds: conds.clone(),
                });
            }
        }
    }
    Model { default, rules }
}

// ---- the oracles ----

struct Oracle {
    default: u32,
    /// Without rules: libseccomp's architecture handling.
    empty: Vec<Insn>,
    direct: Option<Vec<Insn>>,
    per_action: Vec<(u32, Vec<Insn>)>,
}

fn lib_rules<'a>(m: &'a Model, only: Option<u32>) -> Vec<LibRule<'a>> {
    m.rules
        .iter()
        .filter(|r| only.is_none_or(|a| a == r.action))
        .map(|r| LibRule {
            action: r.action,
            nr: r.nr,
            conds: &r.conds,
        })
        .collect()
}

/// libseccomp's default for the program of one action's rules.
fn marker(action: u32) -> u32 {
    if action == ALLOW {
        LOG
    } else {
        ALLOW
    }
}

fn conflict_free(m: &Model) -> bool {
    let mut action_of = BTreeMap::new();
    m.rules
        .iter()
        .all(|r| *action_of.entry(r.nr).or_insert(r.action) == r.action)
}

fn oracle(lib: &Libseccomp, m: &Model, json: &str) -> Oracle {
    let build = |default, rules: &[LibRule]| {
        lib.program(default, rules, 1)
            .unwrap_or_else(|e| panic!("{e}\nprofile: {json}"))
    };
    let actions: BTreeSet<u32> = m.rules.iter().map(|r| r.action).collect();
    Oracle {
        default: m.default,
        empty: build(m.default, &[]),
        direct: conflict_free(m).then(|| build(m.default, &lib_rules(m, None))),
        per_action: actions
            .into_iter()
            .map(|a| (a, build(marker(a), &lib_rules(m, Some(a)))))
            .collect(),
    }
}

fn precedence(ret: u32) -> i32 {
    ret as i32
}

/// sandboy's documented verdict for x32 numbers.
fn x32_verdict(default: u32) -> u32 {
    if precedence(default & 0xffff_0000) <= precedence(ERRNO) {
        default
    } else {
        ERRNO | libc::ENOSYS as u32
    }
}

/// A number past the newest syscall sandboy's tables know (x86_64).
fn unreviewed(nr: u32) -> bool {
    let newest = syscalls::newest(Arch::X86_64).unwrap() as u32;
    nr > newest && nr < X32_BIT
}

/// The verdict both oracles agree on, or a description of why not.
fn expected(o: &Oracle, d: &SeccompData) -> Result<u32, String> {
    if d.arch == X86_64 && unreviewed(d.nr) {
        let lib = cbpf::run(&o.empty, d).0;
        if lib != o.default {
            return Err(format!("libseccomp's verdict past the tables is {lib:#x}"));
        }
        return Ok(x32_verdict(o.default));
    }
    // libseccomp lets -1 (a tracer's skipped syscall) through to the rules.
    if d.arch != X86_64 || (d.nr >= X32_BIT && d.nr != u32::MAX) {
        let lib = cbpf::run(&o.empty, d).0;
        if lib != KILL_PROCESS {
            return Err(format!("libseccomp's bad-arch verdict is {lib:#x}"));
        }
        return Ok(if d.arch == X86_64 {
            x32_verdict(o.default)
        } else {
            KILL_PROCESS
        });
    }
    let mut best: Option<u32> = None;
    for (action, prog) in &o.per_action {
        match cbpf::run(prog, d).0 {
            r if r == *action => {
                best = Some(best.map_or(r, |b| b.min_by_key_i32(r)));
            }
            r if r == marker(*action) => {}
            r => {
                return Err(format!(
                    "libseccomp's program for {action:#x} returned {r:#x}"
                ))
            }
        }
    }
    let combined = best.unwrap_or(o.default);
    if let Some(direct) = &o.direct {
        let r = cbpf::run(direct, d).0;
        if r != combined {
            return Err(format!(
                "libseccomp direct {r:#x} != per-action {combined:#x}"
            ));
        }
    }
    Ok(combined)
}

trait MinI32 {
    fn min_by_key_i32(self, other: u32) -> u32;
}

impl MinI32 for u32 {
    fn min_by_key_i32(self, other: u32) -> u32 {
        if precedence(other) < precedence(self) {
            other
        } else {
            self
        }
    }
}

// ---- inputs ----

fn input(rng: &mut Rng, m: &Model) -> SeccompData {
    let arch = match rng.below(20) {
        0 => I386,
        1 => AARCH64,
        2 => rng.next() as u32,
        _ => X86_64,
    };
    let known = |rng: &mut Rng| m.rules.get(rng.below(m.rules.len().max(1))).map(|r| r.nr);
    let nr = match rng.below(20) {
        0..=12 => known(rng).map_or(0, |nr| match rng.below(6) {
            0 => nr.wrapping_add(1),
            1 => nr.wrapping_sub(1),
            _ => nr,
        }),
        13..=15 => rng.below(480) as u32,
        16 => X32_BIT | rng.below(600) as u32,
        17 => rng.next() as u32,
        18 => u32::MAX,
        _ => X32_BIT - 1,
    };
    let conds: Vec<&ArgCmp> = m.rules.iter().flat_map(|r| &r.conds).collect();
    let mut args = [0u64; 6];
    for (i, a) in args.iter_mut().enumerate() {
        let near: Vec<&&ArgCmp> = conds.iter().filter(|c| c.arg as usize == i).collect();
        *a = if !near.is_empty() && rng.chance(75) {
            let c = rng.pick(&near);
            tweak(rng, c)
        } else {
            rng.value()
        };
    }
    SeccompData {
        nr,
        arch,
        ip: rng.next(),
        args,
    }
}

/// An argument close to what condition `c` tests.
fn tweak(rng: &mut Rng, c: &ArgCmp) -> u64 {
    let v = c.datum_a;
    match (c.op, rng.below(8)) {
        (7, 0..=3) => (c.datum_b & v) | (rng.next() & !v),
        (_, 0 | 1) => v,
        (_, 2) => v.wrapping_add(1),
        (_, 3) => v.wrapping_sub(1),
        (_, 4) => v ^ (1 << 32),
        (_, 5) => v & 0xffff_ffff,
        (_, 6) => v | 0xffff_ffff_0000_0000,
        _ => c.datum_b,
    }
}

// ---- profiles ----

const ACTIONS: [&str; 9] = [
    "SCMP_ACT_ALLOW",
    "SCMP_ACT_ERRNO",
    "SCMP_ACT_KILL",
    "SCMP_ACT_KILL_THREAD",
    "SCMP_ACT_KILL_PROCESS",
    "SCMP_ACT_TRAP",
    "SCMP_ACT_TRACE",
    "SCMP_ACT_LOG",
    "SCMP_ACT_NOTIFY",
];

const OPS: [&str; 7] = [
    "SCMP_CMP_NE",
    "SCMP_CMP_LT",
    "SCMP_CMP_LE",
    "SCMP_CMP_EQ",
    "SCMP_CMP_GE",
    "SCMP_CMP_GT",
    "SCMP_CMP_MASKED_EQ",
];

/// An action with its `errnoRet` (sometimes absent), as JSON fields.
fn random_action(rng: &mut Rng, allow_notify: bool) -> (String, Option<u32>) {
    let n = if allow_notify {
        ACTIONS.len()
    } else {
        ACTIONS.len() - 1
    };
    let a = ACTIONS[rng.below(n)].to_string();
    let errno = match rng.below(6) {
        0 => None,
        1 => Some(1),
        2 => Some(38),
        3 => Some(0),
        // libseccomp refuses ERRNO data from MAX_ERRNO (4095) up; the
        // kernel would clamp it to 4095 anyway.
        4 => Some(4094),
        _ => Some(rng.below(4095) as u32),
    };
    (a, errno)
}

fn random_args(rng: &mut Rng) -> Value {
    let n = 1 + rng.below(3);
    let mut used = Vec::new();
    let args: Vec<Value> = (0..n)
        .map(|_| {
            let index = if !used.is_empty() && rng.chance(25) {
                *rng.pick(&used)
            } else {
                rng.below(6)
            };
            used.push(index);
            let op = *rng.pick(&OPS);
            let mut arg = json!({"index": index, "value": rng.value(), "op": op});
            if op == "SCMP_CMP_MASKED_EQ" || rng.chance(20) {
                arg["valueTwo"] = json!(rng.value());
            }
            arg
        })
        .collect();
    Value::Array(args)
}

/// `size` bounds the syscalls named and the entries (12 and 10 make small
/// programs; a few hundred make programs that need long jumps).
fn random_profile(rng: &mut Rng, names: &[&'static str], size: (usize, usize)) -> Value {
    let pool: Vec<&str> = (0..1 + rng.below(size.0))
        .map(|_| *rng.pick(names))
        .collect();
    // Half the profiles give every syscall one action (libseccomp's single
    // program is then a second oracle).
    let one_action_each = rng.chance(50);
    let fixed: BTreeMap<&str, (String, Option<u32>)> = pool
        .iter()
        .map(|n| (*n, random_action(rng, true)))
        .collect();
    let (default, default_errno) = random_action(rng, false);
    let mut entries = Vec::new();
    let mut notify = false;
    for _ in 0..1 + rng.below(size.1) {
        let first = *rng.pick(&pool);
        let (action, errno) = if one_action_each {
            fixed[first].clone()
        } else {
            random_action(rng, true)
        };
        let mut entry_names = vec![first];
        for _ in 0..rng.below(3) {
            let n = *rng.pick(&pool);
            if !one_action_each || fixed[n] == fixed[first] {
                entry_names.push(n);
            }
        }
        if rng.chance(5) {
            entry_names.push("no_such_syscall");
        }
        notify |= action == "SCMP_ACT_NOTIFY";
        let mut e = json!({"names": entry_names, "action": action});
        if let Some(x) = errno {
            e["errnoRet"] = json!(x);
        }
        if rng.chance(60) {
            e["args"] = random_args(rng);
        }
        entries.push(e);
    }
    let mut p = json!({
        "defaultAction": default,
        "architectures": if rng.chance(50) {
            json!(["SCMP_ARCH_X86_64"])
        } else {
            json!(["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"])
        },
        "syscalls": entries,
    });
    if let Some(x) = default_errno {
        p["defaultErrnoRet"] = json!(x);
    }
    if notify {
        p["listenerPath"] = json!("/run/agent.sock");
    }
    p
}

// ---- running ----

fn sandboy_program(p: &LinuxSeccomp, json: &str) -> Vec<Insn> {
    let c = seccomp::compile_for(p, Arch::X86_64)
        .unwrap_or_else(|e| panic!("sandboy refused: {e}\nprofile: {json}"));
    cbpf::insns(c.program())
}

/// Whether condition `c` holds for `args` (libseccomp's documented
/// semantics: a plain 64-bit comparison; MASKED_EQ masks both sides).
fn holds(c: &ArgCmp, args: &[u64; 6]) -> bool {
    let (x, a, b) = (args[c.arg as usize], c.datum_a, c.datum_b);
    match c.op {
        1 => x != a,
        2 => x < a,
        3 => x <= a,
        4 => x == a,
        5 => x >= a,
        6 => x > a,
        7 => x & a == b & a,
        op => panic!("op {op}"),
    }
}

/// The verdict straight from the rules, without BPF.
fn reference(m: &Model, d: &SeccompData) -> u32 {
    if d.arch != X86_64 {
        return KILL_PROCESS;
    }
    if (d.nr >= X32_BIT && d.nr != u32::MAX) || unreviewed(d.nr) {
        return x32_verdict(m.default);
    }
    m.rules
        .iter()
        .filter(|r| r.nr == d.nr && r.conds.iter().all(|c| holds(c, &d.args)))
        .map(|r| r.action)
        .min_by_key(|&a| precedence(a))
        .unwrap_or(m.default)
}

/// The shape libseccomp 2.5.4 miscompiles: two rules of one syscall and
/// one action comparing the same argument, one of them with an ordering
/// operator. Its code then tests the high word of the second rule against
/// the low word the first one left in the accumulator. Example: epoll_wait
/// NOTIFY for arg1 < 0 and for arg1 > 0x96ec3e8c00000002, arg1 =
/// 0xffffffff: libseccomp returns NOTIFY.
fn libseccomp_bug_shape(m: &Model, nr: u32) -> bool {
    let rules: Vec<&ModelRule> = m.rules.iter().filter(|r| r.nr == nr).collect();
    rules.iter().enumerate().any(|(i, a)| {
        rules[i + 1..].iter().any(|b| {
            a.action == b.action
                && a.conds.iter().any(|x| {
                    b.conds
                        .iter()
                        .any(|y| x.arg == y.arg && (x.op != 4 || y.op != 4))
                })
        })
    })
}

#[derive(Default)]
struct Tally {
    evaluations: usize,
    /// Inputs where libseccomp's program is wrong (its known bug).
    libseccomp_wrong: usize,
    example: Option<String>,
}

/// Compares sandboy with the rules and with libseccomp on `inputs` random
/// inputs.
fn differ(
    lib: &Libseccomp,
    rng: &mut Rng,
    p: &LinuxSeccomp,
    json: &str,
    inputs: usize,
    t: &mut Tally,
) {
    let m = model(p);
    let o = oracle(lib, &m, json);
    let prog = sandboy_program(p, json);
    for _ in 0..inputs {
        let d = input(rng, &m);
        let ctx = || format!("input: {d:x?}\nprofile: {json}\nseed: {}", seed());
        let lib = expected(&o, &d).unwrap_or_else(|e| panic!("{e}\n{}", ctx()));
        let want = reference(&m, &d);
        let (got, _) = cbpf::run(&prog, &d);
        assert_eq!(
            got,
            want,
            "sandboy {got:#x}, the rules {want:#x}, libseccomp {lib:#x}\n{}",
            ctx()
        );
        if lib != want {
            assert!(
                libseccomp_bug_shape(&m, d.nr),
                "libseccomp {lib:#x}, the rules and sandboy {want:#x}, not the known bug\n{}",
                ctx()
            );
            t.libseccomp_wrong += 1;
            t.example
                .get_or_insert_with(|| format!("libseccomp {lib:#x}, sandboy {got:#x}: {}", ctx()));
        }
        t.evaluations += 1;
    }
}

fn need_libseccomp() -> Option<Libseccomp> {
    match Libseccomp::load() {
        Ok(lib) => Some(lib),
        Err(why) => {
            sandboy_tests::skip("confine differential", &why);
            None
        }
    }
}

#[test]
fn random_profiles_match_libseccomp() {
    let Some(lib) = need_libseccomp() else {
        return;
    };
    let names: Vec<&'static str> = syscalls::names(Arch::X86_64).collect();
    let mut rng = Rng(seed());
    let (mut t, mut direct) = (Tally::default(), 0);
    const PROFILES: usize = 2500;
    for _ in 0..PROFILES {
        let v = random_profile(&mut rng, &names, (12, 10));
        let json = v.to_string();
        let p: LinuxSeccomp = serde_json::from_value(v).expect("generated profile parses");
        direct += usize::from(conflict_free(&model(&p)));
        differ(&lib, &mut rng, &p, &json, 400, &mut t);
    }
    println!(
        "differential: {PROFILES} random profiles ({direct} also against libseccomp's single program), \
         {} evaluations, seed {}; libseccomp miscompiled {} of them (same-argument rules), e.g. {}",
        t.evaluations,
        seed(),
        t.libseccomp_wrong,
        t.example.as_deref().unwrap_or("-")
    );
    assert!(t.evaluations >= 1_000_000);
}

#[test]
fn large_random_profiles_match_libseccomp() {
    let Some(lib) = need_libseccomp() else {
        return;
    };
    let names: Vec<&'static str> = syscalls::names(Arch::X86_64).collect();
    let mut rng = Rng(seed() ^ 0x1a);
    let (mut t, mut long_jumps) = (Tally::default(), 0);
    for _ in 0..20 {
        let v = random_profile(&mut rng, &names, (300, 400));
        let json = v.to_string();
        let p: LinuxSeccomp = serde_json::from_value(v).expect("generated profile parses");
        long_jumps += usize::from(sandboy_program(&p, &json).iter().any(|i| i.code == 0x05));
        differ(&lib, &mut rng, &p, &json, 2_000, &mut t);
    }
    println!(
        "differential: 20 large random profiles ({long_jumps} with long jumps), {} evaluations; libseccomp miscompiled {}",
        t.evaluations, t.libseccomp_wrong
    );
    assert!(long_jumps > 0, "no profile needed a long jump");
}

/// podman's default profile (containers-common format) as the OCI profile
/// podman gives the runtime on x86_64 with its default capabilities.
fn podman_profile() -> Option<(LinuxSeccomp, String)> {
    let text = std::fs::read_to_string(PODMAN_PROFILE).ok()?;
    let mut v: Value = serde_json::from_str(&text).expect("podman profile JSON");
    const CAPS: [&str; 11] = [
        "CAP_CHOWN",
        "CAP_DAC_OVERRIDE",
        "CAP_FOWNER",
        "CAP_FSETID",
        "CAP_KILL",
        "CAP_NET_BIND_SERVICE",
        "CAP_SETFCAP",
        "CAP_SETGID",
        "CAP_SETPCAP",
        "CAP_SETUID",
        "CAP_SYS_CHROOT",
    ];
    let list = |v: &Value, k: &str| -> Vec<String> {
        v.get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let applies = |s: &Value| {
        let (inc, exc) = (&s["includes"], &s["excludes"]);
        let arches = list(inc, "arches");
        list(inc, "caps").iter().all(|c| CAPS.contains(&c.as_str()))
            && (arches.is_empty() || arches.iter().any(|a| a == "amd64"))
            && !list(exc, "caps").iter().any(|c| CAPS.contains(&c.as_str()))
            && !list(exc, "arches").iter().any(|a| a == "amd64")
    };
    let syscalls: Vec<Value> = v["syscalls"]
        .as_array()?
        .iter()
        .filter(|s| applies(s))
        .map(|s| {
            let mut s = s.clone();
            let o = s.as_object_mut().expect("syscall object");
            for k in ["includes", "excludes", "comment"] {
                o.remove(k);
            }
            s
        })
        .collect();
    let arches = v["archMap"].as_array().and_then(|m| {
        m.iter()
            .find(|a| a["architecture"] == "SCMP_ARCH_X86_64")
            .map(|a| {
                let mut l = vec![a["architecture"].clone()];
                l.extend(
                    a["subArchitectures"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default(),
                );
                l
            })
    });
    let o = v.as_object_mut()?;
    o.remove("archMap");
    o.remove("defaultErrno");
    o.insert("syscalls".into(), Value::Array(syscalls));
    o.insert("architectures".into(), json!(arches.unwrap_or_default()));
    let json = v.to_string();
    Some((
        serde_json::from_value(v).expect("converted podman profile"),
        json,
    ))
}

#[test]
fn podman_profile_matches_libseccomp() {
    let Some(lib) = need_libseccomp() else {
        return;
    };
    let Some((p, json)) = podman_profile() else {
        sandboy_tests::skip(
            "confine differential podman",
            &format!("{PODMAN_PROFILE} missing"),
        );
        return;
    };
    let mut rng = Rng(seed() ^ 0x9d);
    let mut t = Tally::default();
    differ(&lib, &mut rng, &p, &json, 100_000, &mut t);
    assert_eq!(t.libseccomp_wrong, 0, "{:?}", t.example);
    println!(
        "differential: podman's profile, {} evaluations",
        t.evaluations
    );
}

/// The strict policy's rendered deny list.
fn strict_profile() -> LinuxSeccomp {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../policies/strict.toml");
    let policy = sandboy_spec_gen::Policy::load(&path).expect("policies/strict.toml");
    sandboy_spec_gen::render::seccomp(&policy)
}

#[test]
fn strict_policy_matches_libseccomp() {
    let Some(lib) = need_libseccomp() else {
        return;
    };
    let p = strict_profile();
    let json = serde_json::to_string(&p).expect("JSON");
    let mut rng = Rng(seed() ^ 0x57);
    let mut t = Tally::default();
    differ(&lib, &mut rng, &p, &json, 50_000, &mut t);
    assert_eq!(t.libseccomp_wrong, 0, "{:?}", t.example);
}

/// Size and speed of sandboy's program against libseccomp's, printed (run
/// with `--nocapture`): instructions, the longest path through the program
/// (an upper bound on instructions executed), and the most and the mean
/// instructions executed over every x86_64 syscall number (arguments 0).
#[test]
fn program_sizes() {
    let Some(lib) = need_libseccomp() else {
        return;
    };
    let strict = strict_profile();
    let strict_json = serde_json::to_string(&strict).expect("JSON");
    let mut profiles = vec![("strict policy (deny list)", strict, strict_json)];
    match podman_profile() {
        Some((p, json)) => profiles.push(("podman 4.3 default", p, json)),
        None => sandboy_tests::skip(
            "confine program sizes",
            &format!("{PODMAN_PROFILE} missing"),
        ),
    }
    println!(
        "{:<28} {:<30} {:>6} {:>8} {:>8} {:>9}",
        "profile", "compiler", "insns", "longest", "max run", "mean run"
    );
    for (name, p, json) in &profiles {
        let m = model(p);
        let rules = lib_rules(&m, None);
        let mut programs = vec![("sandboy (one program)", Ok(sandboy_program(p, json)))];
        programs.push((
            "libseccomp 2.5.4 (default)",
            lib.program(m.default, &rules, 1),
        ));
        programs.push((
            "libseccomp 2.5.4 (binary tree)",
            lib.program(m.default, &rules, 2),
        ));
        for (compiler, prog) in programs {
            let prog = match prog {
                Ok(prog) => prog,
                Err(e) => {
                    println!("{name:<28} {compiler:<30} refused: {e}");
                    continue;
                }
            };
            let runs: Vec<usize> = syscalls::names(Arch::X86_64)
                .filter_map(|n| syscalls::number(Arch::X86_64, n))
                .map(|nr| {
                    let d = SeccompData {
                        nr: nr as u32,
                        arch: X86_64,
                        ..SeccompData::default()
                    };
                    cbpf::run(&prog, &d).1
                })
                .collect();
            let mean = runs.iter().sum::<usize>() as f64 / runs.len() as f64;
            println!(
                "{name:<28} {compiler:<30} {:>6} {:>8} {:>8} {mean:>9.1}",
                prog.len(),
                cbpf::longest_path(&prog),
                runs.iter().max().unwrap_or(&0),
            );
        }
        divergence_from_single_program(&lib, &m, p, json, name);
    }
}

/// Where libseccomp's single program for the whole profile (what runc and
/// crun install) decides differently from sandboy, because libseccomp lets
/// an unconditional rule override the others of its syscall.
fn divergence_from_single_program(
    lib: &Libseccomp,
    m: &Model,
    p: &LinuxSeccomp,
    json: &str,
    name: &str,
) {
    let Ok(single) = lib.program(m.default, &lib_rules(m, None), 1) else {
        return;
    };
    let ours = sandboy_program(p, json);
    let mut rng = Rng(seed());
    let mut differ = BTreeSet::new();
    for _ in 0..20_000 {
        let d = input(&mut rng, m);
        // Foreign and x32 numbers: documented, checked in `expected`.
        let native = d.arch == X86_64 && (d.nr < X32_BIT || d.nr == u32::MAX);
        if native && cbpf::run(&single, &d).0 != cbpf::run(&ours, &d).0 {
            differ.insert(syscalls::name(Arch::X86_64, i64::from(d.nr)).unwrap_or("?"));
        }
    }
    println!("{name}: libseccomp's single program decides differently for {differ:?}");
}
