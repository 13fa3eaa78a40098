//! Selectors: where a fault applies.
//!
//! Every fault kind carries the same selector keys beside its own: `direction`, `methods`,
//! `tools` (globs), `arguments` (JSON pointer → value or regex), `probability`, `sessions`
//! (a stable, seed-determined fraction of sessions: the blast radius), `after_calls`,
//! `every_nth`, `max_injections` and `window`. [`Selector::matches_static`] checks what a
//! message alone decides; the stateful and random parts live in the engine, which owns the
//! counters, and in [`crate::faults::correlation`].

use crate::plan::spec::{ArgMatcher, DirectionSpec, SelectorSpec, Span, WindowSpec};
use crate::rng::{hash_str, mix, to_unit};
use crate::time::Time;
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use regex::Regex;
use serde_json::Value;

/// Which way a message travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Client → server: requests, client notifications, answers to server requests.
    ToServer,
    /// Server → client: responses, server notifications, server-initiated requests.
    ToClient,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::ToServer => "to_server",
            Direction::ToClient => "to_client",
        }
    }
}

/// The characters a glob gives a meaning to; [`escape`] quotes them.
pub const GLOB_CHARS: &[char] = &['*', '?', '[', ']', '{', '}', '\\'];

/// A glob that matches `name` and nothing else: every glob character preceded by `\`
/// (a tool named `*` becomes the pattern `\*`, matching only a tool named `*`).
pub fn escape(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if GLOB_CHARS.contains(&c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A compiled glob list; `None` means "anything". A `\` quotes the character after it
/// (`\*` is a literal star) on every platform.
#[derive(Debug, Clone)]
pub struct Globs {
    set: GlobSet,
    pub patterns: Vec<String>,
    /// When no pattern has a wildcard, plain comparison (the hot path: `tools/call`).
    literal: bool,
}

impl Globs {
    pub fn new(patterns: &[String]) -> Result<Globs, (usize, String)> {
        let mut b = GlobSetBuilder::new();
        for (i, p) in patterns.iter().enumerate() {
            let glob = GlobBuilder::new(p)
                .backslash_escape(true)
                .build()
                .map_err(|e| (i, format!("bad glob `{p}`: {}", e.kind())))?;
            b.add(glob);
        }
        let set = b.build().map_err(|e| (0, format!("bad glob: {e}")))?;
        let literal = patterns.iter().all(|p| !p.contains(GLOB_CHARS));
        Ok(Globs {
            set,
            patterns: patterns.to_vec(),
            literal,
        })
    }

    pub fn is_match(&self, s: &str) -> bool {
        if self.literal {
            self.patterns.iter().any(|p| p == s)
        } else {
            self.set.is_match(s)
        }
    }
}

#[derive(Debug, Clone)]
pub enum ArgTest {
    Equals(Value),
    Regex(Regex),
}

/// One argument condition: the value at a JSON pointer inside `params.arguments`.
#[derive(Debug, Clone)]
pub struct ArgCondition {
    pub pointer: String,
    /// The pointer's tokens, unescaped (`~1` is `/`, `~0` is `~`).
    pub tokens: Vec<String>,
    pub test: ArgTest,
}

impl ArgCondition {
    fn new(pointer: String, test: ArgTest) -> ArgCondition {
        let tokens = pointer
            .split('/')
            .skip(1)
            .map(|t| t.replace("~1", "/").replace("~0", "~"))
            .collect();
        ArgCondition {
            pointer,
            tokens,
            test,
        }
    }

    fn holds(&self, v: &Value) -> bool {
        match &self.test {
            ArgTest::Equals(want) => v == want,
            ArgTest::Regex(re) => match v {
                Value::String(s) => re.is_match(s),
                other => re.is_match(&other.to_string()),
            },
        }
    }
}

/// A time window in run time: `[start, start + duration)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    pub start: Time,
    pub end: Option<Time>,
}

impl Window {
    pub fn contains(&self, now: Time) -> bool {
        now >= self.start && self.end.is_none_or(|e| now < e)
    }
}

/// The compiled selectors of one fault.
#[derive(Debug, Clone)]
pub struct Selector {
    pub direction: Option<Direction>,
    pub methods: Option<Globs>,
    pub tools: Option<Globs>,
    pub servers: Option<Globs>,
    pub arguments: Vec<ArgCondition>,
    pub probability: f64,
    pub sessions: Option<f64>,
    pub after_calls: u64,
    pub every_nth: Option<u64>,
    pub max_injections: Option<u64>,
    pub window: Option<Window>,
}

/// A compile error inside the selector keys: the key path below the fault and a message.
pub type SelectError = (String, String);

impl Selector {
    /// Compile selector keys. `default_methods` applies when `methods` is absent;
    /// `run_duration` resolves percentage windows.
    pub fn compile(
        spec: &SelectorSpec,
        default_methods: &[&str],
        run_duration: Option<Time>,
    ) -> Result<Selector, Vec<SelectError>> {
        let mut errors = Vec::new();
        let methods_src: Vec<String> = match &spec.methods {
            Some(m) => m.clone(),
            None => default_methods.iter().map(|s| s.to_string()).collect(),
        };
        let methods = if methods_src.is_empty() || methods_src.iter().any(|m| m == "*") {
            None
        } else {
            match Globs::new(&methods_src) {
                Ok(g) => Some(g),
                Err((i, msg)) => {
                    errors.push((format!("methods/{i}"), msg));
                    None
                }
            }
        };
        let tools = match &spec.tools {
            Some(t) => match Globs::new(t) {
                Ok(g) => Some(g),
                Err((i, msg)) => {
                    errors.push((format!("tools/{i}"), msg));
                    None
                }
            },
            None => None,
        };
        let servers = match &spec.servers {
            Some(t) => match Globs::new(t) {
                Ok(g) => Some(g),
                Err((i, msg)) => {
                    errors.push((format!("servers/{i}"), msg));
                    None
                }
            },
            None => None,
        };
        let mut arguments = Vec::new();
        for (key, m) in spec.arguments.iter().flatten() {
            let pointer = if key.starts_with('/') {
                key.clone()
            } else {
                format!("/{key}")
            };
            let test = match m {
                ArgMatcher::Regex { regex } => match Regex::new(regex) {
                    Ok(re) => ArgTest::Regex(re),
                    Err(e) => {
                        errors.push((format!("arguments/{key}/regex"), format!("bad regex: {e}")));
                        continue;
                    }
                },
                ArgMatcher::Equals(v) => ArgTest::Equals(v.clone()),
            };
            arguments.push(ArgCondition::new(pointer, test));
        }
        let window = match &spec.window {
            None => None,
            Some(w) => match compile_window(w, run_duration) {
                Ok(w) => Some(w),
                Err(e) => {
                    errors.push(e);
                    None
                }
            },
        };
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Selector {
            direction: spec.direction.map(|d| match d {
                DirectionSpec::ToServer => Direction::ToServer,
                DirectionSpec::ToClient => Direction::ToClient,
            }),
            methods,
            tools,
            servers,
            arguments,
            probability: spec.probability.unwrap_or(1.0),
            sessions: spec.sessions,
            after_calls: spec.after_calls.unwrap_or(0),
            every_nth: spec.every_nth,
            max_injections: spec.max_injections,
            window,
        })
    }

    pub fn method_matches(&self, method: &str) -> bool {
        self.methods.as_ref().is_none_or(|g| g.is_match(method))
    }

    pub fn tool_matches(&self, tool: Option<&str>) -> bool {
        match (&self.tools, tool) {
            (None, _) => true,
            (Some(g), Some(t)) => g.is_match(t),
            (Some(_), None) => false,
        }
    }

    /// Whether a call to `server` (`None`: the relay fronts one server) is selected: always
    /// without `servers`, never on a single server's relay with it.
    pub fn server_matches(&self, server: Option<&str>) -> bool {
        match (&self.servers, server) {
            (None, _) => true,
            (Some(g), Some(s)) => g.is_match(s),
            (Some(_), None) => false,
        }
    }

    /// Argument conditions against the call's `arguments`: `at` gives the value at a
    /// condition's pointer tokens (read only if there are conditions).
    pub fn arguments_match(&self, mut at: impl FnMut(&[String]) -> Option<Value>) -> bool {
        self.arguments
            .iter()
            .all(|c| at(&c.tokens).is_some_and(|v| c.holds(&v)))
    }

    pub fn in_window(&self, now: Time) -> bool {
        self.window.is_none_or(|w| w.contains(now))
    }
}

/// Whether a session belongs to the blast radius `fraction`, as a stable hash of
/// (seed, session key). It does not depend on the fault, so a 10 % radius is inside a 20 %
/// one and every fault of a plan hits the same sessions.
pub fn session_selected(seed: u64, session: &str, fraction: f64) -> bool {
    session_selected_hash(seed, hash_str(session), fraction)
}

/// [`session_selected`] for a session whose key's `hash_str` is already known.
pub fn session_selected_hash(seed: u64, session_hash: u64, fraction: f64) -> bool {
    to_unit(mix(mix(seed ^ 0x5e55_1011) ^ session_hash)) < fraction
}

fn compile_window(w: &WindowSpec, run: Option<Time>) -> Result<Window, SelectError> {
    let resolve = |span: &Span, key: &str| -> Result<Time, SelectError> {
        match span.resolve(run) {
            Some(t) => Ok(t),
            None => Err((
                format!("window/{key}"),
                "a percentage window needs the plan's top-level `duration`".to_string(),
            )),
        }
    };
    let start = match &w.start {
        Some(s) => resolve(s, "start")?,
        None => Time::ZERO,
    };
    let end = match &w.duration {
        Some(d) => Some(start + resolve(d, "duration")?),
        None => None,
    };
    Ok(Window { start, end })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blast_radius_is_stable_and_nested() {
        let sessions: Vec<String> = (0..2000).map(|i| format!("s{i}")).collect();
        let ten: Vec<&String> = sessions
            .iter()
            .filter(|s| session_selected(9, s, 0.1))
            .collect();
        let twenty: Vec<&String> = sessions
            .iter()
            .filter(|s| session_selected(9, s, 0.2))
            .collect();
        assert!(ten.iter().all(|s| twenty.contains(s)), "10% is inside 20%");
        assert!((150..250).contains(&ten.len()), "about 10%: {}", ten.len());
        assert_eq!(
            ten,
            sessions
                .iter()
                .filter(|s| session_selected(9, s, 0.1))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn globs_and_arguments() {
        let g = Globs::new(&["fetch_*".into(), "tools/*".into()]).expect("globs");
        assert!(g.is_match("fetch_logs"));
        assert!(g.is_match("tools/call"));
        assert!(!g.is_match("echo"));
        assert!(Globs::new(&["a[".into()]).is_err());
        let c = ArgCondition::new(
            "/env".into(),
            ArgTest::Regex(Regex::new("^prod").expect("re")),
        );
        let holds = |args: serde_json::Value| args.pointer(&c.pointer).is_some_and(|v| c.holds(v));
        assert!(holds(serde_json::json!({"env": "production"})));
        assert!(!holds(serde_json::json!({"env": "staging"})));
        assert!(!holds(serde_json::json!({})));
        assert_eq!(
            ArgCondition::new("/a~1b/c~0d/0".into(), ArgTest::Equals(1.into())).tokens,
            ["a/b", "c~d", "0"]
        );
    }

    #[test]
    fn escaped_names_match_only_themselves() {
        let names = ["*", "a?b", "x[1]", "{a,b}", "back\\slash", "**", "plain"];
        let all = [
            "*",
            "a?b",
            "axb",
            "x[1]",
            "x1",
            "{a,b}",
            "a",
            "b",
            "back\\slash",
            "**",
            "plain",
            "other",
        ];
        for n in names {
            let e = escape(n);
            let g = Globs::new(std::slice::from_ref(&e)).expect("an escaped name compiles");
            let hits: Vec<&str> = all.iter().copied().filter(|s| g.is_match(s)).collect();
            assert_eq!(hits, vec![n], "`{n}` escaped as `{e}`");
        }
        assert_eq!(escape("*"), "\\*");
        // Unescaped, a star is every tool.
        let star = Globs::new(&["*".to_string()]).expect("glob");
        assert!(star.is_match("restart_service"));
        assert!(!Globs::new(&[escape("*")])
            .expect("glob")
            .is_match("restart_service"));
    }
}
