//! Fault plans: load, validate, compile.
//!
//! A plan is YAML, JSON or TOML with one flat shape per fault: the kind, the selector keys
//! and the kind's own keys side by side. Loading reports *every* error with `line:column`
//! and the offending key (unknown key, unknown kind, value out of range, bad glob, …), not
//! just the first. Validation runs against the same JSON Schema that `brownout plan schema`
//! prints, then the semantic checks a schema cannot express. Plans written for mcp-chaos
//! load unchanged (see [`compat`]).

pub mod compat;
mod explain;
pub mod ids;
mod schema;
pub mod source;
pub use crate::plan_spec as spec;

use crate::faults::correlation::Correlation;
use crate::faults::process::{Process, RestartPolicy};
use crate::faults::{kind_info, Effect};
use crate::rng::hash_str;
use crate::select::Selector;
use crate::time::Time;
pub use schema::plan_schema;
use source::{Format, Node, NodeValue, Pos};
use spec::{HeadSpec, PlanSpec, SelectorSpec};
use std::fmt;

/// One problem in a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanError {
    pub pos: Pos,
    /// The offending key, as a path (`faults[2].added_ms`); empty for the document.
    pub key: String,
    pub message: String,
}

/// Every problem found in a plan, with the file it came from.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct PlanErrors {
    pub file: String,
    pub errors: Vec<PlanError>,
}

impl PlanErrors {
    /// The errors of `file`, sorted by where they sit (stable: errors at one position keep
    /// the order they were found in), so they read top to bottom like the file.
    pub fn in_line_order(file: &str, mut errors: Vec<PlanError>) -> PlanErrors {
        errors.sort_by_key(|e| (e.pos.line, e.pos.column));
        PlanErrors {
            file: file.to_string(),
            errors,
        }
    }
}

impl fmt::Display for PlanErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.errors.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            if e.key.is_empty() {
                write!(f, "{}:{}: {}", self.file, e.pos, e.message)?;
            } else {
                write!(f, "{}:{}: `{}`: {}", self.file, e.pos, e.key, e.message)?;
            }
        }
        Ok(())
    }
}

/// The longest fault id, in characters (a fleet run adds its run id to each).
pub const MAX_ID_CHARS: usize = 256;

/// Why `id` cannot name a fault, if it cannot: ids are printed on terminals and in reports
/// and put in admin URLs (`/faults/{id}`), so nothing that does not show as itself (control
/// and format characters — bidi controls, zero-width and tag characters, soft hyphens —,
/// line and paragraph separators, unassigned code points, blank fillers and variation
/// selectors, spaces other than U+0020), no space at either end (two ids that print alike
/// are one id to a reader), no `.`/`..` (a URL client drops them as path segments, so such
/// a fault could never be removed), and a bounded length.
fn id_problem(id: &str) -> Option<String> {
    if let Some(c) = id.chars().find(|&c| !shows_as_itself(c)) {
        return Some(format!(
            "contains the character U+{:04X}, which does not print as itself (invisible, a control, or a direction or line break): ids are printable text",
            c as u32
        ));
    }
    if id.starts_with(' ') || id.ends_with(' ') {
        return Some(format!(
            "`{id}` begins or ends with a space: ids that print alike must be one id"
        ));
    }
    if id == "." || id == ".." {
        return Some(format!(
            "`{id}` cannot be used: it is a path step in admin URLs"
        ));
    }
    let n = id.chars().count();
    (n > MAX_ID_CHARS).then(|| format!("is {n} characters long (at most {MAX_ID_CHARS})"))
}

/// Whether `c` prints as itself in an id (see [`id_problem`]).
fn shows_as_itself(c: char) -> bool {
    use unicode_general_category::{get_general_category, GeneralCategory as G};
    if c == ' ' {
        return true;
    }
    if c.is_whitespace() {
        return false;
    }
    // Blank or invisible although not format characters: combining grapheme joiner, Hangul
    // fillers, Khmer inherent vowels, Mongolian and other variation selectors, braille blank.
    if matches!(c,
        '\u{34f}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}' | '\u{180b}'..='\u{180f}'
        | '\u{2800}' | '\u{3164}' | '\u{fe00}'..='\u{fe0f}' | '\u{ffa0}' | '\u{e0100}'..='\u{e01ef}')
    {
        return false;
    }
    !matches!(
        get_general_category(c),
        G::Control
            | G::Format
            | G::LineSeparator
            | G::ParagraphSeparator
            | G::Unassigned
            | G::Surrogate
    )
}

/// A compiled fault, ready for the engine.
#[derive(Debug, Clone)]
pub struct Fault {
    pub id: String,
    pub id_hash: u64,
    pub description: Option<String>,
    pub enabled: bool,
    pub select: Selector,
    pub correlation: Option<Correlation>,
    pub effect: Effect,
    /// The side of a call the effect lands on.
    pub direction: crate::select::Direction,
    /// Where the fault is in the plan: its index in `faults` and its position in the text.
    pub index: usize,
    pub pos: Pos,
}

/// A compiled plan.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub seed: u64,
    pub name: Option<String>,
    pub duration: Option<Time>,
    pub faults: Vec<Fault>,
}

impl Plan {
    /// The empty plan: every message passes untouched.
    pub fn empty() -> Plan {
        Plan::default()
    }

    /// Load a plan from text; `file` names it in errors and picks the format by extension.
    pub fn from_str_named(text: &str, file: &str) -> Result<Plan, PlanErrors> {
        Plan::from_str_format(text, file, Format::from_path(file))
    }

    pub fn from_str_format(text: &str, file: &str, format: Format) -> Result<Plan, PlanErrors> {
        let fail = |errors: Vec<PlanError>| PlanErrors::in_line_order(file, errors);
        let mut root = source::parse(text, format).map_err(|e| {
            fail(vec![PlanError {
                pos: e.pos,
                key: String::new(),
                message: format!("syntax error: {}", e.message),
            }])
        })?;
        if let Some(e) = missing_faults(&root).or_else(|| too_many_faults(&root)) {
            return Err(fail(vec![e]));
        }
        compat::translate(&mut root);
        compile(&root).map_err(fail)
    }

    /// The restart policy for a stdio server, from the first `process` fault that has one.
    pub fn restart_policy(&self) -> RestartPolicy {
        self.faults
            .iter()
            .find_map(|f| {
                f.effect
                    .downcast::<Process>()
                    .map(RestartPolicy::from_fault)
            })
            .unwrap_or_default()
    }

    pub fn fault(&self, id: &str) -> Option<&Fault> {
        self.faults.iter().find(|f| f.id == id)
    }

    /// Refuse the faults `driver` cannot perform: one error per fault and missing
    /// capability, naming the fault, its kind and the driver (`file` names the plan in the
    /// errors, as when it was loaded). Disabled faults are not checked: they never act.
    pub fn check_driver(
        &self,
        driver: &str,
        can: crate::capability::Capabilities,
        file: &str,
    ) -> Result<(), PlanErrors> {
        let errors: Vec<PlanError> = self
            .faults
            .iter()
            .filter(|f| f.enabled)
            .flat_map(|f| {
                f.effect
                    .needs(f.direction)
                    .into_iter()
                    .filter(move |n| !can.has(n.capability))
                    .map(move |n| PlanError {
                        pos: f.pos,
                        key: if n.key.is_empty() {
                            format!("faults[{}]", f.index)
                        } else {
                            format!("faults[{}].{}", f.index, n.key)
                        },
                        message: format!(
                            "fault `{}` (kind `{}`) cannot run on {driver}: it needs to {}, which {driver} cannot do",
                            f.id,
                            f.effect.kind(),
                            n.capability,
                        ),
                    })
            })
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(PlanErrors {
                file: file.to_string(),
                errors,
            })
        }
    }
}

/// An empty document (nothing, `null`, `{}`, only comments) or one without `faults` is refused:
/// a half-written file or an empty request body must not silently install a plan with no
/// faults. A plan with no faults says so with `faults: []`.
fn missing_faults(root: &Node) -> Option<PlanError> {
    const HINT: &str = "write `faults: []` for a plan with no faults";
    let mut pos = root.pos;
    let message = match &root.value {
        NodeValue::Null => format!("the plan is empty; {HINT}"),
        NodeValue::Map(entries) if entries.is_empty() => format!("the plan is empty; {HINT}"),
        NodeValue::Map(entries) if !entries.iter().any(|e| e.key == "faults") => {
            pos = entries.first().map_or(pos, |e| e.key_pos);
            format!("the plan has no `faults` key; {HINT}")
        }
        _ => return None,
    };
    Some(PlanError {
        pos,
        key: String::new(),
        message,
    })
}

/// The most faults one plan may hold (the file's and those added at run time together). A
/// real plan has a few dozen; past this, memory and the exit summary (a line per fault) grow
/// for nothing, and every message pays for the selectors of all of them.
pub const MAX_FAULTS: usize = 1000;

fn too_many_faults(root: &Node) -> Option<PlanError> {
    let NodeValue::Map(entries) = &root.value else {
        return None;
    };
    let faults = entries.iter().find(|e| e.key == "faults")?;
    match &faults.value.value {
        NodeValue::Seq(items) if items.len() > MAX_FAULTS => Some(PlanError {
            pos: faults.key_pos,
            key: "faults".into(),
            message: format!(
                "{} faults; a plan holds at most {MAX_FAULTS} (merge faults that share a kind: \
                 one fault's `tools`, `methods` and `sessions` select many targets)",
                items.len()
            ),
        }),
        _ => None,
    }
}

/// Load any document type (a simulator workload, say) from YAML, JSON or TOML with the same
/// `file:line:column` errors as plans: every schema violation, then the typed read.
pub fn load_document<T: serde::de::DeserializeOwned + schemars::JsonSchema>(
    text: &str,
    file: &str,
) -> Result<T, PlanErrors> {
    let fail = |errors: Vec<PlanError>| PlanErrors::in_line_order(file, errors);
    let root = source::parse(text, Format::from_path(file)).map_err(|e| {
        fail(vec![PlanError {
            pos: e.pos,
            key: String::new(),
            message: format!("syntax error: {}", e.message),
        }])
    })?;
    let json = root.to_json();
    let errors: Vec<PlanError> = schema::check_document::<T>(&json)
        .into_iter()
        .map(|(p, key, m)| error_at(&root, &p, key, m))
        .collect();
    if !errors.is_empty() {
        return Err(fail(errors));
    }
    serde_json::from_value(json).map_err(|e| fail(vec![error_at(&root, "", false, e.to_string())]))
}

/// A JSON pointer → the `faults[2].added_ms` style path users read.
pub fn display_path(pointer: &str) -> String {
    let mut out = String::new();
    for part in pointer
        .trim_start_matches('/')
        .split('/')
        .filter(|p| !p.is_empty())
    {
        let part = part.replace("~1", "/").replace("~0", "~");
        if part.parse::<usize>().is_ok() {
            out.push_str(&format!("[{part}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&part);
        }
    }
    out
}

fn error_at(root: &Node, pointer: &str, key_pos: bool, message: impl Into<String>) -> PlanError {
    PlanError {
        pos: root.locate(pointer, key_pos),
        key: display_path(pointer),
        message: message.into(),
    }
}

/// The closest known name, for "did you mean" hints.
pub fn suggest<'a>(word: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    known
        .into_iter()
        .map(|k| (distance(word, k), k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// The edit distance (Levenshtein, `strsim`) between two names, over their first 128
/// characters: a longer name is no typo of a known one, and the cost stays bounded whatever
/// a file or a peer sends. Every "did you mean" measures with this.
pub fn distance(a: &str, b: &str) -> usize {
    fn head(s: &str) -> &str {
        s.char_indices().nth(128).map_or(s, |(i, _)| &s[..i])
    }
    strsim::levenshtein(head(a), head(b))
}

/// The most errors reported for one document: past them, checking stops (with a note
/// saying so), so the cost of a broken or hostile file is bounded by this, not its size.
pub const MAX_ERRORS: usize = 100;

fn compile(root: &Node) -> Result<Plan, Vec<PlanError>> {
    let mut errors = Vec::new();
    let json = root.to_json();
    if !json.is_object() {
        return Err(vec![error_at(
            root,
            "",
            false,
            "a plan is a mapping with `seed` and `faults`",
        )]);
    }
    errors.extend(
        schema::check_top(&json)
            .into_iter()
            .map(|(p, key, m)| error_at(root, &p, key, m)),
    );
    if !errors.is_empty() {
        return Err(errors);
    }
    let top: PlanSpec = serde_json::from_value(json.clone())
        .map_err(|e| vec![error_at(root, "", false, e.to_string())])?;
    let duration = top.duration.as_ref().and_then(|d| d.resolve(None));
    let seed = top.seed.unwrap_or(0);
    let mut faults: Vec<Fault> = Vec::new();
    // Per compiled fault: its index in the plan and the hash of its content.
    let mut origin: Vec<(usize, u64)> = Vec::new();
    for (i, raw) in top.faults.into_iter().enumerate() {
        let base = format!("/faults/{i}");
        if errors.len() >= MAX_ERRORS {
            errors.truncate(MAX_ERRORS);
            errors.push(error_at(
                root,
                &base,
                false,
                format!(
                    "checking stopped here after {MAX_ERRORS} errors: fix those and check again"
                ),
            ));
            break;
        }
        let hash = ids::content_hash(&raw);
        match compile_fault(root, i, &base, raw, duration) {
            Ok(f) => {
                faults.push(f);
                origin.push((i, hash));
            }
            Err(es) => errors.extend(es),
        }
    }
    let named: Vec<Result<String, (&str, u64)>> = faults
        .iter()
        .zip(&origin)
        .map(|(f, (_, hash))| {
            if f.id.is_empty() {
                Err((f.effect.kind(), *hash))
            } else {
                Ok(f.id.clone())
            }
        })
        .collect();
    let mut seen = std::collections::HashSet::new();
    for (f, (i, _)) in faults.iter().zip(&origin) {
        if let Some(problem) = id_problem(&f.id) {
            errors.push(error_at(
                root,
                &format!("/faults/{i}/id"),
                false,
                format!("fault id {problem}"),
            ));
        } else if !f.id.is_empty() && !seen.insert(f.id.as_str()) {
            errors.push(error_at(
                root,
                &format!("/faults/{i}/id"),
                false,
                format!("duplicate fault id `{}`", f.id),
            ));
        }
    }
    for (f, id) in faults.iter_mut().zip(ids::assign(&named)) {
        f.id_hash = hash_str(ids::stream_name(&id));
        f.id = id;
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Plan {
        seed,
        name: top.name,
        duration,
        faults,
    })
}

fn compile_fault(
    root: &Node,
    index: usize,
    base: &str,
    raw: serde_json::Value,
    run: Option<Time>,
) -> Result<Fault, Vec<PlanError>> {
    let at = |p: &str, key: bool, m: String| error_at(root, &format!("{base}{p}"), key, m);
    let Some(obj) = raw.as_object() else {
        return Err(vec![at(
            "",
            false,
            "a fault is a mapping with at least `kind`".into(),
        )]);
    };
    let Some(kind_name) = obj.get("kind").and_then(|k| k.as_str()) else {
        let kinds = crate::faults::kind_names().join(", ");
        let msg = if obj.contains_key("kind") {
            format!("`kind` must be a string, one of {kinds}")
        } else {
            format!("missing `kind` (or `type`), one of {kinds}")
        };
        return Err(vec![at(
            if obj.contains_key("kind") {
                "/kind"
            } else {
                ""
            },
            false,
            msg,
        )]);
    };
    let Some(info) = kind_info(kind_name) else {
        let names = crate::faults::kind_names();
        let hint = suggest(kind_name, names.iter().copied())
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        return Err(vec![at(
            "/kind",
            false,
            format!(
                "unknown kind `{kind_name}`{hint}; known kinds: {}",
                names.join(", ")
            ),
        )]);
    };
    let schema_errors = schema::check_fault(info, &raw);
    if !schema_errors.is_empty() {
        return Err(schema_errors
            .into_iter()
            .map(|(p, key, m)| at(&p, key, m))
            .collect());
    }
    let parse_err = |e: serde_json::Error| vec![at("", false, e.to_string())];
    let head: HeadSpec = serde_json::from_value(raw.clone()).map_err(parse_err)?;
    let sel: SelectorSpec = serde_json::from_value(raw.clone()).map_err(parse_err)?;
    let effect = info.compile(raw).map_err(parse_err)?;
    let mut errors = Vec::new();
    let select = match Selector::compile(&sel, info.default_methods, run) {
        Ok(s) => Some(s),
        Err(es) => {
            errors.extend(es.into_iter().map(|(p, m)| at(&format!("/{p}"), false, m)));
            None
        }
    };
    let probability = sel.probability.unwrap_or(1.0);
    let correlation = match &sel.correlation {
        Some(c) => match Correlation::compile(c, probability) {
            Ok(c) => Some(c),
            Err((p, m)) => {
                errors.push(at(&format!("/{p}"), false, m));
                None
            }
        },
        None => None,
    };
    errors.extend(
        effect
            .check()
            .into_iter()
            .map(|e| at(&format!("/{}", e.key), e.at_key, e.message)),
    );
    let (Some(mut select), true) = (select, errors.is_empty()) else {
        return Err(errors);
    };
    select.max_injections = select.max_injections.or(effect.default_max_injections());
    let direction = select.direction.unwrap_or(info.default_direction);
    Ok(Fault {
        id: head.id.unwrap_or_default(),
        id_hash: 0,
        description: head.description,
        enabled: head.enabled.unwrap_or(true),
        select,
        correlation,
        effect,
        direction,
        index,
        pos: root.locate(base, false),
    })
}

#[cfg(test)]
mod driver_tests;
#[cfg(test)]
mod tests;
