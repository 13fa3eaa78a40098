//! Faults a relay already carries when a run begins, which the run did not put there.
//!
//! A run's faults carry its run id (`<id>--brownout-run-<seed>-<run id>`), so a run never
//! meets its predecessor's faults by id: a runner killed with `-9` leaves them on the relay
//! until their lease lapses, and the next run — its lock free at once — would measure its
//! baseline under them without knowing. So before a run uses a relay it reads the relay's
//! faults:
//! - another brownout run's faults on a lease: the run waits for them to lapse (at most
//!   [`WAIT_AT_MOST`], two leases), saying so; if they are still there after that, someone
//!   renews them — another runner, not sharing this one's lock directory, is driving the
//!   relay — and the run does not start;
//! - any other fault (an operator's `faults add`, the relay's own `--plan`): the run goes
//!   on and says, on stderr, which faults its baseline and stages run beside.
//!
//! A relay whose faults cannot be read is not held against the run here: the stages deal
//! with a relay that does not answer (and journal it).

use super::fleet_spec::redact;
use super::remote::{Api, LEASE};
use brownout_core::human::clean_n;
use std::time::{Duration, Instant};

/// The longest a run waits for another run's faults to lapse: a dead runner's last lease
/// runs out within one lease; two leave room for the relay's sweep.
pub const WAIT_AT_MOST: Duration = Duration::from_millis(2 * LEASE.as_millis() as u64);

/// One fault the relay lists.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub id: String,
    /// Time left on its lease (`None`: it has none).
    pub lease_left: Option<Duration>,
}

impl Listed {
    /// Another brownout run's fault on a lease: it lapses unless that run is alive.
    fn a_runs(&self) -> bool {
        self.lease_left.is_some() && self.id.contains("--brownout-run-")
    }
}

/// The faults `GET /faults` lists.
pub async fn listed(api: &Api) -> anyhow::Result<Vec<Listed>> {
    let v = api.send(reqwest::Method::GET, "/faults", None).await?;
    let Some(faults) = v["faults"].as_array() else {
        anyhow::bail!("`GET /faults` answered no list of faults");
    };
    Ok(faults
        .iter()
        .filter_map(|f| {
            Some(Listed {
                id: f["id"].as_str()?.to_string(),
                lease_left: f["expires_in_s"]
                    .as_f64()
                    .filter(|s| s.is_finite() && *s >= 0.0)
                    .map(|s| Duration::from_secs_f64(s.min(1e9))),
            })
        })
        .collect())
}

/// Ids as a message shows them: a few, cleaned.
fn ids(faults: &[&Listed]) -> String {
    let mut shown: Vec<String> = faults
        .iter()
        .take(3)
        .map(|f| format!("`{}`", clean_n(&f.id, 120)))
        .collect();
    if faults.len() > 3 {
        shown.push(format!("and {} more", faults.len() - 3));
    }
    shown.join(", ")
}

/// Make `api`'s relay ready for a run: wait for another run's leftover faults to lapse
/// (refused when they are still renewed after `wait_at_most`), and say which other faults
/// it carries.
pub async fn settle(api: &Api, wait_at_most: Duration) -> anyhow::Result<()> {
    let relay = redact(&api.admin);
    let until = Instant::now() + wait_at_most;
    let mut said = false;
    loop {
        // A relay that does not answer this is left to the run's own handling of it (a
        // stage starts on the relays that confirm their faults, the rest are journaled).
        let now = match listed(api).await {
            Ok(now) => now,
            Err(e) => {
                eprintln!("brownout: relay {relay}: its faults could not be read ({e}): not checked for another run's");
                return Ok(());
            }
        };
        let runs: Vec<&Listed> = now.iter().filter(|f| f.a_runs()).collect();
        if runs.is_empty() {
            let others: Vec<&Listed> = now.iter().collect();
            if !others.is_empty() {
                eprintln!(
                    "brownout: relay {relay} carries {} fault(s) this run did not put there ({}): the baseline and the stages run beside them",
                    others.len(),
                    ids(&others)
                );
            }
            return Ok(());
        }
        let left = Instant::now();
        if left >= until {
            anyhow::bail!(
                "relay {relay} carries {} fault(s) of another run ({}) that are still renewed after {:.0} s: another runner (one not sharing this run's lock directory) is driving the relay; run again when it ends",
                runs.len(),
                ids(&runs),
                wait_at_most.as_secs_f64()
            );
        }
        let lapse = runs
            .iter()
            .filter_map(|f| f.lease_left)
            .max()
            .unwrap_or_default();
        if !said {
            eprintln!(
                "brownout: relay {relay} still carries {} fault(s) of another run ({}), lapsing within {:.1} s: waiting for them to go before this run starts",
                runs.len(),
                ids(&runs),
                lapse.as_secs_f64()
            );
            said = true;
        }
        let pause = (lapse + Duration::from_millis(100))
            .min(until.saturating_duration_since(left))
            .max(Duration::from_millis(50));
        tokio::time::sleep(pause).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_another_runs_leased_faults_are_waited_for() {
        let f = |id: &str, left: Option<f64>| Listed {
            id: id.into(),
            lease_left: left.map(Duration::from_secs_f64),
        };
        assert!(f("slow--brownout-run-7-20261127T080022Z_2db1350a", Some(2.0)).a_runs());
        assert!(
            !f("slow--brownout-run-7-x", None).a_runs(),
            "no lease: stays"
        );
        assert!(!f("slow", Some(2.0)).a_runs(), "an operator's --ttl fault");
        let many: Vec<Listed> = (0..5).map(|i| f(&format!("f{i}"), None)).collect();
        let refs: Vec<&Listed> = many.iter().collect();
        assert_eq!(ids(&refs), "`f0`, `f1`, `f2`, and 2 more");
    }
}
