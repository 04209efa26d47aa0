//! Typed, located reads from the spanned TOML tree.
//!
//! The policy is not deserialized in one serde pass, because serde stops at
//! the first problem. Instead every check asks its [`Table`] for the keys
//! it knows; a value of the wrong type becomes a diagnostic and reads as
//! absent, so the checks after it still run. The keys a check asked for are
//! also the table's vocabulary: whatever else the file has is an unknown
//! key, with a "did you mean" taken from that vocabulary.

use std::ops::Range;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::diags::Diags;
use crate::error::closest;

pub(crate) type Value<'i> = Spanned<DeValue<'i>>;

const TYPE_HINT: &str = "write the value with the type the reference shows for this key";

/// One TOML table being read by a check.
pub(crate) struct Table<'a, 'i> {
    /// Dotted key of the table (`fs`, `mount[0]`), empty at the top level.
    path: String,
    /// `None` when the file has no such table: every key reads as absent.
    entries: Option<&'a DeTable<'i>>,
    span: Range<usize>,
    asked: Vec<&'static str>,
}

impl<'a, 'i> Table<'a, 'i> {
    pub(crate) fn root(doc: &'a Spanned<DeTable<'i>>) -> Self {
        Table::new(String::new(), Some(doc.get_ref()), doc.span())
    }

    fn new(path: String, entries: Option<&'a DeTable<'i>>, span: Range<usize>) -> Self {
        Table {
            path,
            entries,
            span,
            asked: Vec::new(),
        }
    }

    /// A table the file does not have; located at `span` if a check needs
    /// to say something is missing from it.
    pub(crate) fn absent(path: &str, span: Range<usize>) -> Self {
        Table::new(path.to_string(), None, span)
    }

    /// The dotted key of `name` in this table.
    pub(crate) fn key(&self, name: &str) -> String {
        if self.path.is_empty() {
            name.to_string()
        } else {
            format!("{}.{name}", self.path)
        }
    }

    /// Where the table starts (its header, or the top of the file).
    pub(crate) fn span(&self) -> Range<usize> {
        self.span.clone()
    }

    /// The raw value of `name`, if present; `name` joins the vocabulary.
    pub(crate) fn get(&mut self, name: &'static str) -> Option<&'a Value<'i>> {
        self.asked.push(name);
        self.entries?.get(name)
    }

    pub(crate) fn str(&mut self, d: &mut Diags, name: &'static str) -> Option<Spanned<&'a str>> {
        let v = self.get(name)?;
        as_str(d, v, &self.key(name))
    }

    pub(crate) fn int(&mut self, d: &mut Diags, name: &'static str) -> Option<Spanned<i64>> {
        let v = self.get(name)?;
        as_int(d, v, &self.key(name))
    }

    pub(crate) fn bool(&mut self, d: &mut Diags, name: &'static str) -> Option<Spanned<bool>> {
        let v = self.get(name)?;
        match v.get_ref() {
            DeValue::Boolean(b) => Some(Spanned::new(v.span(), *b)),
            _ => type_error(d, v, &self.key(name), "true or false"),
        }
    }

    /// A number; integers are accepted too (`cpus = 1`).
    pub(crate) fn float(&mut self, d: &mut Diags, name: &'static str) -> Option<Spanned<f64>> {
        let v = self.get(name)?;
        let n = match v.get_ref() {
            DeValue::Float(f) => f.as_str().parse().ok(),
            DeValue::Integer(_) => as_int(d, v, &self.key(name)).map(|n| *n.get_ref() as f64),
            _ => return type_error(d, v, &self.key(name), "a number"),
        };
        n.map(|n| Spanned::new(v.span(), n))
    }

    /// An array of strings; wrong-typed items are reported and skipped.
    pub(crate) fn strs(
        &mut self,
        d: &mut Diags,
        name: &'static str,
    ) -> Option<Spanned<Vec<Spanned<&'a str>>>> {
        self.list(d, name, as_str)
    }

    /// An array of integers; wrong-typed items are reported and skipped.
    pub(crate) fn ints(
        &mut self,
        d: &mut Diags,
        name: &'static str,
    ) -> Option<Spanned<Vec<Spanned<i64>>>> {
        self.list(d, name, as_int)
    }

    fn list<T>(
        &mut self,
        d: &mut Diags,
        name: &'static str,
        item: fn(&mut Diags, &'a Value<'i>, &str) -> Option<T>,
    ) -> Option<Spanned<Vec<T>>> {
        let v = self.get(name)?;
        let key = self.key(name);
        let DeValue::Array(items) = v.get_ref() else {
            return type_error(d, v, &key, "an array");
        };
        let out = items.iter().filter_map(|i| item(d, i, &key)).collect();
        Some(Spanned::new(v.span(), out))
    }

    /// A sub-table (`[fs]` or `fs = { … }`).
    pub(crate) fn table(&mut self, d: &mut Diags, name: &'static str) -> Option<Table<'a, 'i>> {
        let v = self.get(name)?;
        match v.get_ref() {
            DeValue::Table(t) => Some(Table::new(self.key(name), Some(t), v.span())),
            _ => type_error(d, v, &self.key(name), "a table"),
        }
    }

    /// A sub-table, or an absent one located at this table.
    pub(crate) fn section(&mut self, d: &mut Diags, name: &'static str) -> Table<'a, 'i> {
        self.table(d, name)
            .unwrap_or_else(|| Table::absent(&self.key(name), self.span()))
    }

    /// An array of tables (`[[mount]]`), each keyed `name[i]`.
    pub(crate) fn tables(&mut self, d: &mut Diags, name: &'static str) -> Vec<Table<'a, 'i>> {
        let Some(v) = self.get(name) else {
            return Vec::new();
        };
        let key = self.key(name);
        let DeValue::Array(items) = v.get_ref() else {
            type_error::<()>(d, v, &key, "an array of tables ([[mount]])");
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            match item.get_ref() {
                DeValue::Table(t) => {
                    out.push(Table::new(format!("{key}[{i}]"), Some(t), item.span()))
                }
                _ => {
                    type_error::<()>(d, item, &key, "a table");
                }
            }
        }
        out
    }

    /// Report every key of the file's table that no check asked for.
    pub(crate) fn finish(self, d: &mut Diags) {
        let Some(entries) = self.entries else {
            return;
        };
        for (k, _) in entries.iter() {
            let name: &str = k.get_ref();
            if self.asked.contains(&name) {
                continue;
            }
            let suggestion = closest(name, self.asked.iter().copied());
            let hint = if self.asked.is_empty() {
                "remove the key; this table takes no keys".to_string()
            } else {
                format!("remove the key or use one of: {}", self.asked.join(", "))
            };
            d.suggest(
                k.span(),
                &self.key(name),
                format!("unknown key \"{name}\""),
                suggestion,
                &hint,
            );
        }
    }
}

pub(crate) fn as_str<'a>(d: &mut Diags, v: &'a Value<'_>, key: &str) -> Option<Spanned<&'a str>> {
    match v.get_ref() {
        DeValue::String(s) => Some(Spanned::new(v.span(), s.as_ref())),
        _ => type_error(d, v, key, "a string"),
    }
}

pub(crate) fn as_int(d: &mut Diags, v: &Value<'_>, key: &str) -> Option<Spanned<i64>> {
    let DeValue::Integer(i) = v.get_ref() else {
        return type_error(d, v, key, "an integer");
    };
    match i64::from_str_radix(i.as_str(), i.radix()) {
        Ok(n) => Some(Spanned::new(v.span(), n)),
        Err(_) => {
            d.error(
                v.span(),
                key,
                format!("integer {i} is too large"),
                "use a smaller number",
            );
            None
        }
    }
}

/// Report "expected X, found Y" and read the value as absent.
pub(crate) fn type_error<T>(d: &mut Diags, v: &Value<'_>, key: &str, expected: &str) -> Option<T> {
    let found = match v.get_ref() {
        DeValue::String(s) => format!("a string ({s:?})"),
        DeValue::Integer(i) => format!("an integer ({i})"),
        DeValue::Float(f) => format!("a float ({})", f.as_str()),
        DeValue::Boolean(b) => format!("a boolean ({b})"),
        DeValue::Datetime(t) => format!("a datetime ({t})"),
        DeValue::Array(_) => "an array".to_string(),
        DeValue::Table(_) => "a table".to_string(),
    };
    d.error(
        v.span(),
        key,
        format!("expected {expected}, found {found}"),
        TYPE_HINT,
    );
    None
}

/// The dotted key whose name starts last at or before `offset`: what a
/// syntax error at `offset` is most likely about. Works on the partial tree
/// the recovering parser returns.
pub(crate) fn key_before(table: &DeTable<'_>, offset: usize) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    for (k, _) in table.iter() {
        let start = k.span().start;
        if start > offset || best.as_ref().is_some_and(|(b, _)| *b > start) {
            continue;
        }
        let name: &str = k.get_ref();
        best = Some((start, name.to_string()));
    }
    let (_, name) = best?;
    let inner = table.get(name.as_str()).and_then(|v| match v.get_ref() {
        DeValue::Table(t) => key_before(t, offset),
        DeValue::Array(items) => items.iter().rev().find_map(|i| match i.get_ref() {
            DeValue::Table(t) if i.span().start <= offset => key_before(t, offset),
            _ => None,
        }),
        _ => None,
    });
    Some(match inner {
        Some(inner) => format!("{name}.{inner}"),
        None => name,
    })
}
