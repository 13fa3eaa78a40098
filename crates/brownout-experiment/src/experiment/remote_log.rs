//! What happened to one remote relay's faults over a run ([`super::remote`]): when its
//! leases could not be put on or renewed (an outage: since its last confirmed lease, back
//! when it answered again) and which fault lapsed on it, for the journal's fleet record.

use std::time::{Duration, Instant};

/// A spell in which the relay's faults could not be put on or renewed.
#[derive(Debug, Clone)]
pub struct Outage {
    /// The relay's last confirmed lease before it (or the first attempt, if none).
    pub since: Instant,
    /// When its faults lapse by themselves, unless it was back before.
    pub lapse_by: Instant,
    /// When it confirmed a lease or a removal again (`None`: not since).
    pub back: Option<Instant>,
    pub why: String,
}

/// A fault whose lease ran out on the relay while the run held it, put back by the renewer.
#[derive(Debug, Clone)]
pub struct Lapse {
    pub fault: String,
    /// When its lease ran out (one lease after its last confirmed renewal).
    pub lapsed: Instant,
    /// When the relay took it again (`None`: it was not put back, the stage had ended).
    pub back: Option<Instant>,
}

/// What happened to one relay's faults over the run.
#[derive(Debug, Clone, Default)]
pub struct Log {
    /// When the relay last confirmed a lease of this run (a fault posted or renewed).
    pub leased: Option<Instant>,
    /// When every fault of a stage was first confirmed on this relay.
    pub first_on: Option<Instant>,
    pub outages: Vec<Outage>,
    pub lapses: Vec<Lapse>,
}

impl Log {
    /// The outage going on now, if any.
    pub fn open(&self) -> Option<&Outage> {
        self.outages.last().filter(|o| o.back.is_none())
    }

    pub(super) fn answered(&mut self, at: Instant) {
        if let Some(o) = self.outages.last_mut().filter(|o| o.back.is_none()) {
            o.back = Some(at);
        }
    }

    pub(super) fn leased(&mut self, at: Instant) {
        self.leased = Some(at);
        self.answered(at);
    }

    /// A request failed at `at`: an outage opens (unless one is open), since the last
    /// confirmed lease; the faults lapse one `lease` after it.
    pub(super) fn failed(&mut self, at: Instant, why: String, lease: Duration) {
        if self.open().is_some() {
            return;
        }
        let since = self.leased.unwrap_or(at);
        self.outages.push(Outage {
            since,
            lapse_by: since + lease,
            back: None,
            why,
        });
    }
}
