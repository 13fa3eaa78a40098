//! `--otlp [URL]` (and `BROWNOUT_OTLP`), shared by `proxy`, `run`, `load` and `probe`.

use brownout_relay::otlp::{Otlp, OtlpError};
use clap::Args;

#[derive(Args, Debug, Clone, Default)]
pub struct OtlpArgs {
    /// Export OpenTelemetry spans (OTLP/HTTP protobuf) to the collector at URL (docs/otel.md).
    /// `proxy`: a span per relayed call with the faults that acted on it, continuing a
    /// client's `_meta.traceparent`, and the relay's metrics. `run`: the run, its phases and
    /// stages as one trace, the load's calls in it (and, for a target the run starts, its
    /// relay's call spans under them). `load`: a span per logical call, each carrying its
    /// `traceparent` to the server. `probe`: a span per probe and its phases. A local
    /// collector listens at http://127.0.0.1:4318; the URL is required, so `--otlp exp.yaml`
    /// cannot take a file for a collector. A slow or dead collector never slows traffic:
    /// spans are dropped and counted.
    #[arg(long, env = "BROWNOUT_OTLP", value_name = "URL")]
    pub otlp: Option<String>,
}

impl OtlpArgs {
    /// Start the exporter when `--otlp` was given; `command` names the resource.
    pub fn start(&self, command: &str) -> Result<Option<Otlp>, OtlpError> {
        Otlp::start_if(self.otlp.as_deref().filter(|u| !u.is_empty()), command)
    }
}
