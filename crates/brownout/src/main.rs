//! The `brownout` binary: the command line over the relay, the fixture, the demo and plan
//! tools. Errors are reported with `anyhow` here, at the edge; exit codes mean something:
//! 0 success, 1 a check failed, 2 bad usage or input, otherwise the proxied server's status.

use brownout::{demo, faults_cmd, fixture, plan_cmd};
use clap::{Parser, Subcommand};
use proxy_cmd::{proxy_http, proxy_stdio, single_thread_runtime, Proxy};

mod proxy_cmd;
use std::path::PathBuf;

/// Chaos engineering for the MCP tool-call plane.
///
/// brownout sits between an MCP client and an MCP server and breaks the traffic on purpose,
/// as a declarative, seeded fault plan says: slow tools, errors, timeouts, malformed bytes,
/// drifted schemas, partial results, lying registries, dying servers. The same seed replays
/// the same faults.
///
/// Start here:
///   brownout demo                                  see it work, nothing to install
///   brownout plan check examples/demo-plan.yaml    validate a plan
///   brownout proxy stdio --plan PLAN -- CMD ARGS   put brownout in front of a server
///   brownout run examples/experiments/green.yaml   an experiment: staged faults, live SLO gates
#[derive(Parser)]
#[command(
    name = "brownout",
    version,
    about,
    long_about,
    verbatim_doc_comment,
    max_term_width = 100
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Relay MCP traffic to a server, injecting the faults of a plan.
    #[command(subcommand)]
    Proxy(Proxy),
    /// Validate plans, print the plan JSON Schema, list fault kinds.
    #[command(subcommand)]
    Plan(PlanCmd),
    /// Run an experiment (see `brownout run --help` and docs/experiments.md).
    Run(brownout::experiment::cli::RunCmd),
    /// Validate experiment files, print their JSON Schema.
    #[command(subcommand)]
    Experiment(brownout::experiment::cli::ExperimentCmd),
    // Its help (about, examples, exit codes) is GamedayArgs's doc comment.
    Gameday(brownout::gameday::GamedayArgs),
    // Its help (about, examples, exit codes) is JournalArgs's doc comment.
    Journal(brownout::journal_cmd::JournalArgs),
    /// Steer a running relay's faults through its admin API (`proxy … --admin ADDR`).
    #[command(subcommand)]
    Faults(faults_cmd::FaultsCmd),
    /// Run a short live session: the built-in fixture behind the relay, with a demo plan.
    Demo {
        /// Use this plan instead of examples/demo-plan.yaml.
        #[arg(long)]
        plan: Option<PathBuf>,
        /// Print the results as JSON.
        #[arg(long)]
        json: bool,
        /// Keep the session's event log here (see docs/events.md).
        #[arg(long)]
        events: Option<PathBuf>,
    },
    /// Simulate a workload under a plan, in virtual time: TCAF, blast radius, retries, breakers.
    ///
    /// Example:
    ///   brownout sim --plan examples/sim/errors-2pct.yaml --workload examples/sim/headline.yaml
    ///   brownout sim --plan examples/sim/cascade-trigger.yaml --workload examples/sim/cascade.yaml \
    ///       --gate 'error_rate < 1% over 10s' --gate 'p99 < 800ms over 10s'
    ///
    /// Exit codes: 0 done, every gate held; 1 a gate breached; 2 bad input.
    #[command(verbatim_doc_comment)]
    Sim {
        /// The fault plan (the same plans the relay runs).
        #[arg(long)]
        plan: Option<PathBuf>,
        /// The workload: tasks, servers, client behaviour (see docs/simulator.md).
        #[arg(long)]
        workload: PathBuf,
        /// Run this many tasks instead of the workload's `tasks`.
        #[arg(long)]
        tasks: Option<u64>,
        /// Seed of the simulation's own randomness (the plan keeps its own seed).
        #[arg(long)]
        seed: Option<u64>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Write the per-second time series (CSV) here.
        #[arg(long)]
        series: Option<PathBuf>,
        /// An SLO gate, judged over sliding windows of virtual time (repeatable), such as
        /// 'error_rate < 1% over 10s' or 'p95 <= 1.5s over 500 calls min 50 calls for 3s'.
        /// The grammar and every SLI: docs/gates.md.
        #[arg(long = "gate", value_name = "GATE", value_parser = brownout::sim_cmd::parse_gate)]
        gates: Vec<brownout_core::slo::Gate>,
        /// Model N long-lived sessions shared by the tasks, as `brownout load --sessions N`
        /// (and `brownout run`) plays them, instead of one session per task: a fault's
        /// `sessions` share then selects the same sessions as on the wire.
        #[arg(long, value_name = "N")]
        sessions: Option<u64>,
    },
    // Its help (short and long) is the doc comment of `LoadArgs`.
    Load(Box<brownout::load::cli::LoadArgs>),
    // Its help (about, examples, exit codes) is CalibrateArgs's doc comment.
    Calibrate(Box<brownout::calibrate::CalibrateArgs>),
    // Its help (about, examples, exit codes) is SearchArgs's doc comment.
    Search(Box<brownout::search::SearchArgs>),
    // Its help (about, examples, exit codes) is DesignArgs's doc comment.
    Design(Box<brownout::design::cli::DesignArgs>),
    // Its help (about, examples, exit codes) is McpArgs's doc comment.
    Mcp(Box<brownout::mcp::McpArgs>),
    /// Probe an MCP server (or HTTP endpoint, or command): why it fails, phase times,
    /// monitor mode with alerts (docs/probes.md).
    Probe(Box<brownout::probe::cli::ProbeArgs>),
    /// Serve the built-in example MCP server on stdio (tools: echo, search_incidents,
    /// get_incident, fetch_logs, restart_service).
    ///
    /// With --pool/--service-ms/--queue-timeout-ms it is a small server with a bounded pool
    /// (the seed incident's); with --http ADDR it serves streamable HTTP instead of stdio.
    /// Example: brownout fixture --http 127.0.0.1:3001 --pool 10 --service-ms 20 --queue-timeout-ms 200
    Fixture(brownout::fixture::FixtureArgs),
}

#[derive(Subcommand)]
enum PlanCmd {
    /// Validate plans; prints every error as FILE:LINE:COLUMN: `key`: message. Exit 1 if any is invalid.
    ///
    /// Example:
    ///   brownout plan check examples/demo-plan.yaml
    #[command(verbatim_doc_comment)]
    Check {
        /// Plan files to check (YAML, JSON or TOML, by extension).
        #[arg(required = true, value_name = "FILES")]
        files: Vec<PathBuf>,
        /// Print the results as JSON: per file, `ok` (true or false), and its `errors` with line, column
        /// and key.
        #[arg(long)]
        json: bool,
    },
    /// Print the JSON Schema of plan files.
    Schema,
    /// List the fault kinds and what each does (docs/plans.md has their parameters).
    Kinds {
        /// Print the kinds as JSON: each `kind`, its `summary` and the methods it acts on
        /// by default.
        #[arg(long)]
        json: bool,
    },
}

fn main() {
    let cli = Cli::parse();
    let code = match run(cli) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("brownout: {e:#}");
            2
        }
    };
    std::process::exit(code);
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// Commands that only print die quietly when their reader goes away (`brownout plan schema |
/// head`), like other Unix tools. The relay keeps SIGPIPE ignored: a peer closing a pipe is
/// an error it handles, not a reason to die.
fn quiet_on_broken_pipe() {
    // SAFETY: called before any other thread exists; SIG_DFL is async-signal-safe.
    unsafe {
        let _ = nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGPIPE,
            nix::sys::signal::SigHandler::SigDfl,
        );
    }
}

fn run(cli: Cli) -> anyhow::Result<i32> {
    let prints_only = match &cli.command {
        Command::Plan(_)
        | Command::Demo { .. }
        | Command::Sim { .. }
        | Command::Journal(_)
        | Command::Experiment(_) => true,
        Command::Probe(a) => a.schema,
        _ => false,
    };
    if prints_only {
        quiet_on_broken_pipe();
    }
    match cli.command {
        Command::Plan(PlanCmd::Check { files, json }) => Ok(plan_cmd::check(&files, json)),
        Command::Plan(PlanCmd::Schema) => {
            plan_cmd::schema();
            Ok(0)
        }
        Command::Plan(PlanCmd::Kinds { json }) => {
            plan_cmd::kinds(json);
            Ok(0)
        }
        Command::Run(cmd) => cmd.run(),
        Command::Experiment(cmd) => Ok(cmd.run()),
        Command::Gameday(a) => brownout::gameday::run(a),
        Command::Journal(a) => Ok(a.run()),
        Command::Faults(cmd) => single_thread_runtime()?.block_on(faults_cmd::run(cmd)),
        Command::Fixture(a) => {
            single_thread_runtime()?.block_on(fixture::main(a))?;
            Ok(0)
        }
        Command::Demo { plan, json, events } => runtime()?.block_on(demo::run(plan, json, events)),
        Command::Load(a) => brownout::load::cli::run(*a),
        Command::Search(a) => brownout::search::run(*a),
        Command::Mcp(a) => brownout::mcp::run(*a),
        Command::Design(a) => brownout::design::cli::run(*a),
        Command::Calibrate(a) => brownout::calibrate::run(*a),
        Command::Probe(a) => brownout::probe::cli::run(*a),
        Command::Proxy(Proxy::Stdio(a)) => proxy_stdio(*a),
        Command::Proxy(Proxy::Http(a)) => proxy_http(*a),
        Command::Sim {
            plan,
            workload,
            tasks,
            seed,
            json,
            series,
            gates,
            sessions,
        } => brownout::sim_cmd::run(brownout::sim_cmd::SimArgs {
            sessions,
            plan,
            workload,
            tasks,
            seed,
            json,
            series,
            gates,
        }),
    }
}

#[cfg(test)]
mod help_tests;
