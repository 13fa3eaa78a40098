//! Where an experiment's load and faults go. For `command` and `url` targets the runner
//! starts brownout's HTTP relay in this process (127.0.0.1, a free port) in front of the
//! server, so removing the faults is a direct change of the engine's plan. For `url` with
//! `admin` (a relay already running) faults go through its admin API with a short lease
//! that the runner renews while it lives ([`super::remote`]), so a runner killed with -9
//! leaves nothing behind for more than a few seconds.

use super::load::Loaded;
use super::program::program_path;
use super::remote::{Api, Remote};
use brownout_core::Plan;
use brownout_relay::otlp::Otlp;
use brownout_relay::relay::child::ChildSpec;
use brownout_relay::relay::child_back::ChildBack;
use brownout_relay::relay::http_back::Upstream;
use brownout_relay::relay::http_front::{self, Front, FrontOptions, Running};
use brownout_relay::relay::url_back::UrlBack;
use brownout_relay::relay::{Relay, RelayOptions};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// A target the runner drives.
pub struct Target {
    /// Where the load goes (the relay's MCP endpoint; with several servers, the first's).
    pub url: String,
    pub kind: &'static str,
    /// Where the load and the probes go, server by server (see [`super::servers`]).
    pub endpoints: super::servers::Endpoints,
    faults: Faults,
    local: Option<Local>,
    /// A remote relay's last reading of this run's injections, and when.
    remote_last: std::sync::Mutex<Option<(std::time::Instant, BTreeMap<String, u64>)>>,
}

/// The in-process relay's fronts (one per server); stopping them stops the backs' server
/// processes too.
struct Local {
    running: Vec<Running>,
}

enum Faults {
    Local(Arc<Relay>),
    Remote(Remote),
    Fleet(super::fleet::Fleet),
}

pub use super::lock::RunOf;

/// The admin API's token, from the variable `admin_token_env` names.
fn admin_token(t: &super::spec::Target) -> anyhow::Result<Option<String>> {
    match &t.admin_token_env {
        Some(var) => Ok(Some(std::env::var(var).map_err(|_| {
            anyhow::anyhow!("the admin token's variable `{var}` is not set")
        })?)),
        None => Ok(None),
    }
}

impl Target {
    /// Resolve the target: start the in-process relay, or reach the remote one's admin API.
    /// Reach the experiment's target (starting its servers and relay when it names
    /// commands); with `otlp`, an in-process relay exports a span per relayed call.
    pub async fn start(x: &Loaded, otlp: Option<&Otlp>, run: &RunOf) -> anyhow::Result<Target> {
        let t = &x.spec.target;
        if let Some(servers) = &t.servers {
            let started = super::servers::start(x, servers, otlp).await?;
            let endpoints = match super::servers::endpoints(&started.servers).await {
                Ok(e) => e,
                Err(e) => {
                    for r in started.running {
                        let _ = r.stop().await;
                    }
                    return Err(e);
                }
            };
            return Ok(Target {
                url: endpoints.url.clone(),
                kind: "servers",
                endpoints,
                faults: Faults::Local(started.relay),
                local: Some(Local {
                    running: started.running,
                }),
                remote_last: Default::default(),
            });
        }
        if let Some(f) = &t.fleet {
            let fleet = super::fleet::Fleet::start(f, x.plan.seed, admin_token(t)?, run).await?;
            let mut endpoints = super::servers::Endpoints::fleet(fleet.urls());
            endpoints.fleet_live = fleet.live_urls();
            return Ok(Target {
                url: endpoints.url.clone(),
                kind: "fleet",
                endpoints,
                faults: Faults::Fleet(fleet),
                local: None,
                remote_last: Default::default(),
            });
        }
        if let (Some(url), Some(admin)) = (&t.url, &t.admin) {
            let token = admin_token(t)?;
            let remote = Remote::new(
                Api {
                    admin: admin.trim_end_matches('/').to_string(),
                    token,
                    http: reqwest::Client::builder()
                        .timeout(Duration::from_secs(5))
                        .build()?,
                },
                &run.id,
            );
            remote
                .api()
                .send(reqwest::Method::GET, "/status", None)
                .await?;
            super::foreign::settle(remote.api(), super::foreign::WAIT_AT_MOST).await?;
            return Ok(Target {
                url: url.clone(),
                kind: "remote",
                endpoints: super::servers::Endpoints::one(url),
                faults: Faults::Remote(remote),
                local: None,
                remote_last: Default::default(),
            });
        }
        let driver = x.driver().unwrap_or_else(http_front::driver::<UrlBack>);
        let opts = RelayOptions {
            idle_session_ttl: Some(Duration::from_secs(60)),
            driver,
            otlp: otlp.cloned(),
            ..RelayOptions::default()
        };
        let relay = Arc::new(Relay::new(Plan::empty(), &opts, None));
        let max_body = FrontOptions::default().max_body;
        let listen: std::net::SocketAddr = ([127, 0, 0, 1], 0).into();
        let listener = tokio::net::TcpListener::bind(listen).await?;
        let bound = listener.local_addr()?;
        let (running, path, kind) = match (&t.command, &t.url) {
            (Some(cmd), _) => {
                let (program, args) = cmd
                    .split_first()
                    .ok_or_else(|| anyhow::anyhow!("the target's command is empty"))?;
                let program = program_path(program, &x.dir).ok_or_else(|| {
                    anyhow::anyhow!("cannot run the target's command `{program}`: no such executable (on PATH or as a path)")
                })?;
                let spec = ChildSpec {
                    program,
                    args: args.to_vec(),
                };
                let back = Arc::new(ChildBack::new(
                    spec,
                    Arc::clone(&relay),
                    max_body,
                    1024,
                    Duration::from_secs(60),
                ));
                let front = Front::new(Arc::clone(&relay), back, FrontOptions::default(), &bound);
                (
                    http_front::start(Arc::new(front), listener)?,
                    "/mcp".to_string(),
                    "command",
                )
            }
            (None, Some(url)) => {
                let upstream = Arc::new(Upstream::new(url, max_body)?);
                let path = upstream.path.clone();
                let back = Arc::new(UrlBack::new(Arc::clone(&relay), upstream, 1024));
                let front = Front::new(Arc::clone(&relay), back, FrontOptions::default(), &bound);
                (http_front::start(Arc::new(front), listener)?, path, "url")
            }
            (None, None) => anyhow::bail!("the target has neither `command` nor `url`"),
        };
        let addr = running.addr();
        let url = format!("http://{addr}{path}");
        Ok(Target {
            endpoints: super::servers::Endpoints::one(&url),
            url,
            kind,
            faults: Faults::Local(relay),
            local: Some(Local {
                running: vec![running],
            }),
            remote_last: Default::default(),
        })
    }

    /// How often the runner must apply a stage's plan again (`None`: never — a remote
    /// relay's leases are renewed by a task of their own).
    pub fn renew_every(&self) -> Option<Duration> {
        None
    }

    /// Apply a stage's plan: the relay's whole plan is replaced (or, remote, the faults
    /// this runner posted are replaced by the stage's, on leases renewed until removal).
    pub async fn apply(
        &self,
        plan: Plan,
        doc: &Value,
        stage: &super::spec::Stage,
    ) -> anyhow::Result<()> {
        match &self.faults {
            Faults::Local(relay) => {
                relay
                    .check_plan(&plan, "the experiment's plan")
                    .map_err(|e| anyhow::anyhow!("{e}"))?;
                relay.set_plan(plan);
                Ok(())
            }
            Faults::Remote(r) => r.replace(doc).await,
            Faults::Fleet(f) => {
                let share = stage.relays.as_ref().and_then(|r| r.fraction());
                f.apply(doc, share.unwrap_or(1.0), &stage.stage).await
            }
        }
    }

    /// With a fleet: each relay's record, times on the run's clock from `origin`.
    pub fn fleet_records(
        &self,
        origin: std::time::Instant,
    ) -> Option<Vec<super::fleet::RelayRecord>> {
        match &self.faults {
            Faults::Fleet(f) => Some(f.records(origin)),
            _ => None,
        }
    }

    /// The status of every relay (one, or each of a fleet's that answers).
    async fn statuses(&self) -> Vec<Value> {
        match &self.faults {
            Faults::Local(relay) => vec![relay.status()],
            Faults::Remote(r) => r
                .api()
                .send(reqwest::Method::GET, "/status", None)
                .await
                .into_iter()
                .collect(),
            Faults::Fleet(f) => f.statuses().await,
        }
    }

    /// Remove every fault this runner applied. Local: synchronous, the engine's plan is
    /// empty when this returns.
    pub async fn remove_faults(&self) -> anyhow::Result<()> {
        match &self.faults {
            Faults::Local(relay) => {
                relay.set_plan(Plan::empty());
                Ok(())
            }
            Faults::Remote(r) => r.remove_all().await,
            Faults::Fleet(f) => f.remove_all().await,
        }
    }

    /// This run's injections so far, per relay (see [`super::injections`]).
    pub async fn injections(&self) -> Vec<super::injections::Reading> {
        use super::injections::{of_run, Reading};
        match &self.faults {
            Faults::Local(relay) => vec![Reading {
                counts: of_run(&relay.status(), None),
                ..Reading::default()
            }],
            Faults::Remote(r) => {
                let relay = super::fleet_spec::redact(&r.api().admin);
                let read = r.api().status().await;
                let mut last = self.remote_last.lock().unwrap_or_else(|p| p.into_inner());
                match read {
                    Ok(v) => {
                        let counts = of_run(&v, Some(r.run()));
                        *last = Some((std::time::Instant::now(), counts.clone()));
                        vec![Reading {
                            relay,
                            counts,
                            unread: None,
                        }]
                    }
                    Err(e) => {
                        let (at, counts) = last
                            .clone()
                            .map_or((None, BTreeMap::new()), |(t, c)| (Some(t), c));
                        vec![Reading {
                            relay,
                            counts,
                            unread: Some((at, format!("it did not answer: {e}"))),
                        }]
                    }
                }
            }
            Faults::Fleet(f) => f.injections().await,
        }
    }

    /// `tools/call` requests the relay has carried, per tool (`None`: its status is out of
    /// reach).
    pub async fn tool_calls(&self) -> Option<BTreeMap<String, u64>> {
        let lines = self.tool_lines().await?;
        let tools = lines.as_object()?;
        Some(
            tools
                .iter()
                .map(|(t, v)| (t.clone(), v["calls"].as_u64().unwrap_or(0)))
                .collect(),
        )
    }

    /// The relay's `tools/call` figures per tool (its status's `summary.tools`; `None`: out
    /// of reach).
    pub async fn tool_lines(&self) -> Option<Value> {
        let statuses = self.statuses().await;
        if let [one] = statuses.as_slice() {
            return Some(one["summary"]["tools"].clone());
        }
        // A fleet: each tool's calls summed over the relays that answered.
        let mut sum = serde_json::Map::new();
        for s in statuses.iter() {
            for (tool, v) in s["summary"]["tools"].as_object().into_iter().flatten() {
                let n = v["calls"].as_u64().unwrap_or(0);
                let e = sum
                    .entry(tool.clone())
                    .or_insert_with(|| serde_json::json!({"calls": 0}));
                e["calls"] = (e["calls"].as_u64().unwrap_or(0) + n).into();
            }
        }
        (!statuses.is_empty()).then_some(Value::Object(sum))
    }

    /// Injections so far without waiting, for an in-process relay (`None` for a remote one,
    /// whose counters need a request).
    pub fn injections_now(&self) -> Option<super::status::InjectionsNow> {
        let Faults::Local(relay) = &self.faults else {
            return None;
        };
        let relay = relay.clone();
        Some(std::sync::Arc::new(move || {
            let mut out = BTreeMap::new();
            if let Some(m) = relay.status()["summary"]["injections"].as_object() {
                for (id, v) in m {
                    out.insert(id.clone(), v["count"].as_u64().or(v.as_u64()).unwrap_or(0));
                }
            }
            out
        }))
    }

    /// Where the run reads the relay's silent-failure counts.
    pub fn silent_source(&self) -> super::silent::Source {
        match &self.faults {
            Faults::Local(relay) => super::silent::Source::Local(Arc::clone(relay)),
            Faults::Remote(r) => super::silent::Source::Remote {
                status_url: format!("{}/status", r.api().admin),
                token: r.api().token.clone(),
                http: r.api().http.clone(),
            },
            Faults::Fleet(f) => super::silent::Source::Many(f.silent_sources()),
        }
    }

    /// Stop the in-process relay and its server processes.
    pub async fn stop(self) {
        if let Some(l) = self.local {
            let all = futures::future::join_all(l.running.into_iter().map(Running::stop));
            let _ = tokio::time::timeout(Duration::from_secs(15), all).await;
        }
    }
}
