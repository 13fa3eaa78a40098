//! [`GateWatch`]: one sliding window per gate, fed calls and tasks, evaluated on demand.

use super::grammar::{Gate, Window};
use super::measure::{Cmp, Sli};
use super::window::{
    Sample, Sliding, Totals, ALTERED, ANSWERED, CORRECT, NOTICED, OK, PROPAGATED, TIMED_OUT,
};
use super::{CallObservation, GateState, GateStatus, GateSummary, TaintMark, TaskObservation};
use crate::event::Outcome;

#[derive(Debug, Clone)]
struct Watched {
    gate: Gate,
    text: String,
    window: Sliding,
    status: GateStatus,
    since_ms: f64,
    /// When the condition started failing (for `for DURATION`).
    failing_since: Option<f64>,
    first_breach_ms: Option<f64>,
    breach_value: Option<f64>,
    worst: Option<f64>,
    breaches: u64,
    /// Nothing reached the window since the last evaluation (see [`GateWatch::tick`]).
    settled: bool,
    /// When the last evaluation was.
    stepped_ms: f64,
}

/// Which gates of a [`GateWatch`] count a call of one method and tool
/// ([`GateWatch::call_scope`]).
#[derive(Debug, Clone)]
pub struct CallScope(Box<[usize]>);

/// Watches gates over the calls and tasks it is shown. Deterministic: the same
/// observations and evaluation times give the same states.
#[derive(Debug, Clone)]
pub struct GateWatch {
    gates: Vec<Watched>,
    /// Some gate needs latency buckets.
    histogram: bool,
}

impl GateWatch {
    pub fn new(gates: Vec<Gate>) -> GateWatch {
        let histogram = gates.iter().any(|g| g.sli.needs_histogram());
        GateWatch {
            histogram,
            gates: gates
                .into_iter()
                .map(|gate| {
                    let hist = gate.sli.needs_histogram();
                    let window = match gate.window {
                        Window::Time { ms } => Sliding::time(ms, hist),
                        Window::Count { n } => Sliding::count(n, hist, gate.sli == Sli::Max),
                    };
                    Watched {
                        text: gate.to_string(),
                        gate,
                        window,
                        status: GateStatus::Insufficient,
                        since_ms: 0.0,
                        failing_since: None,
                        first_breach_ms: None,
                        breach_value: None,
                        worst: None,
                        breaches: 0,
                        settled: false,
                        stepped_ms: f64::NEG_INFINITY,
                    }
                })
                .collect(),
        }
    }

    /// The gates watched, in order.
    pub fn gates(&self) -> impl Iterator<Item = &Gate> {
        self.gates.iter().map(|w| &w.gate)
    }

    pub fn is_empty(&self) -> bool {
        self.gates.is_empty()
    }

    /// A completed call: every call gate whose scope matches counts it.
    pub fn observe_call(&mut self, c: &CallObservation) {
        let sample = call_sample(c, self.histogram);
        for w in &mut self.gates {
            if w.counts_call(&c.method, c.tool.as_deref()) {
                w.settled = false;
                w.window.push(c.at_ms, sample);
            }
        }
    }

    /// The gates that count a call of `method` on `tool`, resolved once for a driver that
    /// shows the watch many calls of a few (method, tool) pairs (the simulator's tools).
    pub fn call_scope(&self, method: &str, tool: Option<&str>) -> CallScope {
        CallScope(
            (0..self.gates.len())
                .filter(|&i| self.gates[i].counts_call(method, tool))
                .collect(),
        )
    }

    /// [`observe_call`](GateWatch::observe_call) for a call whose method and tool `scope`
    /// was resolved for (`c.method` and `c.tool` are not read again).
    pub fn observe_call_in(&mut self, scope: &CallScope, c: &CallObservation) {
        let sample = call_sample(c, self.histogram);
        for &i in scope.0.iter() {
            if let Some(w) = self.gates.get_mut(i) {
                w.settled = false;
                w.window.push(c.at_ms, sample);
            }
        }
    }

    /// A finished task: every task gate counts it.
    pub fn observe_task(&mut self, t: &TaskObservation) {
        let sample = Sample::new(if t.ok { OK } else { 0 }, 1, 0.0, false);
        for w in &mut self.gates {
            if w.gate.sli.is_task() {
                w.settled = false;
                w.window.push(t.at_ms, sample);
            }
        }
    }

    /// What became of a result a fault changed (`tool` produced it): every silent-failure
    /// gate whose scope matches counts it.
    pub fn observe_taint(&mut self, at_ms: f64, tool: Option<&str>, mark: TaintMark) {
        let flags = match mark {
            TaintMark::Altered => ALTERED,
            TaintMark::Propagated => PROPAGATED,
            TaintMark::Noticed => NOTICED,
        };
        let sample = Sample::new(flags, 1, 0.0, false);
        for w in &mut self.gates {
            if w.gate.sli.is_taint() && w.gate.scope.matches("tools/call", tool) {
                w.settled = false;
                w.window.push(at_ms, sample);
            }
        }
    }

    /// A reading of the target's health (`sli` is [`Sli::TargetRss`] in bytes or
    /// [`Sli::TargetCpu`] as a share of one core): every gate on that SLI counts it.
    pub fn observe_reading(&mut self, at_ms: f64, sli: Sli, value: f64) {
        if !value.is_finite() || value < 0.0 {
            return;
        }
        let sample = Sample::new(0, 1, value, false);
        for w in &mut self.gates {
            if w.gate.sli == sli {
                w.settled = false;
                w.window.push(at_ms, sample);
            }
        }
    }

    /// Re-evaluate every gate at `now_ms` (run clock). Returns each gate's state; `changed`
    /// marks a state transition since the last evaluation.
    pub fn evaluate(&mut self, now_ms: f64) -> Vec<GateState> {
        self.gates
            .iter_mut()
            .enumerate()
            .map(|(index, w)| w.evaluate(index, now_ms))
            .collect()
    }

    /// Re-evaluate every gate at `now_ms`, like [`evaluate`](GateWatch::evaluate), without
    /// building the states: the same transitions, for a driver that only reads
    /// [`summaries`](GateWatch::summaries) (the simulator). Returns whether any gate is
    /// breached.
    ///
    /// A gate whose window took no sample and did not slide since its last evaluation, and
    /// that is not waiting out a `for` duration, would evaluate to what it did then (same
    /// value, same worst, same state) at that time or later: it is not evaluated again.
    pub fn tick(&mut self, now_ms: f64) -> bool {
        let mut breached = false;
        for w in &mut self.gates {
            let status = if w.settled
                && w.status != GateStatus::Failing
                && now_ms >= w.stepped_ms
                && !w.window.slides_at(now_ms)
            {
                w.status
            } else {
                w.step(now_ms).status
            };
            breached |= status == GateStatus::Breached;
        }
        breached
    }

    /// Per gate: whether and when it breached, and the worst value it saw.
    pub fn summaries(&self) -> Vec<GateSummary> {
        self.gates
            .iter()
            .enumerate()
            .map(|(index, w)| GateSummary {
                index,
                gate: w.text.clone(),
                limit: w.gate.limit(),
                breached: w.first_breach_ms.is_some(),
                first_breach_ms: w.first_breach_ms,
                breach_value: w.breach_value,
                worst: w.worst,
                robustness: w.worst.map(|v| super::robustness::margin(&w.gate, v)),
                breaches: w.breaches,
                status: w.status,
            })
            .collect()
    }

    /// Robustness ρ so far: the smallest margin over every gate and every evaluation with
    /// enough samples (`None` before any); see [`super::robustness`].
    pub fn robustness(&self) -> Option<f64> {
        self.gates
            .iter()
            .filter_map(|w| w.worst.map(|v| super::robustness::margin(&w.gate, v)))
            .reduce(f64::min)
    }
}

fn call_sample(c: &CallObservation, histogram: bool) -> Sample {
    let timed_out = c.timed_out || c.outcome == Outcome::Unanswered;
    let answered =
        !timed_out && matches!(c.outcome, Outcome::Ok | Outcome::ToolError | Outcome::Error);
    let ok = !timed_out && c.outcome == Outcome::Ok;
    let mut flags = 0;
    if ok {
        flags |= OK;
    }
    if answered {
        flags |= ANSWERED;
    }
    if ok && c.correct {
        flags |= CORRECT;
    }
    if timed_out {
        flags |= TIMED_OUT;
    }
    Sample::new(flags, c.attempts.max(1), c.latency_ms, histogram)
}

/// An SLI's value from a window's counts (`None`: nothing to divide by).
pub(crate) fn value_of(sli: Sli, window: &mut Sliding) -> Option<f64> {
    let frac = |a: u64, b: u64| (b > 0).then(|| a as f64 / b as f64);
    if let Sli::Percentile(ppm) = sli {
        return window.quantile(ppm);
    }
    let t: &Totals = window.totals();
    match sli {
        Sli::ErrorRate | Sli::BlastRadius => frac(t.n - t.ok, t.n),
        Sli::TaskSuccess => frac(t.ok, t.n),
        Sli::Availability => frac(t.answered, t.n),
        Sli::Correctness => frac(t.correct, t.answered),
        Sli::Eta => {
            let a = frac(t.answered, t.n)?;
            Some(a * frac(t.correct, t.answered).unwrap_or(1.0))
        }
        Sli::Tcsr => frac(t.correct, t.n),
        Sli::Timeouts => frac(t.timed_out, t.n),
        Sli::Amplification => frac(t.attempts, t.n),
        Sli::Mean => (t.n > 0).then(|| t.latency_ns as f64 / t.n as f64 / 1e6),
        Sli::Max => window.max_ms(),
        Sli::Percentile(_) => None, // answered above
        // A propagation whose changed result has already left the window still counts
        // against the results in it (capped at 1): the window errs toward failing.
        Sli::SilentRate => taint_frac(t.propagated, t.altered),
        Sli::SafeRate => taint_frac(t.noticed, t.altered),
        Sli::Propagated => (t.n > 0).then_some(t.propagated as f64),
        // The largest reading in the window (kept as a sample's latency).
        Sli::TargetRss | Sli::TargetCpu => window.max_ms(),
    }
}

fn taint_frac(a: u64, altered: u64) -> Option<f64> {
    match (a, altered) {
        (0, 0) => None,
        (_, 0) => Some(1.0),
        _ => Some((a as f64 / altered as f64).min(1.0)),
    }
}

/// One evaluation, before it is dressed as a [`GateState`].
struct Step {
    value: Option<f64>,
    samples: u64,
    status: GateStatus,
    changed: bool,
}

impl Watched {
    /// A call gate whose scope takes `method` on `tool`.
    fn counts_call(&self, method: &str, tool: Option<&str>) -> bool {
        let sli = self.gate.sli;
        !sli.is_task()
            && !sli.is_taint()
            && !sli.is_reading()
            && self.gate.scope.matches(method, tool)
    }

    fn evaluate(&mut self, index: usize, now_ms: f64) -> GateState {
        let s = self.step(now_ms);
        GateState {
            index,
            gate: self.text.clone(),
            value: s.value,
            limit: self.gate.limit(),
            samples: s.samples,
            status: s.status,
            changed: s.changed,
            since_ms: self.since_ms,
        }
    }

    fn step(&mut self, now_ms: f64) -> Step {
        self.window.advance(now_ms);
        self.settled = true;
        self.stepped_ms = now_ms;
        let samples = self.window.totals().n;
        let value = value_of(self.gate.sli, &mut self.window);
        let limit = self.gate.limit();
        let enough = samples >= u64::from(self.gate.min_samples());
        let status = match value {
            Some(v) if enough => {
                self.worst = Some(match self.worst {
                    Some(w) if !worse(self.gate.cmp, v, w, limit) => w,
                    _ => v,
                });
                if self.gate.cmp.holds(v, limit) {
                    GateStatus::Holding
                } else {
                    let since = *self.failing_since.get_or_insert(now_ms);
                    if now_ms - since >= self.gate.sustain_ms() {
                        GateStatus::Breached
                    } else {
                        GateStatus::Failing
                    }
                }
            }
            _ => GateStatus::Insufficient,
        };
        if !matches!(status, GateStatus::Failing | GateStatus::Breached) {
            self.failing_since = None;
        }
        let changed = status != self.status;
        if changed {
            self.status = status;
            self.since_ms = now_ms;
            if status == GateStatus::Breached {
                self.breaches += 1;
                if self.first_breach_ms.is_none() {
                    self.first_breach_ms = Some(now_ms);
                    self.breach_value = value;
                }
            }
        }
        Step {
            value,
            samples,
            status,
            changed,
        }
    }
}

/// Is `v` further on the failing side than `w`?
fn worse(cmp: Cmp, v: f64, w: f64, limit: f64) -> bool {
    match cmp {
        Cmp::Lt | Cmp::Le => v > w,
        Cmp::Gt | Cmp::Ge => v < w,
        Cmp::Eq => (v - limit).abs() > (w - limit).abs(),
    }
}
