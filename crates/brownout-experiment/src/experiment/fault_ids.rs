//! The ids a run gives the faults it puts on a relay: `<plan id>--brownout-run-<seed>-<run
//! id>`. One id per fault for the whole run (renewals keep its state); the run id keeps two
//! runs with one seed apart (neither renews, removes or counts the other's fault); the
//! relay draws a fault's randomness from the id without the run id
//! (`brownout_core::plan::ids::stream_name`), so a seed replays on the same relay.

/// A run id as it goes into a fault id: letters, digits, `.` and `_` (anything else
/// becomes `_`), at most 64 of them.
pub fn id_part(run: &str) -> String {
    run.chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The id a run gives its fault `own` on a relay: `<own>--brownout-run-<seed>-<run>`.
pub fn fault_id(own: &str, seed: u64, run: &str) -> String {
    format!("{own}--brownout-run-{seed}-{run}")
}

/// Whether `id` is one of the run `run`'s faults (a [`fault_id`]); its own id if so.
pub fn own_of<'a>(id: &'a str, run: &str) -> Option<&'a str> {
    let rest = id.strip_suffix(run)?.strip_suffix('-')?;
    let (own, seed) = rest.rsplit_once("--brownout-run-")?;
    (!seed.is_empty() && seed.bytes().all(|b| b.is_ascii_digit())).then_some(own)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_id_carries_the_run_and_reads_back() {
        let run = id_part("20261127T045249Z-1a2b3c4d");
        assert_eq!(run, "20261127T045249Z_1a2b3c4d");
        let id = fault_id("search-down", 7, &run);
        assert_eq!(id, "search-down--brownout-run-7-20261127T045249Z_1a2b3c4d");
        assert_eq!(own_of(&id, &run), Some("search-down"));
        assert_eq!(
            own_of(&id, "20261127T045249Z_00000000"),
            None,
            "another run's"
        );
        assert_eq!(own_of("search-down--brownout-run-7", &run), None);
        assert_eq!(id_part("a/b c"), "a_b_c");
    }
}
