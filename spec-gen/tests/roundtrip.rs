//! Property tests: the annotation codec is lossless, and a policy's
//! ruleset survives policy → annotation → decode unchanged.

use std::path::Path;
use std::time::Duration;

use proptest::prelude::*;
use sandboy_spec_gen::annotations::{
    self, access_bits, Access, FsRule, LandlockMode, LandlockRuleset, NetRules, Scope, WasmLimits,
    ACCESS_NAMES, GROUP_EXEC, GROUP_READ, GROUP_WRITE,
};
use sandboy_spec_gen::units::{ByteSize, Span};
use sandboy_spec_gen::{render, Policy, RenderOptions};

fn mode() -> impl Strategy<Value = LandlockMode> {
    prop_oneof![
        Just(LandlockMode::Enforce),
        Just(LandlockMode::BestEffort),
        Just(LandlockMode::Off)
    ]
}

fn path() -> impl Strategy<Value = String> {
    // Components never "." or "..": the policy normalizes those away.
    prop::collection::vec("[a-z0-9_][a-z0-9_.-]{0,7}", 1..4)
        .prop_map(|parts| format!("/{}", parts.join("/")))
}

fn access() -> impl Strategy<Value = Access> {
    prop_oneof![
        (1u64..(1 << 20)).prop_map(Access::Raw),
        prop::sample::select(
            ACCESS_NAMES
                .iter()
                .map(|(n, _)| n.to_string())
                .collect::<Vec<_>>()
        )
        .prop_map(Access::Named),
    ]
}

fn scopes() -> impl Strategy<Value = Vec<Scope>> {
    prop::sample::subsequence(vec![Scope::AbstractUnixSocket, Scope::Signal], 0..=2)
}

fn ruleset() -> impl Strategy<Value = LandlockRuleset> {
    (
        mode(),
        prop::collection::vec((path(), prop::collection::vec(access(), 1..4)), 0..6),
        prop::option::of((
            prop::collection::vec(1u16.., 0..4),
            prop::collection::vec(1u16.., 0..4),
        )),
        scopes(),
    )
        .prop_map(|(mode, fs, net, scope)| LandlockRuleset {
            mode,
            fs: fs
                .into_iter()
                .map(|(path, access)| FsRule { path, access })
                .collect(),
            net: net.map(|(connect, bind)| NetRules { connect, bind }),
            scope,
        })
}

fn size() -> impl Strategy<Value = ByteSize> {
    prop_oneof![
        (0u64..1 << 40).prop_map(ByteSize),
        (1u64..4096).prop_map(|n| ByteSize(n << 20))
    ]
}

fn span() -> impl Strategy<Value = Span> {
    (0u64..10_000_000).prop_map(|ms| Span(Duration::from_millis(ms)))
}

fn wasm_limits() -> impl Strategy<Value = WasmLimits> {
    (
        prop::option::of(any::<u64>()),
        prop::option::of(span()),
        prop::option::of(size()),
        prop::option::of(size()),
        prop::option::of(size()),
        prop::option::of(any::<u64>()),
    )
        .prop_map(
            |(fuel, deadline, memory, max_input, max_output, max_results)| WasmLimits {
                fuel,
                deadline,
                memory,
                max_input,
                max_output,
                max_results,
            },
        )
}

fn toml_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", quoted.join(", "))
}

fn port_list(items: &[u16]) -> String {
    let v: Vec<String> = items.iter().map(u16::to_string).collect();
    format!("[{}]", v.join(", "))
}

proptest! {
    // No regression files in the source tree; failures print their input.
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn ruleset_encode_decode_identity(r in ruleset()) {
        prop_assert_eq!(LandlockRuleset::decode(&r.encode()).unwrap(), r);
    }

    #[test]
    fn wasm_limits_encode_decode_identity(w in wasm_limits()) {
        prop_assert_eq!(WasmLimits::decode(&w.encode()).unwrap(), w);
    }

    #[test]
    fn policy_to_annotation_to_ruleset(
        mode in prop::sample::select(vec!["enforce", "best-effort", "off"]),
        read in prop::collection::vec(path(), 0..5),
        exec in prop::collection::vec(path(), 0..5),
        write in prop::collection::vec(path(), 0..5),
        connect in prop::collection::vec(1u16.., 0..4),
        bind in prop::collection::vec(1u16.., 0..4),
        scope in scopes(),
    ) {
        let scope_names: Vec<String> = scope.iter().map(|s| match s {
            Scope::AbstractUnixSocket => "abstract-unix-socket".to_string(),
            Scope::Signal => "signal".to_string(),
        }).collect();
        let src = format!(
            "version = 1\nname = \"prop\"\n[landlock]\nmode = {mode:?}\n[fs]\nread = {}\nexec = {}\nwrite = {}\n[net]\nconnect = {}\nbind = {}\nscope = {}\n[process]\nargs = [\"/bin/true\"]\n",
            toml_list(&read), toml_list(&exec), toml_list(&write), port_list(&connect), port_list(&bind), toml_list(&scope_names),
        );
        let policy = Policy::parse(&src, "prop.toml", Path::new("/")).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let expected = render::ruleset(&policy);

        // Through the rendered config.json, as the runtime will read it.
        let json = render::generate(&policy, &RenderOptions::default()).unwrap();
        let spec: oci_spec::runtime::Spec = serde_json::from_str(&json).unwrap();
        let value = &spec.annotations().as_ref().unwrap()[annotations::LANDLOCK];
        let decoded = LandlockRuleset::decode(value).unwrap();
        prop_assert_eq!(&decoded, &expected);

        // And the decoded rules grant exactly what the lists say.
        for rule in &decoded.fs {
            let bits = annotations::rule_bits(&rule.access).unwrap();
            let mut want = 0;
            if read.contains(&rule.path) { want |= GROUP_READ; }
            if exec.contains(&rule.path) { want |= GROUP_EXEC; }
            if write.contains(&rule.path) { want |= GROUP_WRITE | GROUP_READ; }
            prop_assert_eq!(bits, want, "{}", rule.path);
        }
        let mut all: Vec<&String> = read.iter().chain(&exec).chain(&write).collect();
        all.sort();
        all.dedup();
        prop_assert_eq!(decoded.fs.len(), all.len());
        let net = decoded.net.unwrap();
        let mut c = connect.clone(); c.sort(); c.dedup();
        let mut b = bind.clone(); b.sort(); b.dedup();
        prop_assert_eq!(net.connect, c);
        prop_assert_eq!(net.bind, b);
        let mut s = scope.clone(); s.sort();
        prop_assert_eq!(decoded.scope, s);
        let m = match mode { "enforce" => LandlockMode::Enforce, "best-effort" => LandlockMode::BestEffort, _ => LandlockMode::Off };
        prop_assert_eq!(decoded.mode, m);
    }
}

#[test]
fn access_names_resolve() {
    for (name, bits) in ACCESS_NAMES {
        assert_eq!(
            access_bits(&Access::Named(name.to_string())).unwrap(),
            *bits
        );
    }
}
