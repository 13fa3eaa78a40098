//! After the faults leave: their removal (timed: it is the abort latency's end) and the
//! recovery phase — from the last fault leaving to every gate holding with the last second's
//! error rate within the baseline's tolerance (MTTR).

use super::gates;
use super::journal::{Journal, RecoveryRecord, RollbackRecord, Status};
use super::load::Loaded;
use super::phase::{Collected, End, Live};
use super::rollback::ms;
use super::target::Target;
use std::time::{Duration, Instant};

/// Recovery: from the last fault leaving to every gate holding with the last second's
/// error rate within the baseline's tolerance.
pub async fn recover(
    x: &Loaded,
    j: &mut Journal,
    live: &mut Live,
    left_ms: f64,
    status: &mut Status,
) {
    let within = x.spec.recovery.as_ref().map(|r| r.within.get());
    let tol = x
        .spec
        .recovery
        .as_ref()
        .and_then(|r| r.tolerance.as_ref())
        .and_then(|t| t.fraction())
        .unwrap_or(0.01);
    let base = j.baseline.as_ref().map_or(0.0, |b| b.slis.error_rate);
    let mut c = Collected::default();
    let limit = within.unwrap_or(Duration::from_secs(30));
    let mut recovered_at = None;
    let end = live
        .phase(
            "recovery",
            limit,
            &mut c,
            false,
            |states, now_ms, err, _| {
                let ok = gates::all_hold(states) && err.is_none_or(|e| e <= base + tol);
                if ok {
                    recovered_at = Some(now_ms);
                }
                ok
            },
        )
        .await;
    let mttr_ms = recovered_at.map(|t| t - left_ms);
    j.recovery = Some(RecoveryRecord {
        faults_left_ms: left_ms,
        mttr_ms,
        within_ms: within.map(|w| w.as_secs_f64() * 1000.0),
        recovered: mttr_ms.is_some(),
    });
    if matches!(end, End::Interrupted) {
        *status = Status::Interrupted;
        j.reason = "interrupted during recovery; faults had been removed".into();
    } else if *status == Status::Completed && within.is_some() && mttr_ms.is_none() {
        *status = Status::Deviated;
        j.reason = format!(
            "not recovered within {}",
            x.spec
                .recovery
                .as_ref()
                .map_or(String::new(), |r| r.within.0.clone())
        );
    }
}

/// The removal of every fault, and when it was done.
pub struct Removal {
    pub at_ms: f64,
    pub record: RollbackRecord,
}

impl Removal {
    pub async fn now(target: &Target, origin: Instant) -> Removal {
        let start_ms = ms(origin);
        let removed = target.remove_faults().await;
        let at_ms = ms(origin);
        Removal {
            at_ms,
            record: RollbackRecord {
                action: "remove faults".into(),
                start_ms,
                end_ms: at_ms,
                ok: removed.is_ok(),
                detail: removed
                    .as_ref()
                    .err()
                    .map_or_else(|| "every fault removed".into(), ToString::to_string),
            },
        }
    }
}
