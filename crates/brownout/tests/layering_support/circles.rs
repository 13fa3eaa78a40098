//! Circles in a crate tree's imports ([`super::read_tree`]): strongly connected components
//! of the module files' graph and of each module's children (each with all below it), told
//! with the files and lines that import.

use super::{Import, ModPath, Tree};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The strongly connected components of `g` with more than one node (Tarjan).
pub fn circles<N: Ord + Clone>(g: &BTreeMap<N, BTreeSet<N>>) -> Vec<Vec<N>> {
    struct S<N> {
        index: BTreeMap<N, usize>,
        low: BTreeMap<N, usize>,
        stack: Vec<N>,
        on: BTreeSet<N>,
        out: Vec<Vec<N>>,
    }
    fn visit<N: Ord + Clone>(n: &N, g: &BTreeMap<N, BTreeSet<N>>, s: &mut S<N>) {
        let i = s.index.len();
        s.index.insert(n.clone(), i);
        s.low.insert(n.clone(), i);
        s.stack.push(n.clone());
        s.on.insert(n.clone());
        for d in g.get(n).into_iter().flatten() {
            if !s.index.contains_key(d) {
                visit(d, g, s);
                let l = s.low[d].min(s.low[n]);
                s.low.insert(n.clone(), l);
            } else if s.on.contains(d) {
                let l = s.index[d].min(s.low[n]);
                s.low.insert(n.clone(), l);
            }
        }
        if s.low[n] == s.index[n] {
            let mut c = Vec::new();
            while let Some(x) = s.stack.pop() {
                s.on.remove(&x);
                let done = x == *n;
                c.push(x);
                if done {
                    break;
                }
            }
            if c.len() > 1 {
                c.sort();
                s.out.push(c);
            }
        }
    }
    let mut s = S {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for n in g.keys() {
        if !s.index.contains_key(n) {
            visit(n, g, &mut s);
        }
    }
    s.out
}

/// `m` as people write it (`crate` for the root).
pub fn show(m: &ModPath) -> String {
    if m.is_empty() {
        "crate".into()
    } else {
        m.join("::")
    }
}

/// A circle: its modules (as [`show`] writes them) and a message for people.
#[derive(Debug)]
pub struct Circle {
    pub members: Vec<String>,
    pub message: String,
}

/// Every circle of the tree, at both levels, as a message naming the files and the lines
/// that import: among module files, and among the children of each module (a child taken
/// with everything below it).
pub fn tree_circles(t: &Tree, base: &Path) -> Vec<Circle> {
    let rel = |m: &ModPath| {
        let f = &t.files[m];
        f.strip_prefix(base).unwrap_or(f).display().to_string()
    };
    let mut found = Vec::new();
    // Module files.
    let mut g: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for m in t.files.keys() {
        g.entry(m.clone()).or_default();
    }
    for i in &t.imports {
        g.entry(i.from.clone()).or_default().insert(i.to.clone());
    }
    for c in circles(&g) {
        let mut msg = format!(
            "a circle of {} module files: {}\n",
            c.len(),
            c.iter().map(show).collect::<Vec<_>>().join(", ")
        );
        let inside = t
            .imports
            .iter()
            .filter(|i| c.contains(&i.from) && c.contains(&i.to));
        msg += &edges(inside, &rel);
        found.push(Circle {
            members: c.iter().map(show).collect(),
            message: msg,
        });
    }
    // Siblings, each with its subtree.
    let parents: BTreeSet<ModPath> = t
        .files
        .keys()
        .filter(|m| !m.is_empty())
        .map(|m| m[..m.len() - 1].to_vec())
        .collect();
    for p in parents {
        let child_of = |m: &ModPath| -> Option<ModPath> {
            (m.len() > p.len() && m.starts_with(&p)).then(|| m[..=p.len()].to_vec())
        };
        let mut g: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
        for i in &t.imports {
            if let (Some(a), Some(b)) = (child_of(&i.from), child_of(&i.to)) {
                if a != b {
                    g.entry(a).or_default().insert(b);
                }
            }
        }
        for c in circles(&g) {
            let mut msg = format!(
                "a circle of {} sibling modules (each with what is below it) in {}: {}\n",
                c.len(),
                show(&p),
                c.iter().map(show).collect::<Vec<_>>().join(", ")
            );
            let inside = t.imports.iter().filter(|i| {
                let (Some(a), Some(b)) = (child_of(&i.from), child_of(&i.to)) else {
                    return false;
                };
                a != b && c.contains(&a) && c.contains(&b)
            });
            msg += &edges(inside, &rel);
            found.push(Circle {
                members: c.iter().map(show).collect(),
                message: msg,
            });
        }
    }
    found
}

/// One line per importing file and imported module: the first line that imports, and how
/// many more do.
fn edges<'a>(
    imports: impl Iterator<Item = &'a Import>,
    rel: &dyn Fn(&ModPath) -> String,
) -> String {
    let mut by: BTreeMap<(ModPath, ModPath), Vec<&Import>> = BTreeMap::new();
    for i in imports {
        by.entry((i.from.clone(), i.to.clone()))
            .or_default()
            .push(i);
    }
    let mut out = String::new();
    for ((from, to), is) in by {
        let first = is
            .iter()
            .min_by_key(|i| i.line)
            .expect("one import at least");
        let more = match is.len() - 1 {
            0 => String::new(),
            n => format!(" (+{n} more)"),
        };
        out += &format!(
            "    {}:{} → {}{more}   `{}`\n",
            rel(&from),
            first.line,
            show(&to),
            first.text
        );
    }
    out
}
