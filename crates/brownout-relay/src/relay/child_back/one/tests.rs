//! The one session's write-first paths against the orderings that could make the engine
//! miss a call or hear its answer after brownout already failed it.

use crate::relay::child::ChildSpec;
use crate::relay::child_back::ChildBack;
use crate::relay::{stdio, Relay, RelayOptions};
use brownout_core::Plan;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

fn relay() -> Arc<Relay> {
    let opts = RelayOptions {
        driver: stdio::driver::<ChildBack>(),
        ..RelayOptions::default()
    };
    let plan = Plan::from_str_named("faults: []\n", "plan.yaml").expect("plan");
    Arc::new(Relay::new(plan, &opts, None))
}

#[tokio::test(flavor = "current_thread")]
async fn an_answer_still_on_its_way_to_a_slow_client_is_not_failed_when_the_server_exits() {
    // The server answers the call with more than a pipe holds, then exits. The client
    // reads nothing for longer than brownout waits for the server's output after an exit
    // (DRAIN): the answer is still being written when the calls in flight are failed. The
    // call was answered, so the client must get the answer, and only the answer.
    let script = r#"
import json, sys
v = json.loads(sys.stdin.readline())
print(json.dumps({"jsonrpc": "2.0", "id": v["id"], "result": {"text": "a" * 300000}}), flush=True)
"#;
    let spec = ChildSpec {
        program: "python3".into(),
        args: vec!["-c".into(), script.into()],
    };
    let relay = relay();
    let back = Arc::new(ChildBack::new(
        spec,
        Arc::clone(&relay),
        1 << 20,
        4,
        Duration::from_secs(60),
    ));
    let (mut client_in, input) = tokio::io::duplex(1 << 10);
    let (output, client_out) = tokio::io::duplex(1 << 10);
    let run = tokio::spawn(stdio::run_with(back, relay, 1 << 20, input, output));
    client_in
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"big\"}}\n")
        .await
        .expect("write");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut lines = BufReader::new(client_out).lines();
    let mut got = Vec::new();
    while let Ok(Ok(Some(line))) =
        tokio::time::timeout(Duration::from_secs(5), lines.next_line()).await
    {
        let v: Value = serde_json::from_str(&line).expect("JSON");
        got.push(v);
    }
    drop(client_in);
    let _ = tokio::time::timeout(Duration::from_secs(10), run).await;
    let shown: Vec<String> = got
        .iter()
        .map(|v| {
            let mut s = v.to_string();
            s.truncate(120);
            s
        })
        .collect();
    assert_eq!(got.len(), 1, "one message for the one call: {shown:#?}");
    assert!(got[0]["result"].is_object(), "the answer: {shown:#?}");
}
