//! A run's silent-failure feed (docs/silent.md): the relay's counts of results faults changed
//! and of what the agent did with them — per tool, read from the engine in this process or
//! from a remote relay's `/status` — polled every gate tick and passed to the gates as marks
//! (`silent_rate`, `safe_rate`, `propagated`), and read at each stage's ends for the journal.

use super::loadgen::Event;
use super::phase::TICK;
use brownout_core::slo::TaintMark;
use brownout_core::stats::Silent;
use brownout_relay::relay::Relay;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Tool → counts so far.
pub type Counts = BTreeMap<String, Silent>;

/// Where a run reads the counts.
#[derive(Clone)]
pub enum Source {
    Local(Arc<Relay>),
    Remote {
        status_url: String,
        token: Option<String>,
        http: reqwest::Client,
    },
    /// A fleet's relays: their counts summed per tool (`None` when none answered).
    Many(Vec<Source>),
}

impl Source {
    /// The counts now (`None`: a remote relay did not answer).
    pub async fn read(&self) -> Option<Counts> {
        let Source::Many(each) = self else {
            return self.read_one().await;
        };
        let read = futures::future::join_all(each.iter().map(Source::read_one)).await;
        let answered: Vec<Counts> = read.into_iter().flatten().collect();
        if answered.is_empty() {
            return None;
        }
        let tools: std::collections::BTreeSet<&String> =
            answered.iter().flat_map(|c| c.keys()).collect();
        Some(
            tools
                .into_iter()
                .map(|tool| {
                    let per: Counts = answered
                        .iter()
                        .enumerate()
                        .filter_map(|(i, c)| c.get(tool).map(|s| (i.to_string(), *s)))
                        .collect();
                    (tool.clone(), total(&per))
                })
                .collect(),
        )
    }

    /// One relay's counts (`None` for [`Source::Many`]: [`Source::read`] sums those).
    async fn read_one(&self) -> Option<Counts> {
        match self {
            Source::Many(_) => None,
            Source::Local(relay) => Some(relay.with_engine(|e| e.summary().silent_tools())),
            Source::Remote {
                status_url,
                token,
                http,
            } => {
                let mut req = http.get(status_url).timeout(Duration::from_secs(2));
                if let Some(t) = token {
                    req = req.bearer_auth(t);
                }
                let v: Value = req.send().await.ok()?.json().await.ok()?;
                serde_json::from_value(v["summary"]["silent_tools"].clone()).ok()
            }
        }
    }
}

/// All tools together.
pub fn total(c: &Counts) -> Silent {
    c.values()
        .fold(Silent::default(), |a, s| Silent {
            altered: a.altered + s.altered,
            propagated: a.propagated + s.propagated,
            noticed: a.noticed + s.noticed,
            unobserved: a.unobserved + s.unobserved,
            ..Silent::default()
        })
        .rates()
}

/// The marks that took `before` to `after`, per tool.
fn marks(before: &Counts, after: &Counts) -> Vec<(String, TaintMark, u64)> {
    let mut out = Vec::new();
    for (tool, a) in after {
        let b = before.get(tool).copied().unwrap_or_default();
        for (mark, n) in [
            (TaintMark::Altered, a.altered.saturating_sub(b.altered)),
            (
                TaintMark::Propagated,
                a.propagated.saturating_sub(b.propagated),
            ),
            (TaintMark::Noticed, a.noticed.saturating_sub(b.noticed)),
        ] {
            if n > 0 {
                out.push((tool.clone(), mark, n));
            }
        }
    }
    out
}

/// Poll `source` every gate tick until the run drops the receiver or aborts the task, and
/// send what changed as [`Event::Taint`].
pub fn feed(source: Source, tx: mpsc::UnboundedSender<Event>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut seen = Counts::new();
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(now) = source.read().await else {
                continue;
            };
            for (tool, mark, n) in marks(&seen, &now) {
                if tx.send(Event::Taint { tool, mark, n }).is_err() {
                    return;
                }
            }
            seen = now;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(altered: u64, propagated: u64, noticed: u64) -> Silent {
        Silent {
            altered,
            propagated,
            noticed,
            ..Silent::default()
        }
    }

    #[test]
    fn marks_are_the_differences_per_tool() {
        let before: Counts = [("a".to_string(), s(2, 1, 0))].into();
        let after: Counts = [("a".to_string(), s(5, 1, 2)), ("b".to_string(), s(1, 1, 0))].into();
        let m = marks(&before, &after);
        assert_eq!(
            m,
            vec![
                ("a".to_string(), TaintMark::Altered, 3),
                ("a".to_string(), TaintMark::Noticed, 2),
                ("b".to_string(), TaintMark::Altered, 1),
                ("b".to_string(), TaintMark::Propagated, 1),
            ]
        );
        let t = total(&after);
        assert_eq!((t.altered, t.propagated, t.noticed), (6, 2, 2));
        assert!((t.silent_rate - 2.0 / 6.0).abs() < 1e-9);
    }
}
