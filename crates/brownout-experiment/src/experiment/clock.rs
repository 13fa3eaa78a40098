//! The wall clock, for what outlives the run: journals' timestamps, leases on a remote
//! relay, the `--status` file. (Time inside a run is measured from its own origin.)

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in Unix milliseconds.
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
