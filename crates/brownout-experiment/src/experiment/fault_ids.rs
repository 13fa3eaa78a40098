//! The ids a run gives the faults it puts on a relay: `<plan id>--brownout-run-<seed>-<run
//! id>`. One id per fault for the whole run (renewals keep its state); the run id keeps two
//! runs with one seed apart (neither renews, removes or counts the other's fault); the
//! relay draws a fault's randomness from the id without the run id
//! (`brownout_core::plan::ids::stream_name`), so a seed replays on the same relay.

/// The most characters a run adds to a fault's id (`--brownout-run-`, a seed of up to 20
/// digits, `-`, a run id of up to 64): a plan id must leave room for them within the
/// relay's limit (`brownout_core::plan::MAX_ID_CHARS`).
pub const MAX_SUFFIX: usize = 15 + 20 + 1 + 64;

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

    #[test]
    fn a_plan_id_leaves_room_for_the_runs_suffix() {
        let most = brownout_core::plan::MAX_ID_CHARS - MAX_SUFFIX;
        let longest = fault_id(&"x".repeat(most), u64::MAX, &id_part(&"r".repeat(300)));
        assert_eq!(longest.chars().count(), brownout_core::plan::MAX_ID_CHARS);
        let exp = |id_len: usize| {
            let text = format!(
                "title: t\ntarget: {{fleet: [{{url: \"http://127.0.0.1:8900/mcp\", admin: \"http://127.0.0.1:9901\"}}]}}\nload: {{workload: {{steps: [{{calls: [{{tool: echo}}]}}]}}}}\nmethod: [{{stage: a, duration: 1s, sessions: 10%}}]\nfaults: [{{id: {}, kind: drop}}]\ngates: [\"error_rate < 1% over 1s\"]\n",
                "f".repeat(id_len)
            );
            crate::experiment::load::load_text(&text, "x.yaml", std::path::Path::new("."))
        };
        assert!(exp(most).is_ok());
        let Err(e) = exp(most + 1) else {
            panic!("a {}-character id was not refused", most + 1)
        };
        let text = format!("{e:?}");
        assert!(text.contains(&format!("at most {most}")), "{text}");
    }
}
