//! Engine time: microseconds since the start of a run, supplied by the driver.
//!
//! The engine never reads a clock. The live relay passes the elapsed wall time; the
//! simulator passes virtual time. Both are plain `u64` microseconds wrapped in [`Time`].

use std::fmt;
use std::ops::{Add, Sub};

/// A point in run time, in microseconds since the run started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(pub u64);

impl Time {
    pub const ZERO: Time = Time(0);

    pub fn from_millis(ms: u64) -> Time {
        Time(ms.saturating_mul(1000))
    }

    pub fn from_secs_f64(s: f64) -> Time {
        Time((s.max(0.0) * 1e6) as u64)
    }

    pub fn as_micros(self) -> u64 {
        self.0
    }

    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / 1000.0
    }

    pub fn saturating_sub(self, other: Time) -> Time {
        Time(self.0.saturating_sub(other.0))
    }
}

impl Add for Time {
    type Output = Time;
    fn add(self, rhs: Time) -> Time {
        Time(self.0.saturating_add(rhs.0))
    }
}

impl Sub for Time {
    type Output = Time;
    fn sub(self, rhs: Time) -> Time {
        self.saturating_sub(rhs)
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3}ms", self.as_millis_f64())
    }
}
