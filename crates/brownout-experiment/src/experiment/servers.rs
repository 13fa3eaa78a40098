//! A target of several servers at once (`target.servers: {NAME: {command | url}}`): what
//! an experiment file may say about them, and starting them.
//!
//! Every server gets its own front and back (its own local address), all joined to **one**
//! relay, so one engine sees every call: a server's sessions reach it under keys namespaced
//! by the server's name (`brownout_core::session_key`). That is what lets a fault pick
//! servers (`servers: [NAME]`), the blast radius take an agent on every server or on none,
//! and a value a fault changed on one server be followed into the agent's calls on another
//! (docs/silent.md). The load routes each call to the server whose `tools/list` has its tool
//! ([`crate::load::LoadTarget::Servers`]).

use super::program::program_path;
pub use super::records::ServerRecord;
use super::spec::Server;
use super::Loaded;
use brownout_core::Plan;
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

/// Where the load and the probes go: the target's one MCP URL, or with several servers
/// each server's, and which server has which tool.
#[derive(Debug, Clone, Default)]
pub struct Endpoints {
    /// The single server's URL (with several, the first's).
    pub url: String,
    /// With several servers: (name, URL) each, in name order.
    pub servers: Vec<(String, String)>,
    /// With several servers: tool → the name of the one server that lists it.
    pub routes: BTreeMap<String, String>,
    /// With a fleet (`target.fleet`): every relay's MCP URL; the load's sessions go to them
    /// round-robin.
    pub fleet: Vec<String>,
    /// With a DNS fleet: the URLs as relays join and leave (the load follows them).
    pub fleet_live: Option<crate::load::LiveUrls>,
    /// With `--otlp`: the run's root span as a W3C `traceparent`, which the probes'
    /// requests carry (their relay spans join the run's trace).
    pub trace: Option<String>,
}

impl Endpoints {
    /// One server at `url`.
    pub fn one(url: &str) -> Endpoints {
        Endpoints {
            url: url.to_string(),
            ..Endpoints::default()
        }
    }

    /// A fleet's relays at `urls` (probes sample every relay in turn).
    pub fn fleet(urls: Vec<String>) -> Endpoints {
        Endpoints {
            url: urls.first().cloned().unwrap_or_default(),
            fleet: urls,
            ..Endpoints::default()
        }
    }

    /// Where a probe's samples go: the server it names, else the one with its tool.
    pub fn for_probe(&self, p: &super::spec::Probe) -> &str {
        let name = p.call.server.as_ref().or(self.routes.get(&p.call.tool));
        name.and_then(|n| self.servers.iter().find(|(s, _)| s == n))
            .map_or(&self.url, |(_, url)| url)
    }

    /// Every URL a probe samples, in turn: a fleet's relays, else [`Endpoints::for_probe`].
    pub fn probe_urls(&self, p: &super::spec::Probe) -> Vec<String> {
        if self.fleet.is_empty() {
            vec![self.for_probe(p).to_string()]
        } else {
            self.fleet.clone()
        }
    }

    /// The load's target: one URL, or every server's (the load routes by tool).
    pub fn load_target(&self) -> crate::load::LoadTarget {
        if self.fleet.len() > 1 || self.fleet_live.is_some() {
            return crate::load::LoadTarget::Fleet {
                urls: self.fleet.clone(),
                live: self.fleet_live.clone(),
            };
        }
        if self.servers.is_empty() {
            crate::load::LoadTarget::Http {
                url: self.url.clone(),
                headers: Vec::new(),
            }
        } else {
            crate::load::LoadTarget::Servers {
                servers: self.servers.clone(),
            }
        }
    }
}

/// The servers started: one relay, and per server its name, its MCP URL and its front.
pub struct Started {
    pub relay: Arc<Relay>,
    pub servers: Vec<(String, String)>,
    pub running: Vec<Running>,
}

/// Start every server of `servers` behind one relay on loopback, each at its own port.
pub async fn start(
    x: &Loaded,
    servers: &BTreeMap<String, Server>,
    otlp: Option<&brownout_relay::otlp::Otlp>,
) -> anyhow::Result<Started> {
    let opts = RelayOptions {
        idle_session_ttl: Some(Duration::from_secs(60)),
        driver: super::load::servers_driver(servers),
        otlp: otlp.cloned(),
        ..RelayOptions::default()
    };
    let relay = Arc::new(Relay::new(Plan::empty(), &opts, None));
    let max_body = FrontOptions::default().max_body;
    let mut started = Started {
        relay: Arc::clone(&relay),
        servers: Vec::new(),
        running: Vec::new(),
    };
    for (name, s) in servers {
        match start_one(x, &relay, name, s, max_body).await {
            Ok((url, running)) => {
                started.servers.push((name.clone(), url));
                started.running.push(running);
            }
            Err(e) => {
                // The servers already started stop with the run that cannot go on.
                for r in started.running {
                    let _ = r.stop().await;
                }
                return Err(e);
            }
        }
    }
    Ok(started)
}

/// Start server `name` behind `relay`: its MCP URL and its front.
async fn start_one(
    x: &Loaded,
    relay: &Arc<Relay>,
    name: &str,
    s: &Server,
    max_body: usize,
) -> anyhow::Result<(String, Running)> {
    {
        let listen: std::net::SocketAddr = ([127, 0, 0, 1], 0).into();
        let listener = tokio::net::TcpListener::bind(listen).await?;
        let bound = listener.local_addr()?;
        let (running, path) = match (&s.command, &s.url) {
            (Some(cmd), _) => {
                let (program, args) = cmd
                    .split_first()
                    .ok_or_else(|| anyhow::anyhow!("server `{name}`: the command is empty"))?;
                let program = program_path(program, &x.dir).ok_or_else(|| {
                    anyhow::anyhow!("server `{name}`: cannot run `{program}`: no such executable (on PATH or as a path)")
                })?;
                let spec = ChildSpec {
                    program,
                    args: args.to_vec(),
                };
                let back = ChildBack::new(
                    spec,
                    Arc::clone(relay),
                    max_body,
                    1024,
                    Duration::from_secs(60),
                )
                .namespaced(name);
                let front = Front::new(
                    Arc::clone(relay),
                    Arc::new(back),
                    FrontOptions::default(),
                    &bound,
                );
                (
                    http_front::start(Arc::new(front), listener)?,
                    "/mcp".to_string(),
                )
            }
            (None, Some(url)) => {
                let upstream = Arc::new(Upstream::new(url, max_body)?);
                let path = upstream.path.clone();
                let back = UrlBack::new(Arc::clone(relay), upstream, 1024).namespaced(name);
                let front = Front::new(
                    Arc::clone(relay),
                    Arc::new(back),
                    FrontOptions::default(),
                    &bound,
                );
                (http_front::start(Arc::new(front), listener)?, path)
            }
            (None, None) => anyhow::bail!("server `{name}` has neither `command` nor `url`"),
        };
        let addr = running.addr();
        Ok((format!("http://{addr}{path}"), running))
    }
}

/// The endpoints of started servers: each server's tools, read from its `tools/list`
/// through the relay (a session labelled `routes`), decide where a probe's tool goes.
pub async fn endpoints(servers: &[(String, String)]) -> anyhow::Result<Endpoints> {
    use crate::load::http::{self as lhttp, HttpSession};
    const TIMEOUT: Duration = Duration::from_secs(30);
    let mut listed: Vec<Vec<String>> = Vec::new();
    for (name, url) in servers {
        let label = (
            brownout_relay::relay::http_sessions::LABEL_HEADER.to_string(),
            "routes".to_string(),
        );
        let client = lhttp::client(&[label]).map_err(|e| anyhow::anyhow!("{e}"))?;
        let parsed = reqwest::Url::parse(url)?;
        let s = HttpSession::new(client, parsed);
        s.initialize(TIMEOUT)
            .await
            .map_err(|e| anyhow::anyhow!("server `{name}` did not start: {e}"))?;
        let raw = s.request_raw("tools/list", "{}", TIMEOUT).await;
        s.close(Duration::from_secs(2)).await;
        listed.push(
            raw.map(|r| crate::load::wire::tool_names(&r, 10_000))
                .unwrap_or_default(),
        );
    }
    let mut routes = BTreeMap::new();
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for tools in &listed {
        for t in tools {
            *count.entry(t.as_str()).or_default() += 1;
        }
    }
    for ((name, _), tools) in servers.iter().zip(&listed) {
        for t in tools {
            // A tool two servers list has no default: a probe of it names its server.
            if count.get(t.as_str()) == Some(&1) {
                routes.insert(t.clone(), name.clone());
            }
        }
    }
    Ok(Endpoints {
        url: servers.first().map(|(_, u)| u.clone()).unwrap_or_default(),
        servers: servers.to_vec(),
        routes,
        fleet: Vec::new(),
        fleet_live: None,
        trace: None,
    })
}

/// Each server's record from the relay's per-tool figures (`SERVER/TOOL` keys) and its
/// per-tool silent counts.
pub fn record(
    endpoints: &Endpoints,
    tool_lines: Option<&Value>,
    silent: Option<&super::silent::Counts>,
) -> Vec<ServerRecord> {
    let of = |key: &str| key.split_once('/').map(|(s, _)| s.to_string());
    endpoints
        .servers
        .iter()
        .map(|(name, url)| {
            let mut r = ServerRecord {
                name: name.clone(),
                url: url.clone(),
                ..ServerRecord::default()
            };
            for (tool, line) in tool_lines.and_then(Value::as_object).into_iter().flatten() {
                if of(tool).as_deref() != Some(name.as_str()) {
                    continue;
                }
                let calls = line["calls"].as_u64().unwrap_or(0);
                let ok = line["outcomes"]["ok"].as_u64().unwrap_or(0);
                r.calls += calls;
                r.errors += calls.saturating_sub(ok);
            }
            let mine: super::silent::Counts = silent
                .into_iter()
                .flatten()
                .filter(|(tool, _)| of(tool).as_deref() == Some(name.as_str()))
                .map(|(t, s)| (t.clone(), *s))
                .collect();
            r.silent = super::silent::total(&mine);
            r
        })
        .collect()
}
