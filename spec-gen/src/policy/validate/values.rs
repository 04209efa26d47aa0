//! Checks shared by several tables: named choices, sizes and durations,
//! bounded integers, ports and container paths.

use std::collections::BTreeSet;
use std::ops::Range;

use toml::de::DeValue;
use toml::Spanned;

use super::super::diags::Diags;
use super::super::normalize;
use super::super::reader::{type_error, Table};
use crate::error::closest;
use crate::units::{ByteSize, Span};

/// One of a fixed set of names (`mode = "enforce"`), with a suggestion for
/// a near miss. `what` names the kind of thing in the message.
pub(crate) fn choice<T: Copy>(
    d: &mut Diags,
    v: &Spanned<&str>,
    key: &str,
    what: &str,
    options: &[(&str, T)],
) -> Option<T> {
    let s = *v.get_ref();
    if let Some((_, t)) = options.iter().find(|(name, _)| *name == s) {
        return Some(*t);
    }
    let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    d.suggest(
        v.span(),
        key,
        format!("unknown {what} \"{s}\""),
        closest(s, names.iter().copied()),
        &format!("use one of {}", quoted.join(", ")),
    );
    None
}

/// A string key whose value is one of `options`; absent → `default`.
pub(crate) fn choice_key<T: Copy>(
    t: &mut Table,
    d: &mut Diags,
    name: &'static str,
    what: &str,
    options: &[(&str, T)],
    default: T,
) -> T {
    let key = t.key(name);
    t.str(d, name)
        .and_then(|v| choice(d, &v, &key, what, options))
        .unwrap_or(default)
}

/// How a quantity with a unit is written: sizes and durations.
struct UnitKind<T> {
    what: &'static str,
    /// The unit suggested for a bare number.
    default_unit: &'static str,
    units: &'static str,
    example: &'static str,
    parse: fn(&str) -> Option<T>,
}

const SIZE: UnitKind<ByteSize> = UnitKind {
    what: "size",
    default_unit: "MiB",
    units: "B, KiB, MiB or GiB",
    example: "\"512MiB\"",
    parse: |s| ByteSize::parse(s).ok().filter(|b| b.0 > 0),
};

const DURATION: UnitKind<Span> = UnitKind {
    what: "duration",
    default_unit: "s",
    units: "ms, s, m or h",
    example: "\"10s\"",
    parse: |s| Span::parse(s).ok().filter(|d| d.as_millis() > 0),
};

/// A size such as "512MiB"; a bare number is refused with a suggestion.
pub(crate) fn size(t: &mut Table, d: &mut Diags, name: &'static str) -> Option<ByteSize> {
    size_at(t, d, name).map(|(b, _)| b)
}

/// [`size`] with the value's span, for a check of its own.
pub(crate) fn size_at(
    t: &mut Table,
    d: &mut Diags,
    name: &'static str,
) -> Option<(ByteSize, Range<usize>)> {
    with_unit(t, d, name, &SIZE)
}

/// A duration such as "10s"; a bare number is refused with a suggestion.
pub(crate) fn duration(t: &mut Table, d: &mut Diags, name: &'static str) -> Option<Span> {
    with_unit(t, d, name, &DURATION).map(|(s, _)| s)
}

fn with_unit<T>(
    t: &mut Table,
    d: &mut Diags,
    name: &'static str,
    kind: &UnitKind<T>,
) -> Option<(T, Range<usize>)> {
    let key = t.key(name);
    let v = t.get(name)?;
    let hint = format!(
        "write a positive integer with a unit {} as a string, e.g. {}",
        kind.units, kind.example
    );
    let text = match v.get_ref() {
        DeValue::String(s) => s.trim(),
        DeValue::Integer(i) => {
            // A bare 512 could mean bytes or MiB, 10 ms or s: never guess.
            d.suggest(
                v.span(),
                &key,
                format!("{} {i} has no unit", kind.what),
                Some(format!("{i}{}", kind.default_unit)),
                &hint,
            );
            return None;
        }
        _ => {
            return type_error(
                d,
                v,
                &key,
                &format!("a {} string such as {}", kind.what, kind.example),
            )
        }
    };
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
        d.suggest(
            v.span(),
            &key,
            format!("{} \"{text}\" has no unit", kind.what),
            Some(format!("{text}{}", kind.default_unit)),
            &hint,
        );
        return None;
    }
    let parsed = (kind.parse)(text);
    if parsed.is_none() {
        d.error(
            v.span(),
            &key,
            format!("invalid {} \"{text}\"", kind.what),
            &hint,
        );
    }
    parsed.map(|p| (p, v.span()))
}

/// An integer in `min..=max`.
pub(crate) fn int_in(
    t: &mut Table,
    d: &mut Diags,
    name: &'static str,
    (min, max): (i64, i64),
    hint: &str,
) -> Option<i64> {
    let key = t.key(name);
    let v = t.int(d, name)?;
    let n = *v.get_ref();
    if (min..=max).contains(&n) {
        Some(n)
    } else {
        let message = if max == i64::MAX {
            format!("value {n} is below the minimum {min}")
        } else {
            format!("value {n} is out of range {min}..={max}")
        };
        d.error(v.span(), &key, message, hint);
        None
    }
}

/// [`int_in`] for a count that cannot be negative (`min` >= 0).
pub(crate) fn count(
    t: &mut Table,
    d: &mut Diags,
    name: &'static str,
    range: (i64, i64),
    hint: &str,
) -> Option<u64> {
    debug_assert!(range.0 >= 0, "a count's minimum is not negative");
    int_in(t, d, name, range, hint).map(|n| n as u64)
}

/// A list of ports, sorted and unique.
pub(crate) fn ports(t: &mut Table, d: &mut Diags, name: &'static str, proto: &str) -> Vec<u16> {
    let key = t.key(name);
    let mut out = BTreeSet::new();
    for p in t.ints(d, name).map(Spanned::into_inner).unwrap_or_default() {
        match u16::try_from(*p.get_ref()) {
            Ok(n) if n > 0 => {
                out.insert(n);
            }
            _ => d.error(
                p.span(),
                &key,
                format!("port {} is out of range", p.get_ref()),
                &format!("{proto} ports are 1 to 65535"),
            ),
        }
    }
    out.into_iter().collect()
}

/// An absolute container path, normalized; `None` (reported) otherwise.
pub(crate) fn absolute(d: &mut Diags, p: &Spanned<&str>, key: &str) -> Option<String> {
    let s = *p.get_ref();
    if !s.starts_with('/') {
        let hint = format!(
            "paths inside the container start with '/', e.g. \"/{}\"",
            s.trim_start_matches("./")
        );
        d.error(
            p.span(),
            key,
            format!("path \"{s}\" is not absolute"),
            &hint,
        );
        return None;
    }
    clean(d, p, key).then(|| normalize(s))
}

/// No `..` components, NUL bytes, control characters or /proc magic links
/// (true), or reported (false). Control characters are legal in file names
/// but no policy needs them, and `explain`, denial reports and diagnostics
/// would print them to a terminal as escape sequences.
pub(crate) fn clean(d: &mut Diags, p: &Spanned<&str>, key: &str) -> bool {
    let s = *p.get_ref();
    if s.contains(|c: char| c.is_control() && c != '\0') {
        d.error(
            p.span(),
            key,
            format!("path {s:?} contains a control character"),
            "name a path without control characters (newline, escape, ...)",
        );
        return false;
    }
    if s.split('/').any(|c| c == "..") || s.contains('\0') {
        d.error(
            p.span(),
            key,
            format!("path \"{s}\" contains \"..\" or a NUL byte"),
            "write the path without \"..\" components",
        );
        return false;
    }
    if crate::policy::through_magic_link(s) {
        d.error(
            p.span(),
            key,
            format!("path \"{s}\" goes through a /proc magic link, which stands for another file (/proc/self/root is \"/\", /proc/self/cwd the working directory)"),
            "write the path it stands for",
        );
        return false;
    }
    true
}
