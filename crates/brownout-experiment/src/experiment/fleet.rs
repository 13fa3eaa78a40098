//! A fleet of relays as one target (`target.fleet`): each relay's faults through its admin
//! API on short leases ([`super::remote`]), a stage's share of relays chosen by the seed,
//! removal on every relay at once, and the per-relay record the journal keeps.
//!
//! Which relays a stage reaches: every relay present is ranked by a seeded hash of its admin
//! address (`mix(seed ^ fnv(admin))`), and a stage at `relays: S` takes the first
//! `max(1, ⌊S × n⌋)` — never more than the share says, at least one. The rank of a relay
//! depends on the seed and its address alone, so the same seed reaches the same relays at
//! every run, and a wider stage reaches a superset of a narrower one. A DNS fleet is
//! resolved again every few seconds ([`super::fleet_dns`]): a relay that appears joins at
//! the next stage; one that disappears is recorded (and its faults, if it had any, are
//! still removed, or lapse with their lease).

pub use super::fleet_choice::{chosen, how_many};
use super::fleet_dns::Member;
use super::fleet_spec::{redact, FleetSpec};
pub use super::records::RelayRecord;
use super::records::{LapseRecord, OutageRecord};
use super::remote::{Api, Remote};
use brownout_core::rng::{hash_str, mix};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The longest a connection may take (a request's own bound is in [`super::remote`]).
const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
/// How long a stage waits for its relays to confirm their faults before it starts on
/// those that did; the others keep trying in the background (and are journaled).
const CONFIRM_WITHIN: Duration = Duration::from_millis(2500);

/// The HTTP client for a fleet's admin APIs: short bounds, no redirects (the bearer token
/// goes to the addresses listed or resolved, nowhere else), a fresh connection per request.
pub fn admin_client() -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(super::remote::POST_TIMEOUT)
        .connect_timeout(CONNECT_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        // A fresh connection per request: a pooled one the relay closed meanwhile would
        // fail a removal that could have gone through (connections are cheap next door).
        .pool_max_idle_per_host(0)
        .build()
}

/// The URLs a fleet sends load and faults to, for an allowlist (`brownout mcp`): each
/// listed relay's `url` and `admin`; a DNS fleet's name on its two ports (what it resolves
/// to is not known before the run).
pub fn urls_to_allow(f: Option<&FleetSpec>) -> Vec<String> {
    match f {
        None => Vec::new(),
        Some(FleetSpec::List(l)) => l
            .iter()
            .flat_map(|r| [r.url.clone(), r.admin.clone()])
            .collect(),
        Some(FleetSpec::Dns(d)) => vec![
            format!("{}://{}:{}{}", d.scheme(), d.dns, d.mcp_port, d.path()),
            format!("{}://{}:{}", d.scheme(), d.dns, d.admin_port),
        ],
    }
}

/// What the runner knows of one relay.
struct State {
    present: bool,
    joined: Instant,
    left: Option<Instant>,
    stages: Vec<String>,
    removed: Option<Instant>,
    /// What went wrong with it last, if anything.
    detail: Option<String>,
    /// This run's injections on it at its last good read, and when.
    counted: Option<(Instant, std::collections::BTreeMap<String, u64>)>,
}

/// One relay and its faults.
pub struct Node {
    pub member: Member,
    remote: Remote,
    state: Mutex<State>,
}

impl Node {
    fn rank(&self, seed: u64) -> u64 {
        mix(seed ^ hash_str(&self.member.admin))
    }
}

struct Shared {
    seed: u64,
    token: Option<String>,
    http: reqwest::Client,
    nodes: Mutex<Vec<Arc<Node>>>,
    run: super::lock::RunOf,
    /// The present relays' MCP URLs, sorted, as they change (the load follows them).
    urls: tokio::sync::watch::Sender<Vec<String>>,
    /// Relays that could not join (another run holds them), said once each.
    refused: Mutex<std::collections::BTreeSet<String>>,
}

impl Shared {
    fn node(&self, member: Member, now: Instant) -> Arc<Node> {
        Arc::new(Node {
            remote: Remote::new(
                Api {
                    admin: member.admin.clone(),
                    token: self.token.clone(),
                    http: self.http.clone(),
                },
                &self.run.id,
            ),
            member,
            state: Mutex::new(State {
                present: true,
                joined: now,
                left: None,
                stages: Vec::new(),
                removed: None,
                detail: None,
                counted: None,
            }),
        })
    }

    /// Take a fresh resolution: new relays join (chosen from the next stage), missing ones
    /// are marked gone.
    fn update(&self, found: &[Member], say: bool) {
        let now = Instant::now();
        let mut nodes = lock(&self.nodes);
        for n in nodes.iter() {
            let listed = found.iter().any(|m| m.admin == n.member.admin);
            let mut s = lock(&n.state);
            if s.present && !listed {
                eprintln!(
                    "brownout: relay {} left the fleet (no longer resolved)",
                    redact(&n.member.admin)
                );
                s.left = Some(now);
            } else if !s.present && listed {
                eprintln!(
                    "brownout: relay {} is back in the fleet",
                    redact(&n.member.admin)
                );
                s.left = None;
            }
            s.present = listed;
        }
        for m in found {
            if !nodes.iter().any(|n| n.member.admin == m.admin) {
                if let Some(Err(busy)) = self.run.lock.as_ref().map(|l| l.join(&m.admin)) {
                    if lock(&self.refused).insert(m.admin.clone()) {
                        eprintln!(
                            "brownout: relay {} does not join the fleet: {busy}",
                            redact(&m.admin)
                        );
                    }
                    continue;
                }
                if say {
                    eprintln!(
                        "brownout: relay {} joined the fleet (faults from the next stage)",
                        redact(&m.admin)
                    );
                }
                nodes.push(self.node(m.clone(), now));
            }
        }
        let mut urls: Vec<String> = nodes
            .iter()
            .filter(|n| lock(&n.state).present)
            .map(|n| n.member.url.clone())
            .collect();
        urls.sort();
        self.urls.send_if_modified(|was| {
            let changed = *was != urls;
            *was = urls;
            changed
        });
    }
}

/// The faults of one run on a fleet of relays.
pub struct Fleet {
    shared: Arc<Shared>,
    resolver: Option<tokio::task::JoinHandle<()>>,
    /// Whether its relays can change during the run (a DNS fleet).
    live: bool,
}

impl Drop for Fleet {
    fn drop(&mut self) {
        if let Some(h) = self.resolver.take() {
            h.abort();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn ms(origin: Instant, at: Instant) -> f64 {
    at.saturating_duration_since(origin).as_secs_f64() * 1000.0
}

/// Refuse a list naming one relay twice under two spellings (`127.0.0.1:9901` and
/// `LOCALHOST:9901/`): their admin addresses resolve to a shared socket address. (The
/// second would fail mid-run with 409, its faults already on from the first.)
async fn same_relay_twice(members: &[Member]) -> anyhow::Result<()> {
    let mut seen: Vec<(String, std::collections::BTreeSet<std::net::SocketAddr>)> = Vec::new();
    for m in members {
        let Ok(u) = reqwest::Url::parse(&m.admin) else {
            continue;
        };
        let (Some(host), Some(port)) = (u.host_str(), u.port_or_known_default()) else {
            continue;
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let Ok(addrs) = tokio::net::lookup_host((host, port)).await else {
            continue;
        };
        let addrs: std::collections::BTreeSet<_> = addrs.collect();
        if let Some((first, _)) = seen.iter().find(|(_, a)| !a.is_disjoint(&addrs)) {
            anyhow::bail!(
                "relays {} and {} are one relay (the same address): list each relay once",
                redact(first),
                redact(&m.admin)
            );
        }
        seen.push((m.admin.clone(), addrs));
    }
    Ok(())
}

impl Fleet {
    /// Find the fleet's relays and check each answers its admin API (`GET /status`); with
    /// a DNS name, keep resolving it every `every`.
    pub async fn start(
        spec: &FleetSpec,
        seed: u64,
        token: Option<String>,
        run: &super::lock::RunOf,
    ) -> anyhow::Result<Fleet> {
        let http = admin_client()?;
        let shared = Arc::new(Shared {
            seed,
            token,
            http,
            nodes: Mutex::new(Vec::new()),
            run: run.clone(),
            urls: tokio::sync::watch::Sender::new(Vec::new()),
            refused: Mutex::new(Default::default()),
        });
        let found = super::fleet_dns::members(spec).await?;
        same_relay_twice(&found).await?;
        // Each relay is locked before the run touches it (most were at the run's start; a
        // name may resolve otherwise now): one another run holds fails the start.
        if let Some(l) = &run.lock {
            for m in &found {
                l.join(&m.admin)
                    .map_err(|busy| anyhow::anyhow!("relay {}: {busy}", redact(&m.admin)))?;
            }
        }
        shared.update(&found, false);
        let nodes = lock(&shared.nodes).clone();
        let checks = nodes.iter().map(|n| async move {
            n.remote
                .api()
                .status()
                .await
                .map_err(|e| format!("relay {}: {e}", redact(&n.member.admin)))
        });
        let failed: Vec<String> = futures::future::join_all(checks)
            .await
            .into_iter()
            .filter_map(Result::err)
            .collect();
        if !failed.is_empty() {
            anyhow::bail!(
                "{} of the fleet's {} relays do not answer: {}",
                failed.len(),
                nodes.len(),
                failed.join("; ")
            );
        }
        // Another run's leftover faults lapse before this run starts (review G1).
        let settled = nodes
            .iter()
            .map(|n| super::foreign::settle(n.remote.api(), super::foreign::WAIT_AT_MOST));
        let failed: Vec<String> = futures::future::join_all(settled)
            .await
            .into_iter()
            .filter_map(|r| r.err().map(|e| e.to_string()))
            .collect();
        if !failed.is_empty() {
            anyhow::bail!("{}", failed.join("; "));
        }
        let resolver = match spec {
            FleetSpec::Dns(d) => {
                let (d, shared) = (d.clone(), Arc::clone(&shared));
                Some(tokio::spawn(async move {
                    loop {
                        tokio::time::sleep(d.every()).await;
                        match super::fleet_dns::resolve(&d).await {
                            Ok(found) => shared.update(&found, true),
                            Err(e) => eprintln!("brownout: {e}; the fleet stays as it was"),
                        }
                    }
                }))
            }
            FleetSpec::List(_) => None,
        };
        let live = resolver.is_some();
        Ok(Fleet {
            shared,
            resolver,
            live,
        })
    }

    /// With a DNS fleet: its MCP URLs as relays join and leave, for the load to follow.
    pub fn live_urls(&self) -> Option<crate::load::LiveUrls> {
        self.live
            .then(|| crate::load::LiveUrls(self.shared.urls.subscribe()))
    }

    fn nodes(&self) -> Vec<Arc<Node>> {
        lock(&self.shared.nodes).clone()
    }

    fn present(&self) -> Vec<Arc<Node>> {
        self.nodes()
            .into_iter()
            .filter(|n| lock(&n.state).present)
            .collect()
    }

    /// The MCP endpoints of the relays present, in a stable order (the load's sessions go
    /// to them round-robin).
    pub fn urls(&self) -> Vec<String> {
        let mut urls: Vec<String> = self
            .present()
            .iter()
            .map(|n| n.member.url.clone())
            .collect();
        urls.sort();
        urls
    }

    /// Put a stage's faults (`doc`) on the share `share` of the relays present, chosen by
    /// the seed; faults of an earlier stage on relays not chosen now are removed. All
    /// relays at once, each in a task of its own; this waits until each confirmed or
    /// failed, or [`CONFIRM_WITHIN`], so one slow or cut-off relay holds up neither the
    /// others nor the stage's clock. A relay that did not confirm keeps trying in the
    /// background (its renewer puts the faults on when it answers) and is journaled; the
    /// error (the stage cannot start) is for a stage none of whose chosen relays confirmed.
    pub async fn apply(&self, doc: &Value, share: f64, stage: &str) -> anyhow::Result<()> {
        let present = self.present();
        let admins: Vec<&str> = present.iter().map(|n| n.member.admin.as_str()).collect();
        let picked = chosen(self.shared.seed, share, &admins);
        let mut work = Vec::new();
        for n in self.nodes() {
            let on = picked.contains(&n.member.admin);
            if !on && !n.remote.has_faults() {
                continue;
            }
            let epoch = n.remote.begin();
            let (doc, stage, node) = (doc.clone(), stage.to_string(), Arc::clone(&n));
            let task = tokio::spawn(async move {
                let r = if on {
                    node.remote.replace_from(epoch, &doc).await
                } else {
                    node.remote.remove_all().await
                };
                let now = Instant::now();
                let mut s = lock(&node.state);
                match &r {
                    Ok(()) if on => {
                        s.removed = None;
                        s.stages.push(stage);
                    }
                    Ok(()) => s.removed = Some(now),
                    Err(e) => s.detail = Some(e.to_string()),
                }
                r
            });
            work.push((n, on, task));
        }
        let deadline = tokio::time::Instant::now() + CONFIRM_WITHIN;
        let mut confirmed = 0;
        let mut failed = Vec::new();
        for (n, on, task) in work {
            let admin = redact(&n.member.admin);
            match tokio::time::timeout_at(deadline, task).await {
                Ok(Ok(Ok(()))) => confirmed += usize::from(on),
                Ok(Ok(Err(e))) => failed.push(format!("relay {admin}: {e}")),
                Ok(Err(e)) => failed.push(format!("relay {admin}: {e}")),
                Err(_) => failed.push(format!(
                    "relay {admin}: no confirmation within {}",
                    brownout_core::human::duration(CONFIRM_WITHIN)
                )),
            }
        }
        if !picked.is_empty() && confirmed == 0 && !self.confirmed_late(&picked, stage).await {
            anyhow::bail!("{}", failed.join("; "));
        }
        for f in &failed {
            eprintln!(
                "brownout: stage `{stage}` goes on without it: {f} (journaled; its faults go on, or lapse, when it answers)"
            );
        }
        Ok(())
    }

    /// When no chosen relay confirmed in time (a busy machine: a POST can land after its
    /// answer was given up on): whether one's renewer confirms its faults within one more
    /// lease. Bounded: a fleet none of whose relays answers fails the stage then.
    async fn confirmed_late(&self, picked: &[String], stage: &str) -> bool {
        let until = Instant::now() + super::remote::LEASE;
        let nodes: Vec<Arc<Node>> = self
            .nodes()
            .into_iter()
            .filter(|n| picked.contains(&n.member.admin))
            .collect();
        while Instant::now() < until {
            let late: Vec<&Arc<Node>> = nodes.iter().filter(|n| n.remote.confirmed()).collect();
            for n in &late {
                lock(&n.state).stages.push(stage.to_string());
            }
            if !late.is_empty() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }

    /// Remove this run's faults from every relay at once, each retried until the relay
    /// confirms or its lease runs out; the error names each relay not reached and when its
    /// faults lapse. A removal cancels a renewal round in flight, and wins over a stage's
    /// replacement still on its way.
    pub async fn remove_all(&self) -> anyhow::Result<()> {
        let nodes = self.nodes();
        let work = nodes.iter().map(|n| async move {
            let had = n.remote.has_faults();
            let r = n.remote.remove_all().await;
            let now = Instant::now();
            let mut s = lock(&n.state);
            match r {
                Ok(()) => {
                    if had {
                        s.removed = Some(now);
                    }
                    Ok(())
                }
                Err(e) => {
                    s.detail = Some(e.to_string());
                    Err(format!(
                        "relay {} not reached: {e}",
                        redact(&n.member.admin)
                    ))
                }
            }
        });
        let failed: Vec<String> = futures::future::join_all(work)
            .await
            .into_iter()
            .filter_map(Result::err)
            .collect();
        if failed.is_empty() {
            Ok(())
        } else {
            anyhow::bail!("{}", failed.join("; "))
        }
    }

    /// This run's injections on every relay the run has known (present or gone), each
    /// read now; one that does not answer keeps its last reading, marked unread.
    pub async fn injections(&self) -> Vec<super::injections::Reading> {
        let nodes = self.nodes();
        let got = futures::future::join_all(nodes.iter().map(|n| n.remote.api().status())).await;
        let now = Instant::now();
        nodes
            .iter()
            .zip(got)
            .map(|(n, r)| {
                let mut s = lock(&n.state);
                let relay = redact(&n.member.admin);
                match r {
                    Ok(v) => {
                        let counts = super::injections::of_run(&v, Some(n.remote.run()));
                        s.counted = Some((now, counts.clone()));
                        super::injections::Reading {
                            relay,
                            counts,
                            unread: None,
                        }
                    }
                    Err(e) => {
                        let (at, counts) = s
                            .counted
                            .clone()
                            .map_or((None, Default::default()), |(t, c)| (Some(t), c));
                        let why = match s.left {
                            Some(_) => format!("it left the fleet and did not answer: {e}"),
                            None => format!("it did not answer: {e}"),
                        };
                        super::injections::Reading {
                            relay,
                            counts,
                            unread: Some((at, why)),
                        }
                    }
                }
            })
            .collect()
    }

    /// Every present relay's `GET /status` (those that answer).
    pub async fn statuses(&self) -> Vec<Value> {
        let present = self.present();
        let reads = present.iter().map(|n| n.remote.api().status());
        futures::future::join_all(reads)
            .await
            .into_iter()
            .filter_map(Result::ok)
            .collect()
    }

    /// Where the run reads each present relay's silent-failure counts.
    pub fn silent_sources(&self) -> Vec<super::silent::Source> {
        self.present()
            .iter()
            .map(|n| super::silent::Source::Remote {
                status_url: format!("{}/status", n.member.admin),
                token: self.shared.token.clone(),
                http: self.shared.http.clone(),
            })
            .collect()
    }

    /// The per-relay record, times from `origin` (the run's clock); URLs without their
    /// credentials.
    pub fn records(&self, origin: Instant) -> Vec<RelayRecord> {
        self.nodes()
            .iter()
            .map(|n| {
                let s = lock(&n.state);
                let log = n.remote.log();
                let open = log.open();
                RelayRecord {
                    admin: redact(&n.member.admin),
                    url: redact(&n.member.url),
                    joined_ms: ms(origin, s.joined),
                    left_ms: s.left.map(|t| ms(origin, t)),
                    stages: s.stages.clone(),
                    faults_on_ms: log.first_on.map(|t| ms(origin, t)),
                    removed_ms: s.removed.map(|t| ms(origin, t)),
                    unreachable_since_ms: open.map(|o| ms(origin, o.since)),
                    lease_lapsed_ms: open.map(|o| ms(origin, o.lapse_by)),
                    detail: s.detail.clone().or_else(|| open.map(|o| o.why.clone())),
                    outages: log
                        .outages
                        .iter()
                        .map(|o| OutageRecord {
                            since_ms: ms(origin, o.since),
                            lapse_by_ms: ms(origin, o.lapse_by),
                            back_ms: o.back.map(|t| ms(origin, t)),
                            detail: o.why.clone(),
                        })
                        .collect(),
                    lapses: log
                        .lapses
                        .iter()
                        .map(|l| LapseRecord {
                            fault: l.fault.clone(),
                            lapsed_ms: ms(origin, l.lapsed),
                            back_ms: l.back.map(|t| ms(origin, t)),
                        })
                        .collect(),
                }
            })
            .collect()
    }

    /// The relays' seeded order (for tests and `--dry-run`): admin addresses, first chosen
    /// first.
    pub fn ranked(&self) -> Vec<String> {
        let mut nodes = self.present();
        nodes.sort_by_key(|n| n.rank(self.shared.seed));
        nodes.iter().map(|n| n.member.admin.clone()).collect()
    }
}
