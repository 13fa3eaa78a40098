//! Which relays a stage reaches: every relay present is ranked by a seeded hash of its admin
//! address (`mix(seed ^ fnv(admin))`), and a stage at `relays: S` takes the first
//! `max(1, ⌊S × n⌋)` — never more than the share says, at least one. The rank depends on the
//! seed and the address alone, so the same seed reaches the same relays at every run, and a
//! wider stage reaches a superset of a narrower one.

use brownout_core::rng::{hash_str, mix};

/// How many of `n` relays a share reaches: the most not above the share, at least one.
pub fn how_many(share: f64, n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    ((share * n as f64 + 1e-9).floor() as usize).clamp(1, n)
}

/// The admin addresses a stage at `share` reaches among `admins`, for `seed`.
pub fn chosen(seed: u64, share: f64, admins: &[&str]) -> Vec<String> {
    let mut ranked: Vec<(u64, &str)> = admins
        .iter()
        .map(|a| (mix(seed ^ hash_str(a)), *a))
        .collect();
    ranked.sort();
    ranked
        .into_iter()
        .take(how_many(share, admins.len()))
        .map(|(_, a)| a.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_of_relays_is_at_most_the_share_and_at_least_one() {
        assert_eq!(how_many(0.34, 3), 1);
        assert_eq!(how_many(0.67, 3), 2);
        assert_eq!(how_many(1.0, 3), 3);
        assert_eq!(how_many(0.01, 8), 1);
        assert_eq!(how_many(0.5, 8), 4);
        assert_eq!(how_many(0.5, 0), 0);
    }

    #[test]
    fn the_seed_picks_the_relays_stably_and_wider_stages_reach_a_superset() {
        let admins: Vec<String> = (1..=8).map(|i| format!("http://10.0.0.{i}:9901")).collect();
        let refs: Vec<&str> = admins.iter().map(String::as_str).collect();
        let a = chosen(7, 0.25, &refs);
        assert_eq!(a, chosen(7, 0.25, &refs), "a seed replays");
        let mut shuffled = refs.clone();
        shuffled.reverse();
        assert_eq!(
            a,
            chosen(7, 0.25, &shuffled),
            "the order they are listed in is moot"
        );
        let wide = chosen(7, 0.5, &refs);
        assert!(a.iter().all(|x| wide.contains(x)), "{a:?} ⊄ {wide:?}");
        // Some seed picks otherwise: the choice is the seed's, not the list's.
        assert!((0..50).any(|s| chosen(s, 0.25, &refs) != a));
    }
}
