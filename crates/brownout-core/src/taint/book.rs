//! One session's taints: kept bounded and expiring, and checked against each request.

use super::values::{leaves, Key, Tainted, MAX_LEAVES};
use crate::time::Time;
use serde_json::Value;
use std::collections::VecDeque;

/// Bounds and window of taint tracking.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TaintConfig {
    /// A changed result neither acted on nor noticed within this much run time is
    /// unobserved.
    pub window: Time,
    /// Most taints a session keeps (the oldest is classified and dropped beyond).
    pub max_taints: usize,
    /// Most values one changed result taints.
    pub max_values: usize,
}

impl Default for TaintConfig {
    fn default() -> Self {
        TaintConfig {
            window: Time::from_millis(60_000),
            max_taints: 64,
            max_values: 16,
        }
    }
}

/// Shortest tainted string found *inside* a longer argument string.
const MIN_INSIDE: usize = 6;

/// What became of a changed result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Within its window, nothing seen yet.
    Pending,
    /// A later request carried a value the fault introduced: a silent failure.
    Propagated,
    /// The agent re-called the tool with the same arguments or cancelled: a safe failure.
    Noticed,
    /// Neither within the window.
    Unobserved,
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Pending => "pending",
            Class::Propagated => "propagated",
            Class::Noticed => "noticed",
            Class::Unobserved => "unobserved",
        }
    }
}

/// A result a fault changed, and the values it introduced.
#[derive(Debug, Clone)]
pub struct Taint {
    /// The fault that changed it (the first, when several did).
    pub fault: String,
    pub kind: &'static str,
    /// The tool whose result it was.
    pub tool: String,
    /// The call's per-session sequence number.
    pub seq: u64,
    pub at: Time,
    /// Fingerprint of the call's arguments (a re-call with the same ones is noticing).
    pub args: u64,
    pub values: Vec<Tainted>,
    pub class: Class,
    /// The agent called another tool since: a later call of this tool with the same
    /// arguments is a new task's, not a re-fetch (it no longer counts as noticing).
    pub moved_on: bool,
}

/// A request that acted on a taint, or noticed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub class: Class,
    /// What [`Class`] the taint had before (a noticed result that is then acted on after
    /// all moves from noticed to propagated).
    pub was: Class,
    pub fault: String,
    pub kind: &'static str,
    pub from_tool: String,
    pub from_seq: u64,
    /// Where the value sat in the changed result, and where in the request's arguments.
    pub from_pointer: Option<String>,
    pub to_pointer: Option<String>,
    pub shown: Option<String>,
}

/// One session's taints, oldest first, each with the bytes a request must contain to carry
/// one of its values (so most requests are cleared without parsing their arguments).
#[derive(Debug, Default)]
pub struct Book {
    taints: VecDeque<(Taint, Needles)>,
}

/// What a request must contain to carry one of a taint's values; `any` when some value has
/// no such bytes (its requests are always parsed).
#[derive(Debug)]
struct Needles {
    finders: Vec<memchr::memmem::Finder<'static>>,
    any: bool,
}

impl Needles {
    fn of(t: &Taint) -> Needles {
        let mut n = Needles {
            finders: Vec::new(),
            any: false,
        };
        for v in &t.values {
            match v.needles() {
                Some(all) => n.finders.extend(
                    all.iter()
                        .map(|b| memchr::memmem::Finder::new(b).into_owned()),
                ),
                None => n.any = true,
            }
        }
        n
    }

    fn may_be_in(&self, raw: &[u8]) -> bool {
        self.any || self.finders.iter().any(|f| f.find(raw).is_some())
    }

    /// Whether the taint has values to look for at all.
    fn may_be_in_args(&self) -> bool {
        self.any || !self.finders.is_empty()
    }
}

impl Book {
    pub fn is_empty(&self) -> bool {
        self.taints.is_empty()
    }

    pub fn len(&self) -> usize {
        self.taints.len()
    }

    /// Keep a new taint; returns the oldest one if the book was full (the caller classifies
    /// it as it stood).
    pub fn add(&mut self, t: Taint, cfg: &TaintConfig) -> Option<Taint> {
        let n = Needles::of(&t);
        self.taints.push_back((t, n));
        if self.taints.len() > cfg.max_taints.max(1) {
            return self.taints.pop_front().map(|(t, _)| close(t));
        }
        None
    }

    /// Check a request (its raw bytes; `tool` names what it calls, or its method) against
    /// every live taint. Most requests carry no tainted bytes and re-call no tainted tool:
    /// they are cleared here, without parsing. Otherwise `args` parses the arguments and
    /// `fingerprint` is theirs.
    /// `call`: the request is a `tools/call` (a call of another tool means the agent moved
    /// on from a result; a `ping` or a `tools/list` does not).
    pub fn check_raw(
        &mut self,
        tool: &str,
        call: bool,
        raw: &[u8],
        args: impl FnOnce() -> Option<Value>,
        fingerprint: impl Fn(Option<&Value>) -> u64,
    ) -> Vec<Finding> {
        let mut recall = false;
        for (t, _) in self
            .taints
            .iter_mut()
            .filter(|(t, _)| t.class == Class::Pending)
        {
            if t.tool == tool {
                recall |= !t.moved_on;
            } else if call {
                t.moved_on = true;
            }
        }
        let carries = self.taints.iter().any(|(_, n)| n.may_be_in(raw));
        if !recall && !carries {
            return Vec::new();
        }
        let a = args();
        let fp = if recall { fingerprint(a.as_ref()) } else { 0 };
        self.check_for(tool, a.as_ref(), fp, carries)
    }

    /// Check a request (`tool` may be empty for other methods) against every live taint:
    /// propagations first (a propagated taint leaves the book), then a re-call.
    pub fn check(&mut self, tool: &str, args: Option<&Value>, fingerprint: u64) -> Vec<Finding> {
        self.check_for(tool, args, fingerprint, true)
    }

    /// [`Book::check`]; `values`: whether the request may carry tainted values at all (when
    /// not, only a re-call is looked for).
    fn check_for(
        &mut self,
        tool: &str,
        args: Option<&Value>,
        fingerprint: u64,
        values: bool,
    ) -> Vec<Finding> {
        let mut found = Vec::new();
        let mut arg_leaves = Vec::new();
        if let Some(a) = args {
            leaves(a, "", &mut arg_leaves);
        }
        let mut arg_keys: Vec<(usize, Key)> = arg_leaves
            .iter()
            .enumerate()
            .filter_map(|(i, (_, v))| Key::of(v).map(|k| (i, k)))
            .take(MAX_LEAVES)
            .collect();
        // The argument names too (a renamed parameter of a stale schema), pointing at the
        // first leaf under each, or a leaf of its own when it has none.
        // At most as many names as leaves are read: a peer's object of a million keys
        // cannot make each request's check quadratic.
        if let Some(Value::Object(m)) = args {
            for (k, v) in m.iter().take(MAX_LEAVES) {
                let p = format!("/{}", k.replace('~', "~0").replace('/', "~1"));
                // A leaf under this name: `/a` or `/a/…`, not `/ab`.
                let under = |lp: &str| {
                    lp.strip_prefix(p.as_str())
                        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
                };
                let at = arg_leaves.iter().position(|(lp, _)| under(lp));
                let at = at.unwrap_or_else(|| {
                    arg_leaves.push((p.clone(), v));
                    arg_leaves.len() - 1
                });
                arg_keys.push((at, Key::Name(k.as_str().into())));
            }
        }
        let mut i = 0;
        while i < self.taints.len() {
            let (t, needles) = &self.taints[i];
            let hit = if values && needles.may_be_in_args() {
                hit(t, &arg_keys, &arg_leaves)
            } else {
                None
            };
            if let Some((from, to)) = hit {
                let t = self.taints.remove(i).map(|(mut t, _)| {
                    let was = t.class;
                    t.class = Class::Propagated;
                    (t, was)
                });
                if let Some((t, was)) = t {
                    let v = &t.values[from];
                    found.push(Finding {
                        class: Class::Propagated,
                        was,
                        fault: t.fault,
                        kind: t.kind,
                        from_tool: t.tool,
                        from_seq: t.seq,
                        from_pointer: Some(v.pointer.clone()),
                        to_pointer: Some(arg_leaves[to].0.clone()),
                        shown: Some(v.shown.clone()),
                    });
                }
                continue;
            }
            if t.class == Class::Pending && !t.moved_on && t.tool == tool && t.args == fingerprint {
                let t = &mut self.taints[i].0;
                t.class = Class::Noticed;
                found.push(finding(t, Class::Noticed, Class::Pending));
            }
            i += 1;
        }
        found
    }

    /// The agent cancelled a request: every pending taint is noticed.
    pub fn cancelled(&mut self, request_seq: u64) -> Vec<Finding> {
        self.noticed_where(|t| t.seq < request_seq)
    }

    /// The agent cancelled a request it sent at `sent_at`, on any of its servers: every
    /// pending taint it had received by then is noticed. (An agent's book spans several
    /// sessions, whose sequence numbers do not compare: their shared clock does.)
    pub fn cancelled_since(&mut self, sent_at: Time) -> Vec<Finding> {
        self.noticed_where(|t| t.at <= sent_at)
    }

    /// Mark noticed every pending taint `before` holds for.
    fn noticed_where(&mut self, before: impl Fn(&Taint) -> bool) -> Vec<Finding> {
        let mut found = Vec::new();
        for (t, _) in self
            .taints
            .iter_mut()
            .filter(|(t, _)| t.class == Class::Pending && before(t))
        {
            t.class = Class::Noticed;
            found.push(finding(t, Class::Noticed, Class::Pending));
        }
        found
    }

    /// Taints whose window has passed, closed: pending ones become unobserved.
    pub fn expire(&mut self, now: Time, cfg: &TaintConfig) -> Vec<Taint> {
        let mut out = Vec::new();
        while self
            .taints
            .front()
            .is_some_and(|(t, _)| now.saturating_sub(t.at) >= cfg.window)
        {
            if let Some((t, _)) = self.taints.pop_front() {
                out.push(close(t));
            }
        }
        out
    }

    /// Close every taint (the session or the run ended).
    pub fn drain(&mut self) -> Vec<Taint> {
        self.taints.drain(..).map(|(t, _)| close(t)).collect()
    }
}

/// A taint leaving the book: still pending means nobody saw anything.
fn close(mut t: Taint) -> Taint {
    if t.class == Class::Pending {
        t.class = Class::Unobserved;
    }
    t
}

fn finding(t: &Taint, class: Class, was: Class) -> Finding {
    Finding {
        class,
        was,
        fault: t.fault.clone(),
        kind: t.kind,
        from_tool: t.tool.clone(),
        from_seq: t.seq,
        from_pointer: None,
        to_pointer: None,
        shown: None,
    }
}

/// The first (tainted value, argument leaf) pair that matches: equal, or a long enough
/// tainted string inside an argument string.
fn hit(
    t: &Taint,
    keys: &[(usize, Key)],
    arg_leaves: &[(String, &Value)],
) -> Option<(usize, usize)> {
    for (vi, v) in t.values.iter().enumerate() {
        if let Some((li, _)) = keys.iter().find(|(_, k)| *k == v.key) {
            return Some((vi, *li));
        }
        if let Key::Str(s) = &v.key {
            if s.chars().count() >= MIN_INSIDE {
                let inside = arg_leaves
                    .iter()
                    .position(|(_, a)| a.as_str().is_some_and(|a| a.contains(&**s)));
                if let Some(li) = inside {
                    return Some((vi, li));
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::values::{fingerprint, introduced};
    use super::*;
    use serde_json::json;

    fn taint(args: &Value, original: Value, delivered: Value, at: Time) -> Taint {
        Taint {
            fault: "c".into(),
            kind: "corrupt",
            tool: "get_incident".into(),
            seq: 1,
            at,
            args: fingerprint(Some(args)),
            values: introduced(&original, &delivered, 16, false),
            class: Class::Pending,
            moved_on: false,
        }
    }

    #[test]
    fn a_tainted_value_in_a_later_request_is_a_propagation() {
        let cfg = TaintConfig::default();
        let mut b = Book::default();
        let args = json!({"id": "INC-1"});
        b.add(
            taint(
                &args,
                json!({"service": "payments-api"}),
                json!({"service": "billing-api"}),
                Time::ZERO,
            ),
            &cfg,
        );
        // An unrelated request is not a finding.
        let other = json!({"service": "payments-api"});
        assert!(b
            .check("restart_service", Some(&other), fingerprint(Some(&other)))
            .is_empty());
        let bad = json!({"target": {"name": "restart billing-api now"}});
        let f = b.check("restart_service", Some(&bad), fingerprint(Some(&bad)));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].class, Class::Propagated);
        assert_eq!(f[0].from_pointer.as_deref(), Some("/service"));
        assert_eq!(f[0].to_pointer.as_deref(), Some("/target/name"));
        assert!(b.is_empty(), "a propagated taint is final");
    }

    #[test]
    fn a_re_call_with_the_same_arguments_is_noticing_and_silence_is_unobserved() {
        let cfg = TaintConfig::default();
        let mut b = Book::default();
        let args = json!({"id": "INC-1"});
        let t = taint(
            &args,
            json!({"s": "alpha-1"}),
            json!({"s": "gamma-9"}),
            Time::ZERO,
        );
        b.add(t.clone(), &cfg);
        let f = b.check("get_incident", Some(&args), fingerprint(Some(&args)));
        assert_eq!((f.len(), f[0].class), (1, Class::Noticed));
        // Noticed, then acted on after all: propagated wins.
        let bad = json!({"service": "gamma-9"});
        let f = b.check("x", Some(&bad), fingerprint(Some(&bad)));
        assert_eq!((f[0].class, f[0].was), (Class::Propagated, Class::Noticed));
        b.add(t, &cfg);
        assert!(b.expire(Time::from_millis(59_000), &cfg).is_empty());
        let gone = b.expire(Time::from_millis(61_000), &cfg);
        assert_eq!(gone[0].class, Class::Unobserved);
    }

    #[test]
    fn the_same_call_after_another_tool_is_a_new_task_not_a_re_fetch() {
        let cfg = TaintConfig::default();
        let mut b = Book::default();
        let args = json!({"id": "INC-1"});
        let fp = |a: Option<&Value>| fingerprint(a);
        b.add(
            taint(
                &args,
                json!({"s": "alpha-1"}),
                json!({"s": "gamma-9"}),
                Time::ZERO,
            ),
            &cfg,
        );
        let other = json!({"q": "x"});
        let raw = other.to_string();
        assert!(b
            .check_raw("search", true, raw.as_bytes(), || Some(other.clone()), fp)
            .is_empty());
        let raw = args.to_string();
        let f = b.check_raw(
            "get_incident",
            true,
            raw.as_bytes(),
            || Some(args.clone()),
            fp,
        );
        assert!(f.is_empty(), "moved on: {f:?}");
        // A ping in between is not moving on.
        b.add(
            taint(
                &args,
                json!({"s": "alpha-1"}),
                json!({"s": "delta-4"}),
                Time::ZERO,
            ),
            &cfg,
        );
        assert!(b.check_raw("ping", false, b"{}", || None, fp).is_empty());
        let f = b.check_raw(
            "get_incident",
            true,
            raw.as_bytes(),
            || Some(args.clone()),
            fp,
        );
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].class, Class::Noticed);
    }

    #[test]
    fn the_book_is_bounded() {
        let cfg = TaintConfig {
            max_taints: 2,
            ..TaintConfig::default()
        };
        let mut b = Book::default();
        let a = json!({});
        for i in 0..5 {
            let t = taint(
                &a,
                json!({}),
                json!({"v": format!("value-{i}")}),
                Time::ZERO,
            );
            let evicted = b.add(t, &cfg);
            assert_eq!(evicted.is_some(), i >= 2);
        }
        assert_eq!(b.len(), 2);
    }
    fn propagates(b: &mut Book, raw: &str) -> bool {
        let args: Option<Value> = serde_json::from_str(raw).ok();
        let f = b.check_raw("act", true, raw.as_bytes(), || args, fingerprint);
        f.iter().any(|f| f.class == Class::Propagated)
    }

    #[test]
    fn the_prefilter_does_not_miss_other_writers_spellings() {
        let cfg = TaintConfig::default();
        let a = json!({});
        let mut b = Book::default();
        b.add(
            taint(&a, json!({}), json!({"team": "R&D-portal"}), Time::ZERO),
            &cfg,
        );
        // Go's encoding/json escapes `&`.
        assert!(propagates(&mut b, r#"{"team":"R\u0026D-portal"}"#));
        b.add(
            taint(&a, json!({}), json!({"account": 12345678}), Time::ZERO),
            &cfg,
        );
        // Jackson writes a double by Double.toString.
        assert!(propagates(&mut b, r#"{"account":1.2345678E7}"#));
        b.add(
            taint(&a, json!({}), json!({"count": 5000}), Time::ZERO),
            &cfg,
        );
        assert!(propagates(&mut b, r#"{"count":5e3}"#));
    }

    #[test]
    fn a_renamed_parameter_points_at_its_own_argument() {
        let cfg = TaintConfig::default();
        let mut b = Book::default();
        let mut t = taint(&json!({}), json!({}), json!({}), Time::ZERO);
        t.values = introduced(
            &json!({"properties": {"service": {}}}),
            &json!({"properties": {"service_v2": {}}}),
            16,
            true,
        );
        b.add(t, &cfg);
        let args = json!({"service_v2x": "payments-api", "service_v2": {}});
        let f = b.check("restart", Some(&args), fingerprint(Some(&args)));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].to_pointer.as_deref(), Some("/service_v2"));
    }
}
