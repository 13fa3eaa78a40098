//! The import graph of a crate's modules, at every level, read from its sources with `syn`.
//!
//! - **Modules** are found as the compiler finds them: from `lib.rs` / `main.rs`, following
//!   each `mod x;` (`x.rs`, `x/mod.rs`, or a `#[path]`). Inline `mod x { … }` blocks are
//!   modules too, but they belong to their file: an import from or to one counts as its file's.
//! - **Imports** are `use` items and paths written in code (types, calls, macro arguments)
//!   that start with `crate::`, `super::` or `self::`, or with the name of a child module.
//!   Each points at the deepest module that exists along its path; a name that module
//!   re-exports (`pub use`, or a private `use` a child can reach as `super::name`) is followed
//!   to where it comes from, so a circle cannot hide behind a re-export.
//! - **What does not count**: `mod` declarations, and a module's re-exports (`pub use`, any
//!   `pub(…)`) of its own descendants: they shape the API, they do not make the parent use
//!   the child. A parent that *calls* a child (or imports it privately) does count, so a
//!   parent ↔ child circle is found like a circle between siblings.
//! - Test-only code (`#[cfg(test)]` items and modules) does not count: a test may drive the
//!   module it tests through a higher one (a fault kind's tests run it in the engine);
//!   the code that ships may not.

mod circles;

pub use circles::tree_circles;
use proc_macro2::{TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// A module path inside one crate tree (empty: the root file).
pub type ModPath = Vec<String>;

/// One import: where it is written and what it names.
#[derive(Clone, Debug)]
pub struct Import {
    /// The module file it is written in.
    pub from: ModPath,
    /// The deepest module file its path reaches (re-exports followed).
    pub to: ModPath,
    pub line: usize,
    pub text: String,
}

/// A crate tree (one per root file): its modules and their imports.
#[derive(Default, Debug)]
pub struct Tree {
    /// Every module; for an inline one, the module of the file that holds it.
    pub modules: BTreeMap<ModPath, ModPath>,
    /// The file of each module that has one.
    pub files: BTreeMap<ModPath, PathBuf>,
    pub imports: Vec<Import>,
    /// Names each module brings in with `use` (any visibility): name → the path it stands for.
    names: BTreeMap<ModPath, BTreeMap<String, ModPath>>,
    /// `use x::*` targets of each module.
    globs: BTreeMap<ModPath, Vec<ModPath>>,
    /// Items each module defines (structs, functions, …), for globs.
    defined: BTreeMap<ModPath, BTreeSet<String>>,
    /// Raw imports before resolution: (file module, scope module, absolute path, line, is a
    /// re-export).
    raw: Vec<(ModPath, ModPath, ModPath, usize, bool)>,
}

/// Reads the crate tree rooted at `root` (a `lib.rs` or `main.rs`).
pub fn read_tree(root: &Path) -> Tree {
    let mut t = Tree::default();
    read_file(
        &mut t,
        root,
        Vec::new(),
        root.parent().expect("a root in a folder"),
        false,
    );
    let raw = std::mem::take(&mut t.raw);
    for (file_mod, scope, abs, line, reexport) in raw {
        let to = t.resolve(&abs, 0);
        let to_file = t.modules.get(&to).cloned().unwrap_or_default();
        if to_file == file_mod {
            continue;
        }
        if reexport && to.starts_with(&scope) {
            continue; // a re-export of a descendant
        }
        let text = std::fs::read_to_string(&t.files[&file_mod])
            .ok()
            .and_then(|s| s.lines().nth(line.saturating_sub(1)).map(str::to_string))
            .unwrap_or_default();
        t.imports.push(Import {
            from: file_mod,
            to: to_file,
            line,
            text: text.trim().to_string(),
        });
    }
    t
}

/// Reads one module file (module `path`; its children's files are found under `dir`).
fn read_file(t: &mut Tree, file: &Path, path: ModPath, dir: &Path, test: bool) {
    let text =
        std::fs::read_to_string(file).unwrap_or_else(|e| panic!("read {}: {e}", file.display()));
    let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("parse {}: {e}", file.display()));
    t.files.insert(path.clone(), file.to_path_buf());
    t.modules.insert(path.clone(), path.clone());
    let own_dir = match file.file_name().and_then(|f| f.to_str()) {
        Some("mod.rs" | "lib.rs" | "main.rs") => dir.to_path_buf(),
        _ => dir.join(file.file_stem().expect("a file name")),
    };
    let mut v = Reader {
        t,
        file_mod: path.clone(),
        scope: path,
        dir: own_dir,
        file_dir: file.parent().expect("a folder").to_path_buf(),
        test,
    };
    v.items(&ast.items);
}

struct Reader<'a> {
    t: &'a mut Tree,
    file_mod: ModPath,
    scope: ModPath,
    /// Where this scope's `mod x;` files live.
    dir: PathBuf,
    /// The folder of the file itself (a `#[path]` is relative to it).
    file_dir: PathBuf,
    /// Inside test-only code: nothing read counts.
    test: bool,
}

impl Reader<'_> {
    fn items(&mut self, items: &[syn::Item]) {
        // Children first, so paths through a child module are known when the uses are read.
        for item in items {
            if let syn::Item::Mod(m) = item {
                let mut child = self.scope.clone();
                child.push(m.ident.to_string());
                self.t.modules.insert(child, self.file_mod.clone());
            }
            if let Some(name) = defined_name(item) {
                let d = self.t.defined.entry(self.scope.clone()).or_default();
                d.insert(name);
            }
        }
        for item in items {
            let saved = self.test;
            self.test |= test_only(item_attrs(item));
            self.item(item);
            self.test = saved;
        }
    }

    fn item(&mut self, item: &syn::Item) {
        match item {
            syn::Item::Mod(m) => self.module(m),
            syn::Item::Use(u) => {
                let reexport = !matches!(u.vis, syn::Visibility::Inherited);
                let mut leaves = Vec::new();
                flatten(&u.tree, Vec::new(), &mut leaves);
                for (segs, name, line) in leaves {
                    let Some(abs) = self.absolute(&segs) else {
                        continue;
                    };
                    match &name {
                        Some(n) => {
                            let names = self.t.names.entry(self.scope.clone()).or_default();
                            names.insert(n.clone(), abs.clone());
                        }
                        None => {
                            let g = self.t.globs.entry(self.scope.clone()).or_default();
                            g.push(abs.clone());
                        }
                    }
                    if !self.test {
                        let scope = self.scope.clone();
                        self.t
                            .raw
                            .push((self.file_mod.clone(), scope, abs, line, reexport));
                    }
                }
            }
            other => self.visit_item(other),
        }
    }

    fn module(&mut self, m: &syn::ItemMod) {
        let name = m.ident.to_string();
        let mut child = self.scope.clone();
        child.push(name.clone());
        match &m.content {
            Some((_, items)) => {
                let saved = (self.scope.clone(), self.dir.clone());
                self.scope = child;
                self.dir = self.dir.join(&name);
                self.items(items);
                (self.scope, self.dir) = saved;
            }
            None => {
                let file = match path_attr(&m.attrs) {
                    Some(p) => self.file_dir.join(p),
                    None => {
                        let flat = self.dir.join(format!("{name}.rs"));
                        if flat.is_file() {
                            flat
                        } else {
                            self.dir.join(&name).join("mod.rs")
                        }
                    }
                };
                let dir = file.parent().expect("a folder").to_path_buf();
                read_file(self.t, &file, child, &dir, self.test);
            }
        }
    }

    /// `segs` as a path from the crate root, if it names something in this crate.
    fn absolute(&self, segs: &[(String, usize)]) -> Option<ModPath> {
        let first = segs.first()?.0.as_str();
        let mut at: ModPath = self.scope.clone();
        let mut rest = segs;
        match first {
            "crate" => {
                at.clear();
                rest = &segs[1..];
            }
            "self" => rest = &segs[1..],
            "super" => {
                while rest.first().is_some_and(|s| s.0 == "super") {
                    at.pop()?;
                    rest = &rest[1..];
                }
            }
            name => {
                let mut child = self.scope.clone();
                child.push(name.to_string());
                let local_name = self
                    .t
                    .names
                    .get(&self.scope)
                    .is_some_and(|n| n.contains_key(name));
                if !self.t.modules.contains_key(&child) && !local_name {
                    return None;
                }
            }
        }
        at.extend(rest.iter().map(|s| s.0.clone()));
        Some(at)
    }

    fn record_path(&mut self, segs: Vec<(String, usize)>) {
        if segs.len() < 2 || self.test {
            return; // a lone `self`, or a value named like a module
        }
        let line = segs[0].1;
        if let Some(abs) = self.absolute(&segs) {
            self.t
                .raw
                .push((self.file_mod.clone(), self.scope.clone(), abs, line, false));
        }
    }
}

impl<'ast> Visit<'ast> for Reader<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.module(m);
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        // A `use` inside a function body: an import like any other, not a name of the module.
        let mut leaves = Vec::new();
        flatten(&u.tree, Vec::new(), &mut leaves);
        for (segs, _, line) in leaves {
            if self.test {
                continue;
            }
            if let Some(abs) = self.absolute(&segs) {
                let scope = self.scope.clone();
                self.t
                    .raw
                    .push((self.file_mod.clone(), scope, abs, line, false));
            }
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segs = p
            .segments
            .iter()
            .map(|s| (s.ident.to_string(), s.ident.span().start().line))
            .collect();
        self.record_path(segs);
        syn::visit::visit_path(self, p);
    }

    fn visit_attribute(&mut self, a: &'ast syn::Attribute) {
        // `#[serde(with = "crate::millis")]` and the like name a module in a string.
        if let syn::Meta::List(l) = &a.meta {
            for (text, line) in string_literals(l.tokens.clone()) {
                let segs: Vec<(String, usize)> =
                    text.split("::").map(|s| (s.to_string(), line)).collect();
                if matches!(segs[0].0.as_str(), "crate" | "super" | "self") {
                    self.record_path(segs);
                }
            }
        }
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.visit_path(&m.path);
        for segs in token_paths(m.tokens.clone()) {
            self.record_path(segs);
        }
    }
}

/// The string literals in `ts`, unquoted, with their lines.
fn string_literals(ts: TokenStream) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for t in ts {
        match t {
            TokenTree::Group(g) => out.extend(string_literals(g.stream())),
            TokenTree::Literal(l) => {
                let text = l.to_string();
                if let Some(s) = text.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
                    out.push((s.to_string(), l.span().start().line));
                }
            }
            _ => {}
        }
    }
    out
}

/// The `a::b::c` chains in a macro's tokens.
fn token_paths(ts: TokenStream) -> Vec<Vec<(String, usize)>> {
    let toks: Vec<TokenTree> = ts.into_iter().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if let TokenTree::Group(g) = &toks[i] {
            out.extend(token_paths(g.stream()));
            i += 1;
            continue;
        }
        let mut chain = Vec::new();
        let mut j = i;
        while let Some(TokenTree::Ident(id)) = toks.get(j) {
            chain.push((id.to_string(), id.span().start().line));
            let colons = matches!((toks.get(j + 1), toks.get(j + 2)),
                (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b))) if a.as_char() == ':' && b.as_char() == ':');
            if !colons {
                break;
            }
            j += 3;
        }
        if chain.len() >= 2 {
            out.push(chain);
            i = j.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

/// Each leaf of a use tree: its path segments, the name it binds (None for a glob), its line.
type Leaf = (Vec<(String, usize)>, Option<String>, usize);

fn flatten(tree: &syn::UseTree, prefix: Vec<(String, usize)>, out: &mut Vec<Leaf>) {
    let seg = |id: &syn::Ident| {
        let mut p = prefix.clone();
        p.push((id.to_string(), id.span().start().line));
        p
    };
    match tree {
        syn::UseTree::Path(p) => flatten(&p.tree, seg(&p.ident), out),
        syn::UseTree::Name(n) => {
            let line = n.ident.span().start().line;
            if n.ident == "self" {
                let name = prefix.last().map(|s| s.0.clone());
                out.push((prefix, name, line));
            } else {
                out.push((seg(&n.ident), Some(n.ident.to_string()), line));
            }
        }
        syn::UseTree::Rename(r) => {
            let line = r.ident.span().start().line;
            let p = if r.ident == "self" {
                prefix
            } else {
                seg(&r.ident)
            };
            out.push((p, Some(r.rename.to_string()), line));
        }
        syn::UseTree::Glob(g) => {
            let line = g.star_token.spans[0].start().line;
            out.push((prefix, None, line));
        }
        syn::UseTree::Group(g) => {
            for t in &g.items {
                flatten(t, prefix.clone(), out);
            }
        }
    }
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// `#[cfg(test)]` (or a `cfg(all(test, …))`): code only a test build holds.
fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        let syn::Meta::List(l) = &a.meta else {
            return false;
        };
        if !l.path.is_ident("cfg") {
            return false;
        }
        let text = l.tokens.to_string();
        text == "test"
            || (text.starts_with("all") && text.contains("test") && !text.contains("not"))
    })
}

fn defined_name(item: &syn::Item) -> Option<String> {
    let id = match item {
        syn::Item::Const(i) => &i.ident,
        syn::Item::Enum(i) => &i.ident,
        syn::Item::Fn(i) => &i.sig.ident,
        syn::Item::Static(i) => &i.ident,
        syn::Item::Struct(i) => &i.ident,
        syn::Item::Trait(i) => &i.ident,
        syn::Item::Type(i) => &i.ident,
        syn::Item::Union(i) => &i.ident,
        syn::Item::Macro(i) => i.ident.as_ref()?,
        _ => return None,
    };
    Some(id.to_string())
}

fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| {
        let nv = a.meta.require_name_value().ok()?;
        if !nv.path.is_ident("path") {
            return None;
        }
        match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        }
    })
}

impl Tree {
    /// The deepest module `abs` reaches, following the names modules bring in with `use`.
    fn resolve(&self, abs: &[String], depth: usize) -> ModPath {
        let mut m: ModPath = Vec::new();
        for (i, s) in abs.iter().enumerate() {
            let mut next = m.clone();
            next.push(s.clone());
            if self.modules.contains_key(&next) {
                m = next;
                continue;
            }
            if depth < 16 {
                if let Some(target) = self.name_in(&m, s, depth) {
                    let mut full = target;
                    full.extend(abs[i + 1..].iter().cloned());
                    return self.resolve(&full, depth + 1);
                }
            }
            return m;
        }
        m
    }

    /// What `name` stands for in module `m` when `m` does not define it but brings it in.
    fn name_in(&self, m: &ModPath, name: &str, depth: usize) -> Option<ModPath> {
        if self.defined.get(m).is_some_and(|d| d.contains(name)) {
            return None;
        }
        if let Some(p) = self.names.get(m).and_then(|n| n.get(name)) {
            return Some(p.clone());
        }
        for g in self.globs.get(m).into_iter().flatten() {
            let g = self.resolve(g, depth + 1);
            let mut child = g.clone();
            child.push(name.to_string());
            let brings = self.names.get(&g).is_some_and(|n| n.contains_key(name));
            if self.modules.contains_key(&child)
                || self.defined.get(&g).is_some_and(|d| d.contains(name))
                || brings
            {
                return Some(child);
            }
        }
        None
    }
}
