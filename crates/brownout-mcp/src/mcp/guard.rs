//! The guardrails of `start_experiment`, in the server, before anything reaches a target:
//! the operator's policy (production labels, numeric gate, ladder, caps), the ladder
//! against the store's history (always on through MCP), the programs an agent may have
//! started (argument by argument), the admin token it may send, and the concurrency cap. Approval by a person comes after these (approval.rs).

use super::Config;
use brownout_core::select::Globs;
use brownout_experiment::experiment::load::Loaded;
use brownout_experiment::experiment::policy::{self, Refusal};

fn refusal(rule: &str, detail: String) -> Refusal {
    Refusal {
        rule: rule.into(),
        detail,
    }
}

/// The command lines an experiment would run: its target's and its rollbacks'.
fn commands(x: &Loaded) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = x.spec.target.command.iter().cloned().collect();
    out.extend(x.spec.rollbacks.iter().map(|r| r.command.clone()));
    out
}

/// Whether the policy lets an MCP client have brownout run this command line. Each policy
/// entry is matched argument by argument: its words (split on whitespace) are globs, one per
/// argument, so a `*` never spans two arguments and `["brownout fixture", "x"]` is not
/// `brownout fixture x`; a last word `**` allows any further arguments.
pub fn command_allowed(cfg: &Config, cmd: &[String]) -> Result<(), Refusal> {
    if cfg.policy.mcp_commands.iter().any(|p| argv_matches(p, cmd)) {
        return Ok(());
    }
    let shown: Vec<String> = cmd
        .iter()
        .map(|a| format!("\"{}\"", super::audit::clean_n(a, 200)))
        .collect();
    Err(refusal(
        "mcp_commands",
        format!(
            "[{}] is not a command line the policy lets an MCP client start (allowed, one glob per argument: {})",
            shown.join(", "),
            list(&cfg.policy.mcp_commands)
        ),
    ))
}

/// One `mcp_commands` entry against an argv: word i (a glob) matches argument i; a last
/// word `**` matches any further arguments, none included.
pub fn argv_matches(pattern: &str, argv: &[String]) -> bool {
    let words: Vec<&str> = pattern.split_whitespace().collect();
    let (words, rest) = match words.split_last() {
        Some((&"**", head)) => (head, true),
        _ => (&words[..], false),
    };
    if words.is_empty() || argv.len() < words.len() || (!rest && argv.len() != words.len()) {
        return false;
    }
    words.iter().zip(argv).all(|(w, a)| {
        Globs::new(&[w.to_string()])
            .map(|g| g.is_match(a))
            .unwrap_or(false)
    })
}

/// The environment variable an experiment's `target.admin_token_env` names is sent as a
/// bearer token to its admin URL: through MCP only one the policy lists
/// (`mcp_admin_token_envs`), so an agent cannot pick which of the server's secrets leaves.
pub fn admin_token_env_allowed(cfg: &Config, x: &Loaded) -> Result<(), Refusal> {
    let Some(v) = &x.spec.target.admin_token_env else {
        return Ok(());
    };
    if cfg.policy.mcp_admin_token_envs.iter().any(|e| e == v) {
        return Ok(());
    }
    Err(refusal(
        "mcp_admin_token_envs",
        format!(
            "`target.admin_token_env` names ${}: through MCP only a variable the policy lists may be sent as the admin API's token (allowed: {})",
            super::audit::clean_n(v, 100),
            list(&cfg.policy.mcp_admin_token_envs)
        ),
    ))
}

/// Whether the policy lets an MCP client have brownout reach this URL. The URL is parsed
/// and matched in its normal form, `scheme://host:port/path` (the port always written), so
/// `http://127.0.0.1:1@evil/` (user `127.0.0.1`, host `evil`) is matched as the `evil` it
/// reaches; URLs with credentials are refused outright.
pub fn url_allowed(cfg: &Config, url: &str) -> Result<(), Refusal> {
    let parsed = reqwest::Url::parse(url).map_err(|e| {
        refusal(
            "mcp_urls",
            format!("`{}` is not a URL: {e}", super::audit::redact(url)),
        )
    })?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(refusal(
            "mcp_urls",
            "a URL with credentials (user@host) is refused through MCP".into(),
        ));
    }
    // IPv6 hosts come bracketed (`[::1]`), as in the URL.
    let host = parsed.host_str().unwrap_or_default().to_string();
    let normal = format!(
        "{}://{}:{}{}",
        parsed.scheme(),
        host,
        parsed.port_or_known_default().unwrap_or(0),
        parsed.path()
    );
    let ok = !host.is_empty()
        && Globs::new(&cfg.policy.mcp_urls)
            .map(|g| g.is_match(&normal))
            .unwrap_or(false);
    if ok {
        return Ok(());
    }
    Err(refusal(
        "mcp_urls",
        format!(
            "`{}` is not a URL the policy lets an MCP client reach (allowed: {})",
            super::audit::redact(url),
            list(&cfg.policy.mcp_urls)
        ),
    ))
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// An experiment's file paths (workload, faults file) must stay inside the working
/// directory: relative, no `..` — an agent must not read the operator's files through error
/// messages.
pub fn paths_confined(text: &str, file: &str, workdir: &std::path::Path) -> Result<(), Refusal> {
    use brownout_core::plan::source::{parse, Format};
    let Ok(root) = parse(text, Format::from_path(file)) else {
        return Ok(()); // the loader reports the syntax error
    };
    let doc = root.to_json();
    for key in ["/load/workload", "/faults"] {
        if let Some(p) = doc.pointer(key).and_then(|v| v.as_str()) {
            let path = std::path::Path::new(p);
            let escapes = path.is_absolute()
                || path
                    .components()
                    .any(|c| matches!(c, std::path::Component::ParentDir));
            // Inside the working directory once links are followed, and there: a file that is
            // not would be looked for in the server's own current directory.
            let inside = !escapes
                && workdir
                    .join(path)
                    .canonicalize()
                    .ok()
                    .zip(workdir.canonicalize().ok())
                    .is_some_and(|(f, d)| f.starts_with(d));
            if !inside {
                return Err(refusal(
                    "paths",
                    format!("`{}` is `{}`: through MCP a file must be a relative path inside the server's working directory (--workdir), without `..`, that exists there; or write it inline", key[1..].replace('/', "."), super::audit::clean(p)),
                ));
            }
        }
    }
    Ok(())
}

/// Every rule but the concurrency cap (also what `validate_experiment` reports).
pub fn check(cfg: &Config, x: &Loaded) -> Result<(), Refusal> {
    policy::check(x, &cfg.policy)?;
    for c in commands(x) {
        command_allowed(cfg, &c)?;
    }
    admin_token_env_allowed(cfg, x)?;
    let t = &x.spec.target;
    let health = t.health.as_ref().map(|h| &h.prometheus);
    for u in t.url.iter().chain(t.admin.iter()).chain(health) {
        url_allowed(cfg, u)?;
    }
    // A fleet: every relay's two URLs (a DNS fleet: the name's, on both ports).
    for u in brownout_experiment::experiment::fleet::urls_to_allow(t.fleet.as_ref()) {
        url_allowed(cfg, &u)?;
    }
    for p in &x.spec.steady_state {
        if let Some(w) = &p.webhook {
            url_allowed(cfg, w)?;
        }
    }
    let keep = brownout_store::keep::KeepArgs {
        store: cfg.store.clone(),
        ..Default::default()
    };
    brownout_experiment::experiment::history::enforce(x, &cfg.policy, &keep)
}

/// The concurrency cap: `active` runs already going.
pub fn capacity(cfg: &Config, active: usize) -> Result<(), Refusal> {
    let cap = cfg.policy.max_concurrent as usize;
    if active >= cap {
        return Err(refusal(
            "max_concurrent",
            format!("{active} experiment(s) already running; the policy allows {cap} at once (stop one with stop_experiment)"),
        ));
    }
    Ok(())
}
