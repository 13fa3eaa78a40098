//! Alert delivery: a [`Notice`] as a JSON body (with a Slack-compatible `text`) POSTed to
//! a webhook. The body is documented in docs/probes.md. The webhook URL is never printed
//! (a Slack webhook URL is itself a secret).

use super::monitor::{Cause, Notice};
use serde_json::{json, Value};
use std::time::Duration;

/// The webhook body of an alert or recovery notice.
pub fn body(n: &Notice) -> Value {
    let why = match (n.cause, &n.failure) {
        (Cause::P95, _) => {
            let p95 = n.percentiles.map_or(0.0, |p| p.p95_ms);
            format!("rolling P95 {p95:.0} ms broke its limit")
        }
        (Cause::ConsecutiveFailures, Some(f)) => {
            format!("{} probes failed in a row: {f}", n.consecutive_failures)
        }
        (Cause::ConsecutiveFailures, None) => "probes failed".to_string(),
    };
    let text = match n.event {
        "alert" => format!(
            ":red_circle: brownout probe ALERT {}: {why} — {}",
            n.target, n.detail
        ),
        _ => format!(
            ":large_green_circle: brownout probe RECOVERED {} after {:.1}s (was: {})",
            n.target,
            n.duration_ms.unwrap_or(0.0) / 1000.0,
            n.failure.as_deref().unwrap_or("slow P95"),
        ),
    };
    let mut v = serde_json::to_value(n).unwrap_or_else(|_| json!({}));
    if let Some(m) = v.as_object_mut() {
        m.insert("text".into(), Value::String(text));
    }
    v
}

/// POST the notice; three tries, 10 s each. Errors go to stderr without the URL.
pub async fn send(client: &reqwest::Client, webhook: &str, n: &Notice) {
    let body = body(n);
    for attempt in 0..3u32 {
        let r = client
            .post(webhook)
            .timeout(Duration::from_secs(10))
            .json(&body)
            .send()
            .await;
        match r {
            Ok(resp) if resp.status().is_success() => return,
            Ok(resp) => eprintln!(
                "brownout: the webhook answered HTTP {} to the {} for {}",
                resp.status(),
                n.event,
                n.target
            ),
            Err(e) => eprintln!(
                "brownout: cannot deliver the {} for {} to the webhook: {}",
                n.event,
                n.target,
                super::reason::classify_http(&e).reason
            ),
        }
        tokio::time::sleep(Duration::from_millis(500 * u64::from(attempt + 1))).await;
    }
}
