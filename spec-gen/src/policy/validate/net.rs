//! `[net]`: namespace, Landlock TCP ports, UDP ports, scopes and egress
//! rules.

use std::collections::BTreeSet;

use toml::Spanned;

use super::super::diags::Diags;
use super::super::egress::{CidrRule, Egress, HostRule, RuleError};
use super::super::reader::Table;
use super::values::{choice, ports};
use crate::annotations::Scope;
use crate::policy::NetNamespace;

pub(super) struct Net {
    pub namespace: NetNamespace,
    pub connect: Vec<u16>,
    pub bind: Vec<u16>,
    pub udp: Vec<u16>,
    pub unix: bool,
    pub scope: Vec<Scope>,
    pub egress: Egress,
}

pub(super) fn check(mut t: Table, d: &mut Diags) -> Net {
    let ns_key = t.key("namespace");
    let ns_value = t.str(d, "namespace");
    let namespace = ns_value
        .as_ref()
        .and_then(|v| {
            choice(
                d,
                v,
                &ns_key,
                "network namespace",
                &[("none", NetNamespace::None), ("host", NetNamespace::Host)],
            )
        })
        .unwrap_or(NetNamespace::None);
    let connect = ports(&mut t, d, "connect", "TCP");
    let bind = ports(&mut t, d, "bind", "TCP");
    let (udp_key, udp_span) = (t.key("udp"), t.get("udp").map(|v| v.span()));
    let udp = ports(&mut t, d, "udp", "UDP");
    let unix = t.bool(d, "unix").is_some_and(|b| *b.get_ref());
    let scope = scopes(&mut t, d);
    let egress = Egress {
        allow: rules(&mut t, d, "allow", HostRule::parse),
        deny: rules(&mut t, d, "deny", HostRule::parse),
        allow_cidr: rules(&mut t, d, "allow_cidr", CidrRule::parse),
        outside_only: false,
    };
    t.finish(d);
    // The gateway's sockets live in the step's own network namespace; on
    // the host's, nothing would hold the host rules.
    if let (NetNamespace::Host, true, Some(v)) = (namespace, egress.is_active(), &ns_value) {
        d.error(
            v.span(),
            &ns_key,
            "[net] allow/allow_cidr need the step's own network namespace, but namespace is \"host\"",
            "remove `namespace = \"host\"` (the egress gateway gives an own namespace reaching only the allowed hosts), or drop allow/allow_cidr",
        );
    }
    // With the gateway, UDP other than the stub must fail with EPERM, and
    // seccomp cannot see a datagram's port: opening UDP would open it to
    // every port (of the step's own loopback).
    if let (true, false, Some(span)) = (egress.is_active(), udp.is_empty(), udp_span) {
        d.error(
            span,
            &udp_key,
            "[net] udp cannot be set together with [net] allow/allow_cidr: UDP sockets would open for every port, and with the egress gateway UDP other than its DNS stub must fail",
            "remove `udp`: DNS goes to the gateway's stub over TCP (its resolv.conf says `options use-vc`), and the gateway carries TCP only",
        );
    }
    Net {
        namespace,
        connect,
        bind,
        udp,
        unix,
        scope,
        egress,
    }
}

fn scopes(t: &mut Table, d: &mut Diags) -> Vec<Scope> {
    let key = t.key("scope");
    let Some(list) = t.strs(d, "scope") else {
        return vec![Scope::AbstractUnixSocket, Scope::Signal];
    };
    let options = [
        ("abstract-unix-socket", Scope::AbstractUnixSocket),
        ("signal", Scope::Signal),
    ];
    let set: BTreeSet<Scope> = list
        .get_ref()
        .iter()
        .filter_map(|s| choice(d, s, &key, "Landlock scope", &options))
        .collect();
    set.into_iter().collect()
}

/// Each entry parsed by `parse`; duplicates dropped, order kept.
fn rules<T: PartialEq + std::hash::Hash + Eq + Clone>(
    t: &mut Table,
    d: &mut Diags,
    name: &'static str,
    parse: fn(&str) -> Result<T, RuleError>,
) -> Vec<T> {
    let key = t.key(name);
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for v in t.strs(d, name).map(Spanned::into_inner).unwrap_or_default() {
        match parse(v.get_ref()) {
            Ok(rule) => {
                if seen.insert(rule.clone()) {
                    out.push(rule);
                }
            }
            Err(e) => d.suggest(v.span(), &key, e.message, e.suggestion, e.hint),
        }
    }
    out
}
