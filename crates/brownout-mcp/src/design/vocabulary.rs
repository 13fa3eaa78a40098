//! The words that map a goal in English to scenarios: a fixed, documented table of phrases
//! (docs/design.md has it), matched without a model. A goal is lower-cased and split into
//! words; a phrase matches a run of consecutive words, each starting with the phrase's
//! stem and at most a few letters longer (`kill` matches `killed` and `kills`, not
//! `killjoy-mode`). The result names every phrase that matched, by the goal's own words.

use super::Scenario;

/// Letters an inflected word may add to a stem (`retri` → `retries`).
const MAX_SUFFIX: usize = 4;

/// Each scenario's phrases: space-separated stems.
pub const VOCABULARY: &[(Scenario, &[&str])] = &[
    (
        Scenario::SlowDependency,
        &[
            "slow", "latenc", "delay", "lag", "sluggish", "tail", "p99", "p95", "hang",
        ],
    ),
    (
        Scenario::ErrorBurst,
        &[
            "error",
            "burst",
            "flak",
            "intermittent",
            "5xx",
            "fail",
            "glitch",
            "blip",
        ],
    ),
    (
        Scenario::RateLimit,
        &[
            "rate limit",
            "throttl",
            "429",
            "quota",
            "rate cap",
            "too many request",
        ],
    ),
    (
        Scenario::PoolExhaustion,
        &[
            "pool",
            "exhaust",
            "saturat",
            "starv",
            "overload",
            "capacity",
            "concurren",
            "queue",
        ],
    ),
    (
        Scenario::RetryStorm,
        &[
            "retry",
            "retri",
            "storm",
            "thundering herd",
            "backoff",
            "amplif",
            "self dos",
            "cascad",
        ],
    ),
    (
        Scenario::ProcessKill,
        &[
            "kill", "crash", "die", "dies", "dead", "restart", "oom", "sigkill", "process",
            "reboot", "exit",
        ],
    ),
    (
        Scenario::SchemaDrift,
        &[
            "schema",
            "drift",
            "contract",
            "breaking change",
            "renam",
            "retyp",
            "field",
            "format change",
        ],
    ),
    (
        Scenario::SilentCorruption,
        &[
            "wrong",
            "corrupt",
            "subtl",
            "silent",
            "incorrect",
            "bad data",
            "bogus",
            "inaccura",
            "lie",
            "lying",
            "hallucinat",
            "plausible",
        ],
    ),
    (
        Scenario::RegistryStale,
        &[
            "registry",
            "stale",
            "tool list",
            "list changed",
            "missing tool",
            "disappear",
            "discover",
            "catalog",
            "hidden",
        ],
    ),
    (
        Scenario::DependencyOutage,
        &[
            "outage",
            "down",
            "unavailab",
            "upstream",
            "dependenc",
            "offline",
            "unreachab",
            "503",
            "partition",
        ],
    ),
];

/// One scenario a goal asked for, with the goal's words that matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    pub scenario: Scenario,
    pub words: Vec<String>,
}

/// The goal's words: lower-case runs of letters and digits.
fn split(goal: &str) -> Vec<String> {
    goal.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(String::from)
        .collect()
}

fn word_matches(word: &str, stem: &str) -> bool {
    word.starts_with(stem) && word.len() <= stem.len() + MAX_SUFFIX
}

/// The scenarios a goal asks for, in the table's order, each with the words that matched.
pub fn matches(goal: &str) -> Vec<Match> {
    let words = split(goal);
    let mut out = Vec::new();
    for (scenario, phrases) in VOCABULARY {
        let mut hit: Vec<String> = Vec::new();
        for phrase in *phrases {
            let stems: Vec<&str> = phrase.split(' ').collect();
            for start in 0..words.len() {
                let run = words.get(start..start + stems.len());
                if let Some(run) = run {
                    if run.iter().zip(&stems).all(|(w, s)| word_matches(w, s)) {
                        let text = run.join(" ");
                        if !hit.contains(&text) {
                            hit.push(text);
                        }
                    }
                }
            }
        }
        if !hit.is_empty() {
            out.push(Match {
                scenario: *scenario,
                words: hit,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(goal: &str) -> Vec<&'static str> {
        matches(goal).iter().map(|m| m.scenario.name()).collect()
    }

    #[test]
    fn the_issues_goals_ask_for_distinct_scenarios() {
        assert_eq!(
            names("pool exhaustion with retry storm"),
            ["pool_exhaustion", "retry_storm"]
        );
        assert_eq!(names("the server gets killed"), ["process_kill"]);
        assert_eq!(names("rate limiting"), ["rate_limit"]);
        assert_eq!(
            names("tools return subtly wrong data"),
            ["silent_corruption"]
        );
        let m = matches("Pool exhaustion with RETRY storms");
        assert_eq!(m[0].words, ["pool", "exhaustion"]);
        assert_eq!(m[1].words, ["retry", "storms"]);
    }

    #[test]
    fn stems_do_not_match_longer_unrelated_words() {
        assert!(names("downloads of killswitches").is_empty());
        assert!(names("tools return data").is_empty(), "return is no retry");
        assert!(names("").is_empty());
        assert!(names("what happens?").is_empty());
    }

    /// docs/design.md's vocabulary table lists every phrase of every scenario.
    #[test]
    fn the_documented_vocabulary_is_this_one() {
        let doc =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/design.md"))
                .expect("docs/design.md");
        for (s, phrases) in VOCABULARY {
            let row = doc
                .lines()
                // The vocabulary table comes before the parameters' table.
                .find(|l| l.starts_with(&format!("| `{}` | ", s.name())))
                .unwrap_or_else(|| panic!("no vocabulary row for {}", s.name()));
            let listed: Vec<&str> = row
                .split('|')
                .nth(2)
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .collect();
            assert_eq!(listed, *phrases, "{}", s.name());
        }
    }

    #[test]
    fn every_scenario_has_words() {
        for s in Scenario::ALL {
            assert!(
                VOCABULARY.iter().any(|(v, w)| v == s && !w.is_empty()),
                "{}",
                s.name()
            );
        }
    }
}
