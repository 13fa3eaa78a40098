//! [`GateWatch`]: sliding windows fed calls and tasks, one per distinct (samples, scope,
//! window) — gates that watch the same samples over the same window share it, so a call is
//! pushed once for `error_rate` and `p99` over 10 s — each gate evaluated on demand.

use super::grammar::{Gate, Window};
use super::guard::{Guard, Mark};
use super::hist::bucket;
use super::measure::{Cmp, Sli};
use super::window::{
    Sample, Sliding, Totals, ALTERED, ANSWERED, CORRECT, NOTICED, OK, PROPAGATED, TIMED_OUT,
};
use super::{CallObservation, GateState, GateStatus, GateSummary, TaintMark, TaskObservation};
use crate::event::Outcome;

/// Which samples reach a window.
#[derive(Debug, Clone, PartialEq)]
enum Domain {
    /// Calls in a scope (method, tool as written).
    Call(Option<String>, Option<String>),
    Task,
    /// What became of changed results, in a scope.
    Taint(Option<String>, Option<String>),
    /// Readings of one of the target's health SLIs.
    Reading(Sli),
}

/// A window and what feeds it.
#[derive(Debug, Clone)]
struct Feed {
    domain: Domain,
    /// Its gates' scope (the same for all of them).
    scope: super::grammar::Scope,
    window: Sliding,
    /// Bumped whenever a sample comes in or the window slides: a gate that evaluated at
    /// this version would evaluate to the same again.
    version: u64,
    /// Bumped whenever the window slid or a sample went anywhere but its newest part (so
    /// samples may have left it): see [`Guard`].
    moved: u64,
    /// The flags and latency bucket of the last sample pushed (see [`Guard`]).
    last_flags: u8,
    last_bucket: u16,
}

impl Feed {
    fn push(&mut self, at_ms: f64, sample: Sample) {
        self.version += 1;
        self.last_flags = sample.flags;
        self.last_bucket = sample.bucket;
        if !self.window.push(at_ms, sample) {
            self.moved += 1;
        }
    }
}

#[derive(Debug, Clone)]
struct Watched {
    gate: Gate,
    text: String,
    /// Its window: an index into `GateWatch::feeds`.
    feed: usize,
    status: GateStatus,
    since_ms: f64,
    /// When the condition started failing (for `for DURATION`).
    failing_since: Option<f64>,
    first_breach_ms: Option<f64>,
    breach_value: Option<f64>,
    worst: Option<f64>,
    breaches: u64,
    /// Its window's version at the last evaluation (see [`GateWatch::tick`]).
    seen: Option<u64>,
    /// When the last evaluation was.
    stepped_ms: f64,
    /// Whether (and on what) an evaluation can be skipped while the gate holds.
    guard: Option<Guard>,
    /// Where its last evaluation (or skip) left the window.
    mark: Option<Mark>,
    /// Evaluations so far (tests count the ones [`GateWatch::tick`] skips).
    #[cfg(test)]
    pub(super) steps: u64,
    /// The gate's limit, its least samples and its `for` duration, read per evaluation.
    limit: f64,
    min_samples: u64,
    sustain_ms: f64,
}

/// Which windows of a [`GateWatch`] count a call of one method and tool
/// ([`GateWatch::call_scope`]).
#[derive(Debug, Clone)]
pub struct CallScope(Box<[usize]>);

/// Watches gates over the calls and tasks it is shown. Deterministic: the same
/// observations and evaluation times give the same states.
#[derive(Debug, Clone)]
pub struct GateWatch {
    gates: Vec<Watched>,
    feeds: Vec<Feed>,
    /// Some gate needs latency buckets.
    histogram: bool,
}

impl GateWatch {
    pub fn new(gates: Vec<Gate>) -> GateWatch {
        let histogram = gates.iter().any(|g| g.sli.needs_histogram());
        let mut feeds: Vec<Feed> = Vec::new();
        let gates = gates
            .into_iter()
            .map(|gate| {
                let domain = domain_of(&gate);
                let hist = gate.sli.needs_histogram();
                let max = gate.sli == Sli::Max;
                let same = |f: &Feed| f.domain == domain && window_of(&f.window, gate.window);
                let feed = match feeds.iter().position(same) {
                    Some(i) => {
                        // A window kept for more gates keeps what any of them reads.
                        feeds[i].window.keep(hist, max);
                        i
                    }
                    None => {
                        feeds.push(Feed {
                            domain,
                            scope: gate.scope.clone(),
                            window: match gate.window {
                                Window::Time { ms } => Sliding::time(ms, hist),
                                Window::Count { n } => Sliding::count(n, hist, max),
                            },
                            version: 0,
                            moved: 0,
                            last_flags: 0,
                            last_bucket: 0,
                        });
                        feeds.len() - 1
                    }
                };
                Watched {
                    guard: Guard::of(&gate),
                    mark: None,
                    #[cfg(test)]
                    steps: 0,
                    limit: gate.limit(),
                    min_samples: u64::from(gate.min_samples()),
                    sustain_ms: gate.sustain_ms(),
                    text: gate.to_string(),
                    gate,
                    feed,
                    status: GateStatus::Insufficient,
                    since_ms: 0.0,
                    failing_since: None,
                    first_breach_ms: None,
                    breach_value: None,
                    worst: None,
                    breaches: 0,
                    seen: None,
                    stepped_ms: f64::NEG_INFINITY,
                }
            })
            .collect();
        GateWatch {
            histogram,
            gates,
            feeds,
        }
    }

    /// Each gate's evaluations so far.
    #[cfg(test)]
    pub(super) fn steps(&self) -> Vec<u64> {
        self.gates.iter().map(|w| w.steps).collect()
    }

    /// The gates watched, in order.
    pub fn gates(&self) -> impl Iterator<Item = &Gate> {
        self.gates.iter().map(|w| &w.gate)
    }

    pub fn is_empty(&self) -> bool {
        self.gates.is_empty()
    }

    /// How many windows the gates keep between them (gates on the same samples and window
    /// share one).
    pub fn windows(&self) -> usize {
        self.feeds.len()
    }

    /// A completed call: every call gate whose scope matches counts it.
    pub fn observe_call(&mut self, c: &CallObservation) {
        let sample = call_sample(c, self.histogram);
        for f in &mut self.feeds {
            if f.counts_call(&c.method, c.tool.as_deref()) {
                f.push(c.at_ms, sample);
            }
        }
    }

    /// The gates that count a call of `method` on `tool`, resolved once for a driver that
    /// shows the watch many calls of a few (method, tool) pairs (the simulator's tools).
    pub fn call_scope(&self, method: &str, tool: Option<&str>) -> CallScope {
        CallScope(
            (0..self.feeds.len())
                .filter(|&i| self.feeds[i].counts_call(method, tool))
                .collect(),
        )
    }

    /// [`observe_call`](GateWatch::observe_call) for a call whose method and tool `scope`
    /// was resolved for (`c.method` and `c.tool` are not read again).
    pub fn observe_call_in(&mut self, scope: &CallScope, c: &CallObservation) {
        let sample = call_sample(c, self.histogram);
        for &i in scope.0.iter() {
            if let Some(f) = self.feeds.get_mut(i) {
                f.push(c.at_ms, sample);
            }
        }
    }

    /// A finished task: every task gate counts it.
    pub fn observe_task(&mut self, t: &TaskObservation) {
        let sample = Sample::new(if t.ok { OK } else { 0 }, 1, 0.0, false);
        for f in &mut self.feeds {
            if f.domain == Domain::Task {
                f.push(t.at_ms, sample);
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
        for f in &mut self.feeds {
            if matches!(f.domain, Domain::Taint(..)) && f.scope.matches("tools/call", tool) {
                f.push(at_ms, sample);
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
        for f in &mut self.feeds {
            if f.domain == Domain::Reading(sli) {
                f.push(at_ms, sample);
            }
        }
    }

    /// Re-evaluate every gate at `now_ms` (run clock). Returns each gate's state; `changed`
    /// marks a state transition since the last evaluation.
    pub fn evaluate(&mut self, now_ms: f64) -> Vec<GateState> {
        let feeds = &mut self.feeds;
        self.gates
            .iter_mut()
            .enumerate()
            .map(|(index, w)| w.evaluate(index, &mut feeds[w.feed], now_ms))
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
    /// (A window another gate slid has a new version: its other gates evaluate too.) Nor is
    /// a holding or breached gate whose window took one sample that cannot make its value
    /// worse ([`Guard`]), when a breached one's value still fails its limit.
    pub fn tick(&mut self, now_ms: f64) -> bool {
        let mut breached = false;
        for w in &mut self.gates {
            let f = &mut self.feeds[w.feed];
            let status = if (w.seen == Some(f.version) && w.status != GateStatus::Failing
                || w.mark.is_some() && w.unchanged(f))
                && now_ms >= w.stepped_ms
                && !f.window.slides_at(now_ms)
            {
                w.status
            } else {
                w.step(f, now_ms).status
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
#[inline(always)]
pub(crate) fn value_of(sli: Sli, window: &mut Sliding) -> Option<f64> {
    let frac = |a: u64, b: u64| (b > 0).then(|| float(a) / float(b));
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

/// `x as f64` (the same value), through the one-instruction signed conversion below 2⁶³.
#[inline]
fn float(x: u64) -> f64 {
    if x < 1 << 63 {
        x as i64 as f64
    } else {
        x as f64
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

/// Which samples reach a gate's window.
fn domain_of(g: &Gate) -> Domain {
    let (m, t) = (g.scope.method.clone(), g.scope.tool.clone());
    match g.sli {
        sli if sli.is_task() => Domain::Task,
        sli if sli.is_taint() => Domain::Taint(m, t),
        sli if sli.is_reading() => Domain::Reading(sli),
        _ => Domain::Call(m, t),
    }
}

/// Whether `window` is a window of this length.
fn window_of(window: &Sliding, w: Window) -> bool {
    match (window, w) {
        (Sliding::Time { width_ms, .. }, Window::Time { ms }) => {
            *width_ms == ms / super::window::SLOTS as f64
        }
        (Sliding::Count { size, .. }, Window::Count { n }) => *size == n.max(1) as usize,
        _ => false,
    }
}

impl Feed {
    /// A call window whose scope takes `method` on `tool`.
    fn counts_call(&self, method: &str, tool: Option<&str>) -> bool {
        matches!(self.domain, Domain::Call(..)) && self.scope.matches(method, tool)
    }
}

impl Watched {
    /// The window has not moved and took one sample, which cannot make this gate's value
    /// worse, since its last evaluation or skip ([`Guard`]); if so, that sample is passed.
    /// Its worst value stays. A holding gate still holds; a breached one stays breached when
    /// its value still fails the limit (its `for` duration was already served, and the
    /// window holds as many samples or one more).
    #[inline]
    fn unchanged(&mut self, feed: &mut Feed) -> bool {
        let passed = match (self.guard, self.mark.as_ref()) {
            (Some(g), Some(m)) => {
                feed.moved == m.moved
                    && feed.version == m.version + 1
                    && g.passes(
                        feed.last_flags,
                        feed.last_bucket,
                        feed.window.totals().n,
                        m.bound,
                    )
            }
            _ => false,
        };
        let same = passed
            && match self.status {
                GateStatus::Holding => true,
                GateStatus::Breached => value_of(self.gate.sli, &mut feed.window)
                    .is_some_and(|v| !self.gate.cmp.holds(v, self.limit)),
                _ => false,
            };
        if let Some(m) = self.mark.as_mut().filter(|_| same) {
            m.version = feed.version;
            self.seen = Some(feed.version);
        }
        same
    }

    fn evaluate(&mut self, index: usize, feed: &mut Feed, now_ms: f64) -> GateState {
        let s = self.step(feed, now_ms);
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

    fn step(&mut self, feed: &mut Feed, now_ms: f64) -> Step {
        if feed.window.slides_at(now_ms) {
            feed.window.advance(now_ms);
            feed.version += 1;
            feed.moved += 1;
        }
        self.seen = Some(feed.version);
        self.stepped_ms = now_ms;
        #[cfg(test)]
        {
            self.steps += 1;
        }
        let samples = feed.window.totals().n;
        let value = value_of(self.gate.sli, &mut feed.window);
        if self.guard.is_some() {
            self.mark = Some(Mark {
                moved: feed.moved,
                version: feed.version,
                // A percentile is its bucket's midpoint, which lies in that bucket.
                bound: match self.guard {
                    Some(Guard::Percentile) => value.map_or(0, bucket),
                    _ => 0,
                },
            });
        }
        let limit = self.limit;
        let enough = samples >= self.min_samples;
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
                    if now_ms - since >= self.sustain_ms {
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
