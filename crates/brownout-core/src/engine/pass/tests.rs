//! [`Engine::passes`] against [`Engine::on_message`]: a message it lets go first is one the
//! engine would have passed, and recording it after leaves the engine exactly as deciding it
//! would have.

use super::super::tests::{engine, plan};
use super::*;
use crate::event::Event;
use crate::faults::Shaping;

fn no_answer(_: Option<&crate::jsonrpc::Id>, _: &mut Shaping<'_>) {}

/// Faults of every sort a selector can rule out a message by: tool, method, argument,
/// session share, window, loose messages in either direction, counters, a disabled fault.
const PLAN: &str = r#"seed: 7
faults:
  - {id: slow-echo, kind: latency, tools: [echo], added_ms: 5, probability: 0.5}
  - {id: err-read, kind: error, methods: [resources/read], every_nth: 2}
  - {id: drop-never, kind: drop, arguments: {message: never}}
  - {id: drift, kind: schema_drift, tools: ["a*"], probability: 0.5, sessions: 0.5}
  - {id: dup-progress, kind: duplicate, direction: to_client, methods: [notifications/progress]}
  - {id: drop-cancel, kind: drop, direction: to_server, methods: [notifications/cancelled]}
  - {id: late-add, kind: error, tools: [add], window: {start: 2s}}
  - {id: off, kind: error, enabled: false}
"#;

/// A small xorshift: the sequence is the same on every run.
struct Draw(u64);

impl Draw {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// One message of a made-up conversation, and who sent it.
fn message(d: &mut Draw, pending: &mut Vec<u64>, asked: &mut Vec<u64>, n: u64) -> (Side, Vec<u8>) {
    let text = match d.next(12) {
        0..=3 => {
            let tool = ["echo", "add", "alpha", "other"][d.next(4) as usize];
            let arg = ["hi", "never"][d.next(2) as usize];
            pending.push(n);
            return (
                Side::Client,
                format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"message":"{arg}"}}}}}}"#).into_bytes(),
            );
        }
        4 => {
            let method = ["tools/list", "resources/read"][d.next(2) as usize];
            pending.push(n);
            return (
                Side::Client,
                format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"{method}","params":{{}}}}"#)
                    .into_bytes(),
            );
        }
        5..=7 if !pending.is_empty() => {
            let id = pending.remove(d.next(pending.len() as u64) as usize);
            if d.next(4) == 0 {
                format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32001,"message":"no"}}}}"#)
            } else {
                format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"ok"}}],"structuredContent":{{"a":1}}}}}}"#
                )
            }
        }
        8 => {
            let method = ["notifications/progress", "notifications/message"][d.next(2) as usize];
            format!(r#"{{"jsonrpc":"2.0","method":"{method}","params":{{}}}}"#)
        }
        9 => {
            asked.push(n);
            format!(
                r#"{{"jsonrpc":"2.0","id":"srv-{n}","method":"sampling/createMessage","params":{{}}}}"#
            )
        }
        10 => {
            let text = match asked.pop() {
                Some(id) => format!(r#"{{"jsonrpc":"2.0","id":"srv-{id}","result":{{}}}}"#),
                None => {
                    let method = ["notifications/cancelled", "notifications/initialized"]
                        [d.next(2) as usize];
                    format!(r#"{{"jsonrpc":"2.0","method":"{method}","params":{{"requestId":1}}}}"#)
                }
            };
            return (Side::Client, text.into_bytes());
        }
        _ => match d.next(3) {
            // An answer nothing asked for, a batch, and text that is not JSON.
            0 => r#"{"jsonrpc":"2.0","id":"nobody","result":{}}"#.into(),
            1 => r#"[{"jsonrpc":"2.0","method":"notifications/progress","params":{}}]"#.into(),
            _ => "not json".into(),
        },
    };
    (Side::Server, text.into_bytes())
}

fn events(e: &mut Engine) -> Vec<Event> {
    e.drain_events().collect()
}

#[test]
fn a_message_that_passes_is_one_the_engine_would_pass_and_is_recorded_the_same() {
    let mut went_first = 0;
    let mut decided = 0;
    let mut touched = 0;
    for seed in 1..=40u64 {
        let mut decided_all = engine(PLAN);
        let mut first = engine(PLAN);
        let mut d = Draw(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut pending = [Vec::new(), Vec::new()];
        let mut asked = [Vec::new(), Vec::new()];
        let mut now = Time::ZERO;
        for n in 0..300u64 {
            let s = d.next(2) as usize;
            let session = ["s1", "s2"][s];
            let (side, bytes) = message(&mut d, &mut pending[s], &mut asked[s], n);
            now = Time(now.0 + d.next(30_000));
            let want = decided_all.on_message(side, session, &bytes, now);
            // As the stdio relay goes: read, write if it passes, then record or decide.
            let read = first.read(side, session, &bytes, || now);
            assert_eq!(read.passes(), first.passes(side, session, &bytes, now));
            if read.passes() {
                went_first += 1;
            } else {
                decided += 1;
            }
            let got = first.on_read(side, session, &read, now);
            touched += usize::from(!want.is_pass());
            let text = String::from_utf8_lossy(&bytes);
            assert_eq!(got, want, "seed {seed}, message {n} on {session}: {text}");
            assert_eq!(
                events(&mut first),
                events(&mut decided_all),
                "seed {seed}, message {n}: {text}"
            );
        }
        let (a, b) = (first.summary().report(), decided_all.summary().report());
        assert_eq!(
            serde_json::to_value(&a).ok(),
            serde_json::to_value(&b).ok(),
            "seed {seed}"
        );
        assert_eq!(first.pending_count(), decided_all.pending_count());
    }
    // Not vacuous: most messages go first, the plan's faults act on many others.
    assert!(went_first > 5_000, "{went_first} of 12,000 went first");
    assert!(decided > 1_500, "{decided} were decided");
    assert!(touched > 500, "the faults touched {touched}");
}

#[test]
fn what_decides_that_a_message_is_touched() {
    let mut e = engine(PLAN);
    let call = |id: u64, tool: &str, arg: &str| {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"message":"{arg}"}}}}}}"#).into_bytes()
    };
    let t = Time::ZERO;
    // By tool, by argument, by method.
    assert!(!e.passes(Side::Client, "s", &call(1, "echo", "hi"), t));
    assert!(!e.passes(Side::Client, "s", &call(1, "other", "never"), t));
    assert!(e.passes(Side::Client, "s", &call(1, "other", "hi"), t));
    let read = br#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{}}"#;
    assert!(!e.passes(Side::Client, "s", read, t));
    // By window: `add` is touched from 2 s on.
    assert!(e.passes(Side::Client, "s", &call(1, "add", "hi"), t));
    assert!(!e.passes(Side::Client, "s", &call(1, "add", "hi"), Time(2_000_000)));
    // A response goes first when its call has no fault left to act on it.
    assert!(e
        .on_message(Side::Client, "s", &call(5, "echo", "hi"), t)
        .is_pass());
    let hit = (100..300u64)
        .find(|&id| {
            let v = e.on_message(Side::Client, "s", &call(id, "echo", "hi"), t);
            assert!(v.is_pass(), "latency acts on the answer");
            let pending = &e.sessions["s"].pending;
            pending
                .get(&crate::jsonrpc::Id::Num(id.to_string()))
                .is_some_and(|c| !c.response_hits.is_empty())
        })
        .expect("half the echo calls are slowed");
    let answer = |id: u64| format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#).into_bytes();
    assert!(!e.passes(Side::Server, "s", &answer(hit), t));
    let missed = (100..hit).chain([5]).find(|&id| {
        e.sessions["s"]
            .pending
            .get(&crate::jsonrpc::Id::Num(id.to_string()))
            .is_some_and(|c| c.response_hits.is_empty())
    });
    if let Some(id) = missed {
        assert!(e.passes(Side::Server, "s", &answer(id), t));
    }
    // Loose messages: by direction and method.
    let progress = br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#;
    assert!(!e.passes(Side::Server, "s", progress, t));
    assert!(e.passes(Side::Client, "s", progress, t));
    // Batches are decided; an expired session is never passed.
    assert!(!e.passes(Side::Client, "s", br#"[{"jsonrpc":"2.0","method":"x"}]"#, t));
    e.sessions.get_mut("s").expect("session").expired = Some(no_answer);
    assert!(!e.passes(Side::Client, "s", &call(1, "other", "hi"), t));
    assert!(!e.untouched("s"));
    e.set_plan(plan("faults: []"));
    assert!(e.passes(Side::Client, "t", &call(1, "echo", "never"), t));
    assert!(!e.passes(Side::Client, "s", &call(1, "echo", "never"), t));
}
