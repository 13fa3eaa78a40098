//! Faults on a relay already running, through its admin API (`target.admin`).
//!
//! Each fault goes on with a short lease ([`LEASE`]) that a task of this runner renews
//! (`PUT /faults/{id}/lease`) every [`RENEW_EVERY`]: a runner killed with `-9` leaves its
//! faults for at most one lease. A fault keeps one id for the whole run
//! (`<plan id>--brownout-run-<seed>`), so renewals keep its state (counters, token buckets,
//! draws) and a seed replays on the same relay. Removal keeps every id until the relay
//! confirms it gone (a 404 for a fault the relay still lists is a failure), retries until
//! the lease runs out, and says which fault stayed and until when.

use anyhow::anyhow;
use reqwest::{Method, StatusCode};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a posted fault lives without renewal.
pub const LEASE: Duration = Duration::from_secs(3);
/// How often the runner renews its faults' leases.
pub const RENEW_EVERY: Duration = Duration::from_millis(1000);
/// The pause between two attempts at removing a fault the relay did not confirm gone.
const RETRY_EVERY: Duration = Duration::from_millis(250);

/// The admin API of one relay.
#[derive(Clone)]
pub struct Api {
    pub admin: String,
    pub token: Option<String>,
    pub http: reqwest::Client,
}

/// One path segment, percent-encoded: every byte but the unreserved ones (`A-Z a-z 0-9
/// - . _ ~`), so an id holding `/`, `?`, `#` or `%` names that fault and nothing else.
pub fn encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl Api {
    /// A request; the status and the body as JSON (`Null` when it is not JSON).
    async fn raw(
        &self,
        method: Method,
        path: &str,
        body: Option<String>,
    ) -> anyhow::Result<(StatusCode, Value, String)> {
        let mut req = self.http.request(method, format!("{}{path}", self.admin));
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.header("Content-Type", "application/json").body(b);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| anyhow!("the relay's admin API at {}: {}", self.admin, chain(&e)))?;
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
        let v = serde_json::from_str(&text).unwrap_or(Value::Null);
        Ok((status, v, text))
    }

    /// A request that must succeed.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<String>,
    ) -> anyhow::Result<Value> {
        let (status, v, text) = self.raw(method, path, body).await?;
        if !status.is_success() {
            anyhow::bail!("the relay's admin API answered {status}: {text}");
        }
        Ok(v)
    }

    /// Whether the relay lists a fault with this id.
    async fn lists(&self, id: &str) -> anyhow::Result<bool> {
        let v = self.send(Method::GET, "/faults", None).await?;
        Ok(v["faults"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|f| f["id"].as_str() == Some(id)))
    }

    /// Delete one fault; `Ok` only when the relay confirms it is gone.
    async fn delete(&self, id: &str) -> anyhow::Result<()> {
        let path = format!("/faults/{}", encode_segment(id));
        let (status, _, text) = self.raw(Method::DELETE, &path, None).await?;
        if status.is_success() {
            return Ok(());
        }
        if status == StatusCode::NOT_FOUND {
            // Gone already (its lease lapsed) only if the relay no longer lists it.
            return match self.lists(id).await? {
                false => Ok(()),
                true => Err(anyhow!(
                    "DELETE answered 404 but the relay still lists the fault"
                )),
            };
        }
        anyhow::bail!("DELETE answered {status}: {}", text.trim())
    }

    async fn post(&self, spec: &Value) -> anyhow::Result<()> {
        let path = format!("/faults?ttl={}ms", LEASE.as_millis());
        self.send(Method::POST, &path, Some(spec.to_string()))
            .await
            .map(|_| ())
    }

    /// Renew one lease; `Ok(false)` when the relay has no such fault (it lapsed).
    async fn renew(&self, id: &str) -> anyhow::Result<bool> {
        let path = format!(
            "/faults/{}/lease?ttl={}ms",
            encode_segment(id),
            LEASE.as_millis()
        );
        let (status, _, text) = self.raw(Method::PUT, &path, None).await?;
        match status {
            s if s.is_success() => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            s => anyhow::bail!("renewing the lease answered {s}: {}", text.trim()),
        }
    }
}

/// A fault this runner put on the relay.
#[derive(Clone)]
struct Posted {
    id: String,
    spec: Value,
}

struct Shared {
    api: Api,
    /// Posted and not yet confirmed removed.
    posted: Mutex<Vec<Posted>>,
    /// Whether the renewer keeps the leases (false from the start of a removal).
    renewing: AtomicBool,
    /// When every posted fault last had its lease renewed (or was posted).
    renewed_at: Mutex<Instant>,
    /// One renewal round or one removal at a time: a removal never races a re-post.
    round: tokio::sync::Mutex<()>,
}

/// The faults of one run on a remote relay.
pub struct Remote {
    shared: Arc<Shared>,
    renewer: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Remote {
    pub fn new(api: Api) -> Remote {
        Remote {
            shared: Arc::new(Shared {
                api,
                posted: Mutex::new(Vec::new()),
                renewing: AtomicBool::new(false),
                renewed_at: Mutex::new(Instant::now()),
                round: tokio::sync::Mutex::new(()),
            }),
            renewer: Mutex::new(None),
        }
    }

    pub fn api(&self) -> &Api {
        &self.shared.api
    }

    /// When every posted fault last had its lease renewed (or was posted): the relay's
    /// last sign of life, and its faults lapse one [`LEASE`] after it.
    pub fn renewed_at(&self) -> Instant {
        *lock(&self.shared.renewed_at)
    }

    /// Whether faults of this runner are on the relay, not yet confirmed removed.
    pub fn has_faults(&self) -> bool {
        !lock(&self.shared.posted).is_empty()
    }

    /// Replace the posted faults with `doc`'s: each under the run's id for it, with a lease.
    pub async fn replace(&self, doc: &Value) -> anyhow::Result<()> {
        self.remove_all().await?;
        let _round = self.shared.round.lock().await;
        let seed = doc["seed"].as_u64().unwrap_or(0);
        for (i, f) in doc["faults"].as_array().into_iter().flatten().enumerate() {
            let mut spec = f.clone();
            let own = f["id"]
                .as_str()
                .map_or_else(|| format!("fault-{i}"), str::to_string);
            let id = format!("{own}--brownout-run-{seed}");
            spec["id"] = Value::String(id.clone());
            self.shared.api.post(&spec).await?;
            lock(&self.shared.posted).push(Posted { id, spec });
        }
        *lock(&self.shared.renewed_at) = Instant::now();
        self.shared.renewing.store(true, Ordering::SeqCst);
        let mut renewer = lock(&self.renewer);
        if renewer.is_none() {
            *renewer = Some(tokio::spawn(renew_loop(Arc::clone(&self.shared))));
        }
        Ok(())
    }

    /// Remove every posted fault: stop renewing, then delete each until the relay confirms
    /// it gone, retrying until the last lease runs out. The error names each fault that
    /// stayed and until when.
    pub async fn remove_all(&self) -> anyhow::Result<()> {
        let _round = self.shared.round.lock().await;
        self.shared.renewing.store(false, Ordering::SeqCst);
        let lapse_at = *lock(&self.shared.renewed_at) + LEASE;
        let mut failures: Vec<(String, String)> = Vec::new();
        loop {
            let pending: Vec<String> = lock(&self.shared.posted)
                .iter()
                .map(|p| p.id.clone())
                .collect();
            failures.clear();
            for id in pending {
                match self.shared.api.delete(&id).await {
                    Ok(()) => lock(&self.shared.posted).retain(|p| p.id != id),
                    Err(e) => failures.push((id, e.to_string())),
                }
            }
            if failures.is_empty() || Instant::now() + RETRY_EVERY >= lapse_at {
                break;
            }
            tokio::time::sleep(RETRY_EVERY).await;
        }
        if failures.is_empty() {
            return Ok(());
        }
        // Past its lease the relay drops it by itself (unless it is broken): the ids stay
        // listed here, so a later removal checks them again and never reports a removal it
        // did not see; the journal says which stayed and until when.
        let left = lapse_at.saturating_duration_since(Instant::now());
        let until = super::clock::unix_ms() + left.as_millis() as u64;
        let each: Vec<String> = failures
            .iter()
            .map(|(id, why)| format!("`{id}` ({why})"))
            .collect();
        anyhow::bail!(
            "not confirmed removed: {}; each stays on the relay until its lease lapses, by unix ms {until} ({} from now), if the relay is alive",
            each.join(", "),
            brownout_core::human::duration(left)
        )
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        if let Some(h) = lock(&self.renewer).take() {
            h.abort();
        }
    }
}

/// An error with its causes (`error sending request: … : operation timed out`).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text = format!("{text}: {s}");
        source = s.source();
    }
    text
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Renew every posted fault's lease each [`RENEW_EVERY`], while renewing is on. A fault the
/// relay no longer has (its lease lapsed while this runner stalled) is posted again under
/// the same id.
async fn renew_loop(shared: Arc<Shared>) {
    let mut tick = tokio::time::interval(RENEW_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let _round = shared.round.lock().await;
        if !shared.renewing.load(Ordering::SeqCst) {
            continue;
        }
        let posted: Vec<Posted> = lock(&shared.posted).clone();
        let mut any = false;
        for p in posted {
            let renewed = match shared.api.renew(&p.id).await {
                Ok(true) => true,
                Ok(false) => {
                    eprintln!(
                        "brownout: fault `{}` had lapsed on the relay; putting it back",
                        p.id
                    );
                    shared.api.post(&p.spec).await.is_ok()
                }
                Err(e) => {
                    eprintln!("brownout: cannot renew the lease of `{}`: {e}", p.id);
                    false
                }
            };
            any |= renewed;
        }
        if any {
            *lock(&shared.renewed_at) = Instant::now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::encode_segment;

    #[test]
    fn ids_are_one_path_segment() {
        assert_eq!(encode_segment("slow-search_1.x~"), "slow-search_1.x~");
        assert_eq!(encode_segment("a/b?c#d%e f"), "a%2Fb%3Fc%23d%25e%20f");
        assert_eq!(encode_segment("é"), "%C3%A9");
    }
}
