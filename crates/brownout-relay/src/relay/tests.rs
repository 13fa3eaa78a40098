//! Unit tests of the relay core: scheduled messages, held drops.

use super::*;
use brownout_core::verdict::Verdict;

#[tokio::test]
async fn messages_scheduled_for_later_are_counted_and_let_go() {
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(8);
    let pipe: Pipe = Pipe::new(tx, mpsc::channel(1).0, None);
    let before = scheduled();
    let v = Verdict {
        delay: Time::from_millis(50),
        ..Verdict::pass()
    };
    pipe.execute(v, b"late".to_vec()).await;
    assert!(scheduled() > before, "a delayed message holds a slot");
    assert_eq!(rx.recv().await.as_deref(), Some(&b"late"[..]));
    tokio::task::yield_now().await;
    assert_eq!(
        scheduled(),
        before,
        "the slot is let go once it is delivered"
    );
}

#[tokio::test]
async fn a_held_drop_keeps_the_way_open_for_the_hold_then_closes_it() {
    let (dest, mut rx) = mpsc::channel::<Vec<u8>>(4);
    let (origin, _origin_rx) = mpsc::channel::<Vec<u8>>(4);
    let pipe: Pipe = Pipe::new(dest, origin, None);
    let v = Verdict {
        forward: Forward::Drop,
        delay: Time(1_500_000),
        ..Verdict::pass()
    };
    pipe.execute(v, b"{}".to_vec()).await;
    drop(pipe);
    let early = tokio::time::timeout(Duration::from_millis(300), rx.recv()).await;
    assert!(
        early.is_err(),
        "nothing, not even the end, before the hold is over"
    );
    let end = tokio::time::timeout(Duration::from_secs(30), rx.recv()).await;
    assert_eq!(
        end.ok(),
        Some(None),
        "then dropped: the way closes, nothing was sent"
    );
}
