//! A run's report once it has ended: the counters, the engine's injections and the gates'
//! summaries.

use super::{Sim, SimOptions};
use crate::metrics::Report;

impl Sim<'_> {
    /// The report of a run that has ended.
    pub(super) fn report(mut self, opts: &SimOptions) -> Report {
        // Carry breaker state through seconds with no change.
        let mut open = 0;
        for s in &mut self.c.series {
            if s.open_breakers == u64::MAX {
                s.open_breakers = open;
            } else {
                open = s.open_breakers;
            }
        }
        let injections = self
            .engine
            .summary()
            .report()
            .injections
            .into_iter()
            .map(|(k, v)| (k, v.count))
            .collect();
        let duration = self.now;
        let gates = self.gates.take().map(|g| g.finish(duration));
        let mut report = Report::from_counters(
            &self.c,
            self.w.name.clone(),
            opts.seed.or(self.w.seed).unwrap_or(0),
            self.engine.plan().seed,
            duration,
            injections,
            opts.keep_series,
        );
        report.gates = gates.unwrap_or_default();
        report.robustness = Report::robustness_of(&report.gates);
        report.stopped_by = self.stopped_by.take();
        report
    }
}
