//! Faults on a relay already running, through its admin API (`target.admin`, or each relay
//! of a `target.fleet`).
//!
//! Each fault goes on with a short lease ([`LEASE`]) that a task of this runner renews
//! (`PUT /faults/{id}/lease`) every [`RENEW_EVERY`]: a runner killed with `-9` leaves its
//! faults for at most one lease. A fault keeps one id for the whole run
//! (`<plan id>--brownout-run-<seed>-<run id>`), so renewals keep its state (counters, token
//! buckets, draws); two runs never share an id (one cannot renew or remove the other's),
//! and the relay draws a fault's randomness from its id without the run id
//! (`brownout_core::plan::stream_name`), so a seed replays on the same relay. The faults of one relay are posted and
//! renewed at once (one slow answer holds up no other), and a removal cancels a renewal
//! round in flight rather than wait for it. Removal keeps every id until the relay
//! confirms it gone (a 404 for a fault the relay still lists is a failure), retries until
//! the lease runs out, and says which fault stayed and for how long.
//!
//! No answer is believed unchecked: a POST must answer the posted id, a renewal and a
//! DELETE the renewed or removed one, and every answer is read up to [`MAX_ANSWER`] bytes
//! only. What happened to the relay — when its leases could not be renewed (since its last
//! confirmed lease, back when it answered again), which fault lapsed and was put back — is
//! kept in its [`Log`] for the journal.

use anyhow::anyhow;
use brownout_core::human::clean_n;
use reqwest::{Method, StatusCode};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

pub use super::fault_ids::{fault_id, id_part, own_of};
pub use super::remote_log::{Lapse, Log, Outage};

/// How long a posted fault lives without renewal.
pub const LEASE: Duration = Duration::from_secs(3);
/// How often the runner renews its faults' leases.
pub const RENEW_EVERY: Duration = Duration::from_millis(1000);
/// The pause between two attempts at removing a fault the relay did not confirm gone.
const RETRY_EVERY: Duration = Duration::from_millis(250);
/// The longest a POST may take (the relay compiles the fault), and any other admin
/// request (a renewal, a removal, a status): both well under the lease, so a slow or
/// cut-off relay is retried, or left to lapse, rather than waited for.
pub const POST_TIMEOUT: Duration = Duration::from_secs(2);
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(1);
/// The most bytes an admin answer may hold: a relay's answers are a few KiB; a bigger one
/// is not from a relay and is not read further.
pub const MAX_ANSWER: usize = 1 << 20;

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

/// An answer's body, refused past `limit` bytes (by its `Content-Length`, else while
/// reading): nothing on a fleet's address can make the runner hold more.
pub async fn read_capped(mut resp: reqwest::Response, limit: usize) -> anyhow::Result<Vec<u8>> {
    if let Some(n) = resp.content_length().filter(|n| *n > limit as u64) {
        anyhow::bail!("the answer is {n} bytes, more than the {limit} an admin API answers");
    }
    let mut out = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| anyhow!("reading the answer: {}", chain(&e)))?
    {
        if out.len() + chunk.len() > limit {
            anyhow::bail!("the answer is more than the {limit} bytes an admin API answers");
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// An answer shown in a message: its start, control characters escaped.
fn shown(text: &str) -> String {
    clean_n(text.trim(), 200)
}

impl Api {
    /// A request; the status and the body as JSON (`Null` when it is not JSON).
    async fn raw(
        &self,
        method: Method,
        path: &str,
        body: Option<String>,
    ) -> anyhow::Result<(StatusCode, Value, String)> {
        let within = if method == Method::POST {
            POST_TIMEOUT
        } else {
            REQUEST_TIMEOUT
        };
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.admin))
            .timeout(within);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.header("Content-Type", "application/json").body(b);
        }
        let admin = super::fleet_spec::redact(&self.admin);
        let resp = req.send().await.map_err(|e| {
            anyhow!(
                "the relay's admin API at {admin}: {}",
                chain(&e.without_url())
            )
        })?;
        let status = resp.status();
        let bytes = read_capped(resp, MAX_ANSWER)
            .await
            .map_err(|e| anyhow!("the relay's admin API at {admin}: {e}"))?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
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
            anyhow::bail!("the relay's admin API answered {status}: {}", shown(&text));
        }
        Ok(v)
    }

    /// The relay's `GET /status`, which must be a relay's: a JSON object.
    pub async fn status(&self) -> anyhow::Result<Value> {
        let v = self.send(Method::GET, "/status", None).await?;
        if !v.is_object() {
            anyhow::bail!(
                "`GET /status` answered something that is not a relay's status (not a JSON object)"
            );
        }
        Ok(v)
    }

    /// Whether the relay lists a fault with this id.
    async fn lists(&self, id: &str) -> anyhow::Result<bool> {
        let v = self.send(Method::GET, "/faults", None).await?;
        let Some(faults) = v["faults"].as_array() else {
            anyhow::bail!("`GET /faults` answered no list of faults");
        };
        Ok(faults.iter().any(|f| f["id"].as_str() == Some(id)))
    }

    /// Delete one fault; `Ok` only when the relay confirms it is gone (`Ok(false)`: it was
    /// gone already, its lease lapsed).
    async fn delete(&self, id: &str) -> anyhow::Result<bool> {
        let path = format!("/faults/{}", encode_segment(id));
        let (status, v, text) = self.raw(Method::DELETE, &path, None).await?;
        if status.is_success() {
            if v["removed"].as_str() == Some(id) {
                return Ok(true);
            }
            anyhow::bail!(
                "DELETE answered {status} without naming the fault: {}",
                shown(&text)
            );
        }
        if status == StatusCode::NOT_FOUND {
            // Gone already (its lease lapsed) only if the relay no longer lists it.
            return match self.lists(id).await? {
                false => Ok(false),
                true => Err(anyhow!(
                    "DELETE answered 404 but the relay still lists the fault"
                )),
            };
        }
        anyhow::bail!("DELETE answered {status}: {}", shown(&text))
    }

    /// Post one fault; `Ok` only when the relay's answer names it.
    async fn post(&self, id: &str, spec: &Value) -> anyhow::Result<()> {
        let path = format!("/faults?ttl={}ms", LEASE.as_millis());
        let v = self
            .send(Method::POST, &path, Some(spec.to_string()))
            .await?;
        if v["id"].as_str() != Some(id) {
            anyhow::bail!(
                "the relay's answer to posting `{id}` does not name it: {}",
                shown(&v.to_string())
            );
        }
        Ok(())
    }

    /// Renew one lease; `Ok(false)` when the lease lapsed (410) or the relay has no such
    /// fault (404).
    async fn renew(&self, id: &str) -> anyhow::Result<bool> {
        let path = format!(
            "/faults/{}/lease?ttl={}ms",
            encode_segment(id),
            LEASE.as_millis()
        );
        let (status, v, text) = self.raw(Method::PUT, &path, None).await?;
        match status {
            s if s.is_success() && v["id"].as_str() == Some(id) => Ok(true),
            s if s.is_success() => anyhow::bail!(
                "renewing the lease answered {s} without naming the fault: {}",
                shown(&text)
            ),
            // 410: the relay says the lease lapsed (before or after its sweep removed the
            // fault); 404: a relay that does not say so (older, or one restarted).
            StatusCode::NOT_FOUND | StatusCode::GONE => Ok(false),
            s => anyhow::bail!("renewing the lease answered {s}: {}", shown(&text)),
        }
    }
}

/// A fault this runner put on the relay (or tried to: a POST that got no answer may have
/// landed, so its id is kept for removal).
#[derive(Clone)]
struct Posted {
    id: String,
    spec: Value,
    /// When the relay last confirmed its lease (`None`: never confirmed on).
    leased: Option<Instant>,
}

struct Shared {
    api: Api,
    /// The run's id as it goes into fault ids (`[A-Za-z0-9._]` only).
    run: String,
    /// Posted and not yet confirmed removed.
    posted: Mutex<Vec<Posted>>,
    /// Whether the renewer keeps the leases (false from the start of a removal).
    renewing: AtomicBool,
    /// Cancelled when a removal starts: a renewal round in flight stops at once.
    stop: Mutex<CancellationToken>,
    /// Bumped by every [`Remote::begin`] and removal: a replacement begun before a later
    /// removal does nothing.
    epoch: AtomicU64,
    /// One renewal round, replacement or removal at a time: a removal never races a re-post.
    round: tokio::sync::Mutex<()>,
    log: Mutex<Log>,
}

/// The faults of one run on a remote relay.
pub struct Remote {
    shared: Arc<Shared>,
    renewer: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Remote {
    pub fn new(api: Api, run: &str) -> Remote {
        Remote {
            shared: Arc::new(Shared {
                api,
                run: id_part(run),
                posted: Mutex::new(Vec::new()),
                renewing: AtomicBool::new(false),
                stop: Mutex::new(CancellationToken::new()),
                epoch: AtomicU64::new(0),
                round: tokio::sync::Mutex::new(()),
                log: Mutex::new(Log::default()),
            }),
            renewer: Mutex::new(None),
        }
    }

    pub fn api(&self) -> &Api {
        &self.shared.api
    }

    /// The run id as this run's fault ids carry it.
    pub fn run(&self) -> &str {
        &self.shared.run
    }

    /// What happened to this relay's faults so far.
    pub fn log(&self) -> Log {
        lock(&self.shared.log).clone()
    }

    /// Whether every fault posted is confirmed on (a lease of each confirmed).
    pub fn confirmed(&self) -> bool {
        let posted = lock(&self.shared.posted);
        !posted.is_empty() && posted.iter().all(|p| p.leased.is_some())
    }

    /// Whether faults of this runner are on the relay, not yet confirmed removed.
    pub fn has_faults(&self) -> bool {
        !lock(&self.shared.posted).is_empty()
    }

    /// Mark the start of a replacement, for [`Remote::replace_from`]: a removal asked after
    /// this call wins over it, whenever the replacement runs.
    pub fn begin(&self) -> u64 {
        self.shared.epoch.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Replace the posted faults with `doc`'s: each under the run's id for it, with a lease.
    pub async fn replace(&self, doc: &Value) -> anyhow::Result<()> {
        let epoch = self.begin();
        self.replace_from(epoch, doc).await
    }

    /// [`Remote::replace`] begun at `epoch`: nothing happens if a removal came since.
    /// Every fault is posted at once; one the relay did not confirm is an error, and its id
    /// stays (to be removed, or put on by the renewer when the relay answers again).
    pub async fn replace_from(&self, epoch: u64, doc: &Value) -> anyhow::Result<()> {
        let _round = self.shared.round.lock().await;
        if self.shared.epoch.load(Ordering::SeqCst) != epoch {
            return Ok(());
        }
        if self.has_faults() {
            self.shared.renewing.store(false, Ordering::SeqCst);
            self.remove_locked().await?;
        }
        *lock(&self.shared.stop) = CancellationToken::new();
        let seed = doc["seed"].as_u64().unwrap_or(0);
        let mut fresh: Vec<Posted> = Vec::new();
        for (i, f) in doc["faults"].as_array().into_iter().flatten().enumerate() {
            let mut spec = f.clone();
            let own = f["id"]
                .as_str()
                .map_or_else(|| format!("fault-{i}"), str::to_string);
            let id = fault_id(&own, seed, &self.shared.run);
            spec["id"] = Value::String(id.clone());
            fresh.push(Posted {
                id,
                spec,
                leased: None,
            });
        }
        let api = &self.shared.api;
        let answers =
            futures::future::join_all(fresh.iter().map(|p| api.post(&p.id, &p.spec))).await;
        let now = Instant::now();
        let mut failed = Vec::new();
        for (p, r) in fresh.iter_mut().zip(answers) {
            match r {
                Ok(()) => p.leased = Some(now),
                Err(e) => failed.push(format!("`{}`: {e}", p.id)),
            }
        }
        lock(&self.shared.posted).extend(fresh);
        {
            let mut log = lock(&self.shared.log);
            if failed.is_empty() {
                log.leased(now);
                log.first_on.get_or_insert(now);
            } else {
                log.failed(now, failed.join("; "), LEASE);
            }
        }
        self.shared.renewing.store(true, Ordering::SeqCst);
        let mut renewer = lock(&self.renewer);
        if renewer.is_none() {
            *renewer = Some(tokio::spawn(renew_loop(Arc::clone(&self.shared))));
        }
        if failed.is_empty() {
            Ok(())
        } else {
            anyhow::bail!("not confirmed on: {}", failed.join("; "))
        }
    }

    /// Remove every posted fault: stop renewing (a round in flight is cancelled), then
    /// delete each until the relay confirms it gone, retrying until the last lease runs
    /// out. The error names each fault that stayed and for how long.
    pub async fn remove_all(&self) -> anyhow::Result<()> {
        self.shared.epoch.fetch_add(1, Ordering::SeqCst);
        self.shared.renewing.store(false, Ordering::SeqCst);
        lock(&self.shared.stop).cancel();
        let _round = self.shared.round.lock().await;
        self.shared.renewing.store(false, Ordering::SeqCst);
        self.remove_locked().await
    }

    async fn remove_locked(&self) -> anyhow::Result<()> {
        if !self.has_faults() {
            return Ok(());
        }
        let start = Instant::now();
        let lapse_at = lock(&self.shared.posted)
            .iter()
            .filter_map(|p| p.leased)
            .max()
            .map_or(start, |t| t + LEASE);
        let mut failures: Vec<(String, String)> = Vec::new();
        loop {
            let pending: Vec<String> = lock(&self.shared.posted)
                .iter()
                .map(|p| p.id.clone())
                .collect();
            let api = &self.shared.api;
            let answers = futures::future::join_all(pending.iter().map(|id| api.delete(id))).await;
            failures.clear();
            let now = Instant::now();
            for (id, r) in pending.into_iter().zip(answers) {
                match r {
                    Ok(present) => {
                        let mut posted = lock(&self.shared.posted);
                        let last = posted.iter().find(|p| p.id == id).and_then(|p| p.leased);
                        // Gone before its removal, one lease after its last renewal: it
                        // lapsed while the run held it.
                        if let Some(last) = last.filter(|l| !present && *l + LEASE <= now) {
                            lock(&self.shared.log).lapses.push(Lapse {
                                fault: id.clone(),
                                lapsed: last + LEASE,
                                back: None,
                            });
                        }
                        posted.retain(|p| p.id != id);
                    }
                    Err(e) => failures.push((id, e.to_string())),
                }
            }
            if failures.is_empty() || Instant::now() + RETRY_EVERY >= lapse_at {
                break;
            }
            tokio::time::sleep(RETRY_EVERY).await;
        }
        let now = Instant::now();
        if failures.is_empty() {
            lock(&self.shared.log).answered(now);
            return Ok(());
        }
        // Past its lease the relay drops it by itself (unless it is broken): the ids stay
        // listed here, so a later removal checks them again and never reports a removal it
        // did not see; the journal says which stayed and until when.
        let left = lapse_at.saturating_duration_since(now);
        let each: Vec<String> = failures
            .iter()
            .map(|(id, why)| format!("`{id}` ({why})"))
            .collect();
        let lapse = if left.is_zero() {
            "each lapses there one lease after the relay last took it, if it is alive".to_string()
        } else {
            format!(
                "each stays on the relay until its lease lapses ({} from now), if the relay is alive",
                brownout_core::human::duration(left)
            )
        };
        let text = format!("not confirmed removed: {}; {lapse}", each.join(", "));
        lock(&self.shared.log).failed(now, text.clone(), LEASE);
        anyhow::bail!("{text}")
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

/// Renew every posted fault's lease each [`RENEW_EVERY`], while renewing is on; a removal
/// cancels the round in flight.
async fn renew_loop(shared: Arc<Shared>) {
    let mut tick = tokio::time::interval(RENEW_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if !shared.renewing.load(Ordering::SeqCst) {
            continue;
        }
        let stop = lock(&shared.stop).clone();
        let _round = tokio::select! {
            g = shared.round.lock() => g,
            _ = stop.cancelled() => continue,
        };
        if !shared.renewing.load(Ordering::SeqCst) || stop.is_cancelled() {
            continue;
        }
        tokio::select! {
            _ = stop.cancelled() => {}
            _ = renew_round(&shared) => {}
        }
    }
}

/// What one renewal did.
enum Renewal {
    Renewed,
    /// The relay had no such fault and took it again: it had lapsed (or never went on).
    PutBack,
    Failed(String),
}

/// Renew every posted fault at once. A fault the relay no longer has (its lease lapsed
/// while the relay or this runner stalled) is posted again under the same id, and the
/// lapse is logged.
async fn renew_round(shared: &Shared) {
    let posted: Vec<Posted> = lock(&shared.posted).clone();
    let api = &shared.api;
    let work = posted.iter().map(|p| async move {
        match api.renew(&p.id).await {
            Ok(true) => Renewal::Renewed,
            Ok(false) => match api.post(&p.id, &p.spec).await {
                Ok(()) => Renewal::PutBack,
                Err(e) => {
                    Renewal::Failed(format!("`{}` lapsed and could not be put back: {e}", p.id))
                }
            },
            Err(e) => Renewal::Failed(format!("cannot renew the lease of `{}`: {e}", p.id)),
        }
    });
    let done = futures::future::join_all(work).await;
    let now = Instant::now();
    let mut log = lock(&shared.log);
    let mut list = lock(&shared.posted);
    let mut failed = Vec::new();
    for (p, r) in posted.iter().zip(done) {
        let Some(mine) = list.iter_mut().find(|q| q.id == p.id) else {
            continue;
        };
        match r {
            Renewal::Renewed => mine.leased = Some(now),
            Renewal::PutBack => {
                if let Some(last) = mine.leased {
                    eprintln!(
                        "brownout: fault `{}` had lapsed on {}; put back",
                        p.id,
                        super::fleet_spec::redact(&api.admin)
                    );
                    log.lapses.push(Lapse {
                        fault: p.id.clone(),
                        lapsed: last + LEASE,
                        back: Some(now),
                    });
                }
                mine.leased = Some(now);
            }
            Renewal::Failed(why) => failed.push(why),
        }
    }
    if list.iter().all(|p| p.leased.is_some()) && !list.is_empty() {
        log.first_on.get_or_insert(now);
    }
    if failed.len() < posted.len() {
        log.leased(now);
    }
    if !failed.is_empty() {
        if log.open().is_none() {
            eprintln!(
                "brownout: relay {}: {}",
                super::fleet_spec::redact(&api.admin),
                failed.join("; ")
            );
        }
        log.failed(now, failed.join("; "), LEASE);
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
