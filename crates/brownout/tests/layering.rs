//! The layering holds: each crate of the workspace depends only on the layers below it
//! (the table in docs/architecture.md), the pure crates pull no I/O crate even indirectly,
//! and no modules import each other in a circle, at any level of any crate (what counts as
//! an import: layering_support/mod.rs).
//!
//! Declared dependencies come from `cargo metadata --no-deps`, what they pull in from
//! `cargo tree` (both offline: a build has fetched everything they read).

#[path = "layering_support/mod.rs"]
mod modgraph;

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Each crate of the workspace, and the workspace crates it may use (normal dependencies).
const LAYERS: &[(&str, &[&str])] = &[
    ("brownout-core", &[]),
    ("brownout-sim", &["brownout-core"]),
    ("brownout-relay", &["brownout-core"]),
    ("brownout-store", &["brownout-core"]),
    (
        "brownout-experiment",
        &[
            "brownout-core",
            "brownout-sim",
            "brownout-relay",
            "brownout-store",
        ],
    ),
    (
        "brownout-mcp",
        &[
            "brownout-core",
            "brownout-sim",
            "brownout-relay",
            "brownout-store",
            "brownout-experiment",
        ],
    ),
    (
        "brownout",
        &[
            "brownout-core",
            "brownout-sim",
            "brownout-relay",
            "brownout-store",
            "brownout-experiment",
            "brownout-mcp",
        ],
    ),
];

/// Crates that do I/O (sockets, processes, files, databases, the clock, an async runtime):
/// none may reach the pure crates, directly or through another crate.
const IO_CRATES: &[&str] = &[
    "tokio",
    "mio",
    "socket2",
    "futures-executor",
    "hyper",
    "axum",
    "reqwest",
    "rusqlite",
    "libsqlite3-sys",
    "postgres",
    "nix",
    "tempfile",
    "rmcp",
    "chrono",
];

const PURE: &[&str] = &["brownout-core", "brownout-sim"];

/// Circles not broken yet, each as the modules it may hold (`a::*`: `a` and all below it).
/// A circle outside these fails, and an entry that is no longer a circle must go. Most are
/// a parent (`mod.rs`) holding the types its children use while it calls them.
const KNOWN_CIRCLES: &[(&str, &[&str])] = &[
    ("brownout-core", &["faults::*"]),
    ("brownout-core", &["plan::*"]),
    ("brownout-core", &["engine::*"]),
    ("brownout-sim", &["sim::*"]),
    ("brownout-relay", &["otlp::*"]),
    ("brownout-relay", &["relay::url_back::*"]),
    ("brownout-experiment", &["load::*"]),
    ("brownout-experiment", &["probe::*"]),
    ("brownout-experiment", &["search::*"]),
    ("brownout-mcp", &["design::*"]),
    ("brownout-mcp", &["mcp::*"]),
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root")
}

/// The workspace's packages as `cargo metadata --no-deps` gives them.
fn packages() -> Vec<Value> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(repo())
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON");
    v["packages"].as_array().expect("packages").clone()
}

/// A package's normal (not dev, not build) dependencies, by name.
fn normal_deps(p: &Value) -> BTreeSet<String> {
    p["dependencies"]
        .as_array()
        .expect("dependencies")
        .iter()
        .filter(|d| d["kind"].is_null())
        .map(|d| d["name"].as_str().expect("name").to_string())
        .collect()
}

/// Every crate `krate` pulls in to build (normal dependencies, transitively, features as a
/// build of that crate alone resolves them), as `cargo tree` lists them.
fn pulled_in(krate: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "none",
            "-f",
            "{p}",
            "-p",
        ])
        .arg(krate)
        .current_dir(repo())
        .output()
        .expect("run cargo tree");
    assert!(
        out.status.success(),
        "cargo tree -p {krate}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

#[test]
fn each_crate_uses_only_the_layers_below_it() {
    let layers: BTreeMap<&str, &[&str]> = LAYERS.iter().copied().collect();
    let pkgs = packages();
    let members: BTreeSet<String> = pkgs
        .iter()
        .map(|p| p["name"].as_str().expect("name").to_string())
        .collect();
    for m in &members {
        assert!(
            layers.contains_key(m.as_str()),
            "{m} is a workspace crate with no place in the layering: add it to LAYERS here and \
             to the table in docs/architecture.md"
        );
    }
    for p in &pkgs {
        let name = p["name"].as_str().expect("name");
        let allowed = layers[name];
        for d in normal_deps(p) {
            if members.contains(&d) {
                assert!(
                    allowed.contains(&d.as_str()),
                    "{name} depends on {d}, which its layer may not use (allowed: {allowed:?})"
                );
            }
        }
    }
}

#[test]
fn the_pure_crates_pull_no_io_crate() {
    for pure in PURE {
        let pulled = pulled_in(pure);
        assert!(
            pulled.contains(*pure) && pulled.contains("serde"),
            "{pure}: cargo tree listed {pulled:?}"
        );
        for io in IO_CRATES {
            assert!(
                !pulled.contains(*io),
                "{pure} must stay pure, but pulls {io} (cargo tree -p {pure} -i {io})"
            );
        }
    }
}

/// Each crate's source trees: `src/lib.rs` and `src/main.rs`, where they exist.
fn roots(krate: &str) -> Vec<PathBuf> {
    let src = repo().join("crates").join(krate).join("src");
    ["lib.rs", "main.rs"]
        .iter()
        .map(|r| src.join(r))
        .filter(|r| r.is_file())
        .collect()
}

#[test]
fn no_module_imports_another_in_a_circle_at_any_level() {
    let base = repo();
    let mut modules = 0;
    let mut imports = 0;
    let mut found = Vec::new();
    let mut still_known = BTreeSet::new();
    for (name, _) in LAYERS {
        let roots = roots(name);
        assert!(!roots.is_empty(), "{name}: no lib.rs or main.rs");
        for root in roots {
            let t = modgraph::read_tree(&root);
            modules += t.files.len();
            imports += t.imports.len();
            for c in modgraph::tree_circles(&t, &base) {
                let known = KNOWN_CIRCLES.iter().position(|(k, members)| {
                    k == name && c.members.iter().all(|m| known_member(members, m))
                });
                match known {
                    Some(k) => {
                        still_known.insert(k);
                    }
                    None => found.push(format!("{name} ({}): {}", root.display(), c.message)),
                }
            }
        }
    }
    assert!(
        modules > 300 && imports > 1000,
        "only {modules} module files and {imports} imports found: the reader misses code"
    );
    assert!(
        found.is_empty(),
        "modules import each other in a circle (tests/layering_support says what counts; \
         break it by moving what both sides need to the lowest module that needs it):\n{}",
        found.join("\n")
    );
    for (k, (name, members)) in KNOWN_CIRCLES.iter().enumerate() {
        assert!(
            still_known.contains(&k),
            "{name}: {members:?} no longer import each other in a circle: drop it from \
             KNOWN_CIRCLES"
        );
    }
}

/// Whether module `m` is one of `members` (`a::*` stands for `a` and everything below it).
fn known_member(members: &[&str], m: &str) -> bool {
    members.iter().any(|k| match k.strip_suffix("::*") {
        Some(prefix) => m == prefix || m.starts_with(&format!("{prefix}::")),
        None => *k == m,
    })
}

/// Writes a small crate tree and reads its circles.
fn circles_of(files: &[(&str, &str)]) -> Vec<String> {
    let dir = tempfile::tempdir().expect("a temporary folder");
    for (path, text) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().expect("a folder")).expect("make a folder");
        std::fs::write(&p, text).expect("write a file");
    }
    let t = modgraph::read_tree(&dir.path().join("lib.rs"));
    modgraph::tree_circles(&t, dir.path())
        .into_iter()
        .map(|c| c.message)
        .collect()
}

#[test]
fn the_circle_finder_finds_circles_at_every_level() {
    // Siblings, through a `use` and through a path written in code.
    let c = circles_of(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
        ("a.rs", "use crate::b::B;\npub struct A;\n"),
        ("b.rs", "pub struct B;\nfn f() { super::c::g(); }\n"),
        (
            "c.rs",
            "pub fn g() {}\nfn h() -> crate::a::A { crate::a::A }\n",
        ),
    ]);
    assert!(
        c.iter().any(|m| m.contains("3 module files: a, b, c")
            && m.contains("a.rs:1 → b")
            && m.contains("b.rs:2 → c")
            && m.contains("c.rs:2 → a")),
        "{c:?}"
    );
    // A parent that calls a child which imports the parent back; hidden behind a re-export
    // in a subtree (x::inner re-exported as x::Inner); a `mod` declaration and a re-export
    // alone are no circle.
    let c = circles_of(&[
        ("lib.rs", "pub mod p;\nmod x;\nmod y;\npub use p::Kid;\n"),
        (
            "p/mod.rs",
            "mod kid;\npub use kid::Kid;\npub struct P;\nfn f() { kid::make(); }\n",
        ),
        (
            "p/kid.rs",
            "use super::P;\npub struct Kid;\npub fn make() {}\n",
        ),
        ("x/mod.rs", "mod inner;\npub use inner::Inner;\n"),
        ("x/inner.rs", "pub struct Inner(crate::y::Y);\n"),
        ("y.rs", "pub struct Y;\nfn f(_: crate::x::Inner) {}\n"),
    ]);
    assert!(
        c.iter().any(|m| m.contains("2 module files: p, p::kid")
            && m.contains("p/mod.rs:4 → p::kid")
            && m.contains("p/kid.rs:1 → p")),
        "{c:?}"
    );
    assert!(
        c.iter().any(|m| m.contains("2 module files: x::inner, y")),
        "{c:?}"
    );
    assert!(
        c.iter()
            .any(|m| m.contains("sibling modules (each with what is below it) in crate: x, y")),
        "{c:?}"
    );
    assert_eq!(c.len(), 3, "{c:?}");
    // Tests inside a file (`mod tests { use super::*; }`) point at their own file.
    let c = circles_of(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "pub fn a() { crate::b::b(); }\n#[cfg(test)]\nmod tests { use super::*; }\n",
        ),
        ("b.rs", "pub fn b() {}\n"),
    ]);
    assert!(c.is_empty(), "{c:?}");
}
