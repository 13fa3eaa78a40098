//! Leases: a renewal that comes after a fault's lease ran out answers that it lapsed,
//! whether the sweep had removed the fault yet or not.

use super::{Control, ControlError, Format};
use crate::relay::{Relay, RelayOptions};
use brownout_core::Plan;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn control() -> Control {
    let relay = Arc::new(Relay::new(Plan::empty(), &RelayOptions::default(), None));
    Control::new(relay, None, "plan.yaml").expect("control")
}

/// Past `ttl` from now (the test's subject: a lease that ran out).
fn past(ttl: Duration) {
    let until = Instant::now() + ttl + Duration::from_millis(1);
    while Instant::now() < until {
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_renewal_of_a_lease_that_ran_out_answers_lapsed_swept_or_not() {
    let c = control();
    let ttl = Duration::from_millis(5);
    c.add("{id: a, kind: drop}", Format::Yaml, Some(ttl))
        .expect("add");
    past(ttl);
    // Not swept yet: the old relay renewed it (the fault came back to life).
    assert!(matches!(
        c.renew("a", Duration::from_secs(3)),
        Err(ControlError::Lapsed(id)) if id == "a"
    ));
    assert!(
        c.list()["faults"].as_array().is_some_and(Vec::is_empty),
        "removed"
    );
    // Swept first: the same answer, not "no such fault".
    c.add("{id: b, kind: drop}", Format::Yaml, Some(ttl))
        .expect("add");
    past(ttl);
    assert_eq!(c.expire(Instant::now()), ["b"]);
    assert!(matches!(
        c.renew("b", Duration::from_secs(3)),
        Err(ControlError::Lapsed(_))
    ));
    // A fault never added is no such fault; one added again renews.
    assert!(matches!(
        c.renew("never", Duration::from_secs(3)),
        Err(ControlError::NoSuchFault(_))
    ));
    c.add(
        "{id: b, kind: drop}",
        Format::Yaml,
        Some(Duration::from_secs(30)),
    )
    .expect("add again");
    assert!(c.renew("b", Duration::from_secs(3)).is_ok());
}
