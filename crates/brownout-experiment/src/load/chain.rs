//! Chained results in live load: a task keeps the results later steps take values from
//! (`{from: TOOL, path: POINTER}` arguments, at most one per call they read, each at most
//! [`wire::MAX_KEPT`] bytes), builds those steps' arguments from them, and reads each such
//! result under the agent's policy (`client.agent.policy`, see `docs/load.md`):
//!
//! - `trust`: one read, acted on as it is;
//! - `validate`: a result that breaks the tool's `outputSchema` ([`Answer::Wrong`]) is read
//!   again once with the same arguments; wrong again, the task fails;
//! - `verify`: two reads with the same arguments, their values at the pointers later steps
//!   take compared; when they disagree a third read, and the value two reads agree on is
//!   taken; none, the task fails.
//!
//! Every read is a call of its own (tallied, reported, counted in `calls` and `attempts`), so
//! a relay on the way sees the re-reads a fault's change provoked: its taint tracking counts
//! them as `noticed`. A value a step takes that is missing at run time (its call failed and
//! was tolerated, or the result has nothing at the pointer) fails the task without making
//! the call: it is counted in the summary's `missing_values`, never sent as a null.

use super::agent::{call, Called, PreparedCall, Shared};
use super::wire::{self, Answer};
use brownout_sim::chain::Policy;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// The results a task keeps for its later steps: the latest read value of each tool whose
/// result a later step takes from.
#[derive(Default)]
pub(super) struct Values(HashMap<Arc<str>, Value>);

impl Values {
    pub(super) fn keep(&mut self, tool: &Arc<str>, v: Value) {
        self.0.insert(Arc::clone(tool), v);
    }
}

/// The call's params with its `{from, path}` arguments filled in from `values`; Err names
/// the first one missing.
pub(super) fn params<'a>(c: &'a PreparedCall, values: &Values) -> Result<Cow<'a, str>, String> {
    if c.refs.is_empty() {
        return Ok(Cow::Borrowed(&c.params));
    }
    let mut args = c.arguments.clone().unwrap_or_default();
    for r in &c.refs {
        let got = values
            .0
            .get(r.tool.as_str())
            .and_then(|v| v.pointer(&r.path));
        match got {
            Some(v) => {
                args.insert(r.arg.clone(), v.clone());
            }
            None => {
                return Err(format!(
                    "`{}` takes {}{} of `{}`'s result, which it lacks",
                    r.arg,
                    if r.path.is_empty() { "the whole" } else { "" },
                    r.path,
                    r.tool
                ))
            }
        }
    }
    Ok(Cow::Owned(wire::call_params(&c.tool, Some(&args))))
}

/// How a call ended once the policy had its reads.
pub(super) struct Read {
    pub good: bool,
    pub critical: bool,
    /// The value later steps take (for a call they take from).
    pub value: Option<Value>,
    /// The policy found no result to act on: the task fails.
    pub gave_up: bool,
}

/// Where one read goes: everything [`call`] needs but its ordinal.
pub(super) struct Target<'a> {
    pub task: u64,
    pub session: usize,
    pub intended: Instant,
    pub deadline: Option<Instant>,
    pub params: &'a str,
    /// The pointers later steps take from this call's result; None: nobody takes from it.
    pub taken: Option<&'a [String]>,
}

/// Make one workload call, with the reads the policy wants; None: the end of the run cut it
/// short.
pub(super) async fn read(
    shared: &Shared,
    c: &PreparedCall,
    t: &Target<'_>,
    ordinal: u64,
) -> Option<Read> {
    let once = |n: u64| {
        // A re-read draws its own retry jitter: ordinals of re-reads sit above the task's.
        call(
            shared,
            t.task,
            ordinal + (n << 32),
            c,
            t.session,
            t.intended,
            t.deadline,
            t.params,
            t.taken.is_some(),
        )
    };
    let first = once(0).await?;
    let Some(paths) = t.taken else {
        return Some(done(first, c));
    };
    if !first.good {
        return Some(done(first, c));
    }
    match shared.policy {
        Policy::Trust => Some(done(first, c)),
        Policy::Validate if first.answer == Answer::Wrong => {
            shared.rereads.fetch_add(1, Ordering::Relaxed);
            let second = once(1).await?;
            if second.answer == Answer::Wrong {
                return Some(give_up(shared, c));
            }
            Some(done(second, c))
        }
        Policy::Validate => Some(done(first, c)),
        Policy::Verify => {
            shared.rereads.fetch_add(1, Ordering::Relaxed);
            let second = once(1).await?;
            if !second.good || agree(&first, &second, paths) {
                return Some(done(second, c));
            }
            shared.rereads.fetch_add(1, Ordering::Relaxed);
            let third = once(2).await?;
            if !third.good || agree(&third, &first, paths) || agree(&third, &second, paths) {
                return Some(done(third, c));
            }
            Some(give_up(shared, c))
        }
    }
}

fn done(r: Called, c: &PreparedCall) -> Read {
    Read {
        good: r.good,
        critical: c.critical,
        value: r.value,
        gave_up: false,
    }
}

fn give_up(shared: &Shared, c: &PreparedCall) -> Read {
    shared.gave_up.fetch_add(1, Ordering::Relaxed);
    Read {
        good: false,
        critical: c.critical,
        value: None,
        gave_up: true,
    }
}

/// Do two reads agree on every value later steps take?
fn agree(a: &Called, b: &Called, paths: &[String]) -> bool {
    match (&a.value, &b.value) {
        (Some(x), Some(y)) => paths.iter().all(|p| x.pointer(p) == y.pointer(p)),
        (None, None) => true,
        _ => false,
    }
}
