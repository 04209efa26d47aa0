//! Applying a plan to the policy's TOML text, keeping its comments and
//! layout (`toml_edit`), and the unified diff of the result (`similar`).

use toml_edit::{Array, DocumentMut, Item, Table, Value};

use super::plan::{on_default_deny, Edit};

/// `src` with `edits` applied. `src` was already validated as a policy, so
/// it parses; the tables and arrays an edit needs are created if missing.
pub fn apply(src: &str, edits: &[Edit]) -> String {
    let Ok(mut doc) = src.parse::<DocumentMut>() else {
        return src.to_owned();
    };
    for e in edits {
        match e {
            Edit::Path { list, path } => push(array(&mut doc, "fs", list), path.as_str()),
            Edit::Port { list, port } => push(array(&mut doc, "net", list), i64::from(*port)),
            Edit::Syscall(name) => {
                remove(array(&mut doc, "syscalls", "deny"), name);
                if on_default_deny(name) {
                    push(array(&mut doc, "syscalls", "allow"), name.as_str());
                }
                drop_if_empty(&mut doc, "syscalls", "deny");
            }
            Edit::Scope(name) => {
                // No `scope` key means every scope: write the others out.
                let t = table(&mut doc, "net");
                if !t.contains_key("scope") {
                    let all: Array = ["abstract-unix-socket", "signal"].into_iter().collect();
                    t.insert("scope", Item::Value(Value::Array(all)));
                }
                remove(array(&mut doc, "net", "scope"), name);
            }
        }
    }
    doc.to_string()
}

fn table<'a>(doc: &'a mut DocumentMut, name: &str) -> &'a mut Table {
    let item = doc.entry(name).or_insert_with(|| Item::Table(Table::new()));
    if item.as_table().is_none() {
        // An inline table (`fs = { read = [...] }`) becomes a standard one.
        if let Some(inline) = item.as_inline_table().cloned() {
            *item = Item::Table(inline.into_table());
        } else {
            *item = Item::Table(Table::new());
        }
    }
    item.as_table_mut().expect("made a table above")
}

fn array<'a>(doc: &'a mut DocumentMut, table_name: &str, key: &str) -> &'a mut Array {
    let t = table(doc, table_name);
    let item = t
        .entry(key)
        .or_insert_with(|| Item::Value(Value::Array(Array::new())));
    if item.as_array().is_none() {
        *item = Item::Value(Value::Array(Array::new()));
    }
    item.as_array_mut().expect("made an array above")
}

fn push(a: &mut Array, v: impl Into<Value> + Clone) {
    let v: Value = v.into();
    if !a
        .iter()
        .any(|x| x.to_string().trim() == v.to_string().trim())
    {
        a.push(v);
    }
}

fn remove(a: &mut Array, name: &str) {
    a.retain(|x| x.as_str() != Some(name));
}

fn drop_if_empty(doc: &mut DocumentMut, table_name: &str, key: &str) {
    if let Some(t) = doc.get_mut(table_name).and_then(Item::as_table_mut) {
        if t.get(key)
            .and_then(Item::as_array)
            .is_some_and(Array::is_empty)
        {
            t.remove(key);
        }
    }
}

/// Unified diff of the policy (empty when nothing changed).
pub fn diff(old: &str, new: &str, name: &str) -> String {
    if old == new {
        return String::new();
    }
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(2)
        .header(name, &format!("{name} (suggested)"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_stay_and_missing_tables_appear() {
        let src = "# gate step\nversion = 1\n\n[fs]\nread = [\"/usr\"] # tools\n";
        let out = apply(
            src,
            &[
                Edit::Path {
                    list: "read",
                    path: "/opt".into(),
                },
                Edit::Port {
                    list: "connect",
                    port: 443,
                },
                Edit::Syscall("ptrace".into()),
            ],
        );
        assert!(out.starts_with("# gate step\n"), "{out}");
        assert!(out.contains("read = [\"/usr\", \"/opt\"] # tools"), "{out}");
        assert!(out.contains("[net]\nconnect = [443]"), "{out}");
        assert!(out.contains("[syscalls]\nallow = [\"ptrace\"]"), "{out}");
        assert!(!out.contains("deny"), "{out}");
        let d = diff(src, &out, "p.toml");
        assert!(d.contains("+read = [\"/usr\", \"/opt\"] # tools"), "{d}");
    }

    #[test]
    fn a_scope_is_removed_from_the_implicit_full_list() {
        let out = apply("version = 1\n", &[Edit::Scope("signal".into())]);
        assert!(out.contains("scope = [\"abstract-unix-socket\"]"), "{out}");
    }
}
