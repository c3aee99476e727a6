//! The workspace's layering, read from the code: every crate depends only on the crates its row
//! of ARCHITECTURE.md's crate table allows (so the table and the crate graph say the same), and
//! inside every crate the top-level modules' imports (`crate::…` paths, `super::…` from a
//! top-level file, root re-exports resolved to their module) form no cycle, so each crate reads
//! bottom-up. Test-only modules (`#[cfg(test)] mod …`) may reach any layer and are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap()
}

/// A workspace crate: its name, its normal dependencies among workspace crates, and the roots
/// of its library and binary targets.
struct Package {
    name: String,
    workspace_deps: BTreeSet<String>,
    roots: Vec<PathBuf>,
}

fn packages() -> Vec<Package> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--no-deps", "--format-version", "1", "--offline"])
        .current_dir(workspace_root())
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let members: BTreeSet<String> =
        meta["packages"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap().to_string()).collect();
    meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| Package {
            name: p["name"].as_str().unwrap().to_string(),
            workspace_deps: p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null())
                .map(|d| d["name"].as_str().unwrap().to_string())
                .filter(|d| members.contains(d))
                .collect(),
            roots: p["targets"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|t| t["kind"].as_array().unwrap().iter().any(|k| k == "lib" || k == "bin"))
                .map(|t| PathBuf::from(t["src_path"].as_str().unwrap()))
                .collect(),
        })
        .collect()
}

/// ARCHITECTURE.md's crate table: crate → the workspace crates named in its "may depend on"
/// column (`None` for "everything").
fn allowed_dependencies() -> BTreeMap<String, Option<BTreeSet<String>>> {
    let text = std::fs::read_to_string(workspace_root().join("ARCHITECTURE.md")).unwrap();
    let mut table = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("| `tgrid-")) {
        let cells: Vec<&str> = line.split(" | ").collect();
        let name = cells[0].trim_start_matches("| ").trim_matches('`').to_string();
        let may = cells.last().unwrap().trim_end_matches(" |").trim();
        let allowed = if may == "everything" { None } else { Some(backticked_crates(may)) };
        table.insert(name, allowed);
    }
    table
}

fn backticked_crates(text: &str) -> BTreeSet<String> {
    text.split('`').skip(1).step_by(2).filter(|s| s.starts_with("tgrid-")).map(str::to_string).collect()
}

#[test]
fn every_crate_depends_only_on_what_architecture_md_allows() {
    let allowed = allowed_dependencies();
    let mut wrong = Vec::new();
    for p in packages() {
        match allowed.get(&p.name) {
            None => wrong.push(format!("{} has no row in ARCHITECTURE.md's crate table", p.name)),
            Some(None) => {}
            Some(Some(may)) => {
                for dep in p.workspace_deps.difference(may) {
                    wrong.push(format!("{} depends on {dep}, which its row's \"may depend on\" omits", p.name));
                }
                for extra in may.difference(&p.workspace_deps) {
                    wrong.push(format!("{}'s row allows {extra}, which it does not depend on", p.name));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "the crate graph and ARCHITECTURE.md disagree:\n{}", wrong.join("\n"));
}

/// Source with comments, string and character literals blanked (so `crate::` in a doc comment
/// or a message is no import), keeping every newline.
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if b[i] == b'\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
            }
        } else if b[i] == b'r' && (b[i..].starts_with(b"r\"") || b[i..].starts_with(b"r#")) && !ident_byte(b, i) {
            // A raw string: r"…", r#"…"#.
            let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
            if b.get(i + 1 + hashes) != Some(&b'"') {
                out.push('r');
                i += 1;
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
            i += 2 + hashes;
            while i < b.len() && !b[i..].starts_with(&close) {
                if b[i] == b'\n' {
                    out.push('\n');
                }
                i += 1;
            }
            i += close.len();
            out.push_str("\"\"");
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                if i < b.len() && b[i] == b'\n' {
                    out.push('\n');
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' {
            // A character literal ('x', '\n', '{') but not a lifetime ('a).
            let len = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..].iter().position(|&c| c == b'\'').map(|p| p + 3)
            } else {
                let ch = src[i + 1..].chars().next().map_or(1, char::len_utf8);
                (b.get(i + 1 + ch) == Some(&b'\'')).then_some(ch + 2)
            };
            match len {
                Some(n) => {
                    out.push_str("' '");
                    i += n;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            let ch = src[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

fn ident_byte(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

/// The index just past the block whose `{` is at `open`.
fn block_end(code: &str, open: usize) -> usize {
    let mut depth = 0usize;
    for (k, c) in code[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return open + k + 1;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// `code` without its `#[cfg(test)] mod name { … }` blocks, and the names of its
/// `#[cfg(test)] mod name;` declarations (test-only files).
fn without_test_modules(code: &str) -> (String, BTreeSet<String>) {
    let mut kept = String::new();
    let mut test_files = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        kept.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        let mut item = after.trim_start();
        // Further attributes (`#[allow(…)]`) between the cfg and the item.
        while item.starts_with("#[") {
            item = item[item.find(']').map_or(item.len(), |e| e + 1)..].trim_start();
        }
        let item = item.strip_prefix("pub(crate) ").or_else(|| item.strip_prefix("pub ")).unwrap_or(item);
        if let Some(decl) = item.strip_prefix("mod ") {
            let name: String = decl.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            let tail = decl[name.len()..].trim_start();
            let consumed = after.len() - tail.len();
            if tail.starts_with(';') {
                test_files.insert(name);
                rest = &after[consumed + 1..];
            } else {
                let open = consumed;
                let end = block_end(after, open);
                rest = &after[end..];
            }
            continue;
        }
        kept.push_str("#[cfg(test)]");
        rest = after;
    }
    kept.push_str(rest);
    (kept, test_files)
}

/// The first path segments a `use crate::{…}` group names (`a` and `b` of `{a::X, b::{Y, Z}}`).
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut start = true;
    for token in group.split_inclusive([',', '{', '}']) {
        if start && depth == 0 {
            let head: String = token.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !head.is_empty() {
                heads.push(head);
            }
        }
        start = false;
        match token.chars().last() {
            Some('{') => depth += 1,
            Some('}') => depth -= 1,
            Some(',') if depth == 0 => start = true,
            _ => {}
        }
    }
    heads
}

/// The names a path starting at `prefix` (`crate::`, `super::`) reaches in `code`.
fn path_heads(code: &str, prefix: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut from = 0;
    while let Some(pos) = code[from..].find(prefix) {
        let at = from + pos;
        from = at + prefix.len();
        if at > 0 && {
            let c = code.as_bytes()[at - 1];
            c.is_ascii_alphanumeric() || c == b'_' || c == b':'
        } {
            continue;
        }
        let after = &code[from..];
        if let Some(group) = after.strip_prefix('{') {
            let end = block_end(after, 0);
            heads.extend(group_heads(&group[..end - 2]));
        } else {
            let head: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            heads.push(head);
        }
    }
    heads
}

/// A crate's top-level modules and the imports between them.
struct ModuleGraph {
    edges: BTreeMap<String, BTreeMap<String, Vec<String>>>,
}

fn module_file(dir: &Path, name: &str) -> Option<PathBuf> {
    [dir.join(format!("{name}.rs")), dir.join(name).join("mod.rs")].into_iter().find(|p| p.exists())
}

/// The `mod name;` declarations of `code` (with whether they are test-only) and its inline
/// `mod name { … }` blocks.
fn declared_modules(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in code.lines() {
        let line = line.trim_start();
        let line = line.strip_prefix("pub(crate) ").or_else(|| line.strip_prefix("pub ")).unwrap_or(line);
        if let Some(decl) = line.strip_prefix("mod ") {
            let name: String = decl.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if decl[name.len()..].trim_start().starts_with(';') {
                names.push(name);
            }
        }
    }
    names
}

/// Every file of module `name` (declared in a file of directory `dir`), skipping test-only
/// submodules.
fn module_sources(dir: &Path, name: &str, files: &mut Vec<(PathBuf, String)>) {
    let Some(path) = module_file(dir, name) else { return };
    let (code, test_files) = without_test_modules(&code_only(&std::fs::read_to_string(&path).unwrap()));
    let sub_dir = if path.ends_with("mod.rs") { path.parent().unwrap().to_path_buf() } else { dir.join(name) };
    for sub in declared_modules(&code) {
        if !test_files.contains(&sub) {
            module_sources(&sub_dir, &sub, files);
        }
    }
    files.push((path, code));
}

impl ModuleGraph {
    fn of(root: &Path) -> Self {
        let (root_code, test_files) = without_test_modules(&code_only(&std::fs::read_to_string(root).unwrap()));
        let dir = root.parent().unwrap();
        let modules: BTreeSet<String> =
            declared_modules(&root_code).into_iter().filter(|m| !test_files.contains(m)).collect();
        // `pub use module::{A, B}` at the root: `crate::A` is an import of `module`.
        let mut reexports = BTreeMap::new();
        for statement in root_code.split(';') {
            let s = statement.trim();
            let Some(path) = s.split_once("use ").filter(|(vis, _)| vis.trim().starts_with("pub")).map(|(_, p)| p)
            else {
                continue;
            };
            let path = path.trim();
            let module: String = path.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !modules.contains(&module) {
                continue;
            }
            let tail = &path[module.len()..];
            let names: Vec<String> = match tail.find('{') {
                Some(open) => tail[open + 1..]
                    .split([',', '{', '}'])
                    .filter_map(|n| n.split("::").last())
                    .map(|n| n.split(" as ").last().unwrap().trim().to_string())
                    .filter(|n| !n.is_empty())
                    .collect(),
                None => vec![tail.rsplit("::").next().unwrap().split(" as ").last().unwrap().trim().to_string()],
            };
            for name in names {
                reexports.insert(name, module.clone());
            }
        }
        let mut edges: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
        for module in &modules {
            let mut files = Vec::new();
            module_sources(dir, module, &mut files);
            for (path, code) in files {
                let top_file = path.parent() == Some(dir) || path.ends_with(format!("{module}/mod.rs"));
                let mut heads = path_heads(&code, "crate::");
                if top_file {
                    heads.extend(path_heads(&code, "super::"));
                }
                for head in heads {
                    let target = if modules.contains(&head) { Some(&head) } else { reexports.get(&head) };
                    if let Some(target) = target.filter(|t| *t != module) {
                        let file = path.strip_prefix(dir).unwrap().display().to_string();
                        let by = edges.entry(module.clone()).or_default().entry(target.clone()).or_default();
                        if !by.contains(&file) {
                            by.push(file);
                        }
                    }
                }
            }
        }
        ModuleGraph { edges }
    }

    /// Strongly connected components of more than one module (Tarjan).
    fn cycles(&self) -> Vec<Vec<String>> {
        struct Walk<'a> {
            graph: &'a ModuleGraph,
            index: BTreeMap<&'a str, usize>,
            low: BTreeMap<&'a str, usize>,
            stack: Vec<&'a str>,
            found: Vec<Vec<String>>,
        }
        impl<'a> Walk<'a> {
            fn visit(&mut self, v: &'a str) {
                let i = self.index.len();
                self.index.insert(v, i);
                self.low.insert(v, i);
                self.stack.push(v);
                for w in self.graph.edges.get(v).into_iter().flat_map(|e| e.keys()) {
                    if !self.index.contains_key(w.as_str()) {
                        self.visit(w);
                        let lw = self.low[w.as_str()];
                        let lv = self.low.get_mut(v).unwrap();
                        *lv = (*lv).min(lw);
                    } else if self.stack.contains(&w.as_str()) {
                        let iw = self.index[w.as_str()];
                        let lv = self.low.get_mut(v).unwrap();
                        *lv = (*lv).min(iw);
                    }
                }
                if self.low[v] == self.index[v] {
                    let mut component = Vec::new();
                    while let Some(w) = self.stack.pop() {
                        component.push(w.to_string());
                        if w == v {
                            break;
                        }
                    }
                    if component.len() > 1 {
                        component.sort();
                        self.found.push(component);
                    }
                }
            }
        }
        let mut walk =
            Walk { graph: self, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), found: Vec::new() };
        for v in self.edges.keys() {
            if !walk.index.contains_key(v.as_str()) {
                walk.visit(v);
            }
        }
        walk.found
    }

    /// The imports inside one cycle, for the failure message.
    fn describe(&self, cycle: &[String]) -> String {
        let mut lines = vec![format!("  modules {{{}}} import each other:", cycle.join(", "))];
        for from in cycle {
            for (to, files) in self.edges.get(from).into_iter().flatten() {
                if cycle.contains(to) {
                    lines.push(format!("    {from} → {to} ({})", files.join(", ")));
                }
            }
        }
        lines.join("\n")
    }
}

#[test]
fn no_crate_has_modules_that_import_each_other_in_a_cycle() {
    let mut found = Vec::new();
    for p in packages() {
        for root in &p.roots {
            let graph = ModuleGraph::of(root);
            for cycle in graph.cycles() {
                found.push(format!("{} ({}):\n{}", p.name, root.display(), graph.describe(&cycle)));
            }
        }
    }
    assert!(found.is_empty(), "module import cycles:\n{}", found.join("\n"));
}

#[test]
fn the_cycle_check_sees_imports_in_every_form() {
    let code = code_only(
        "use crate::a::X;\nuse crate::{b::Y, c::{self, Z}};\nfn f() { super::d::g(); let s = \"crate::e\"; }\n\
         // crate::f\n#[cfg(test)]\nmod tests { use crate::h; }\nlet c = '{'; crate::i::j();",
    );
    let (code, _) = without_test_modules(&code);
    assert_eq!(path_heads(&code, "crate::"), ["a", "b", "c", "i"]);
    assert_eq!(path_heads(&code, "super::"), ["d"]);
    assert_eq!(group_heads("a::X, b::{Y, Z}, self"), ["a", "b", "self"]);
}
