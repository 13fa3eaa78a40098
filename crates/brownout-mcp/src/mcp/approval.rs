//! A person approves every live run. Where the client supports elicitation (form mode) the
//! server asks the client's user directly; otherwise it issues a one-time code that only the
//! operator sees (printed on brownout's stderr, and appended to `--approvals FILE` when
//! given) and that the agent must pass back with the same experiment. The code is bound to
//! the resolved experiment (binding.rs: the exact text, the seed, every file it names, the
//! policy — kept and compared whole, not by a hash a search could collide): a code for one
//! experiment never starts another, nor the same text once a file it names was rewritten.
//! It is used once and expires. There is no argument a model can set to approve by itself.

use super::binding::Resolved;
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

/// How long a code stays valid.
pub const CODE_TTL: Duration = Duration::from_secs(600);
/// The most codes pending at once (oldest dropped first).
const MAX_PENDING: usize = 32;
/// Wrong codes tolerated for one experiment before its pending code is withdrawn.
const MAX_TRIES: u32 = 3;

struct Pending {
    code: String,
    /// What the code approves.
    approved: Resolved,
    issued: Instant,
    tries: u32,
}

/// The pending codes, by what the agent sends (the text and the seed: [`Resolved::key`]).
pub struct Approvals {
    pending: Mutex<HashMap<String, Pending>>,
    /// Multi-round-trip approvals asked and not yet answered: nonce → (what, issued).
    asked: Mutex<HashMap<String, (Resolved, Instant)>>,
    /// Where codes are also written for the operator (besides stderr).
    file: Option<PathBuf>,
}

/// Whether a code was printed now or one is already waiting for this experiment.
#[derive(Debug, PartialEq, Eq)]
pub enum Issued {
    New,
    AlreadyPending,
}

/// What a code check found.
#[derive(Debug, PartialEq, Eq)]
pub enum Check {
    Approved,
    /// No code is pending for this experiment (never issued, used, or expired).
    NonePending,
    Wrong,
    /// The right code, but what it approved has changed since (these parts): withdrawn.
    Changed(Vec<String>),
}

impl Approvals {
    pub fn new(file: Option<PathBuf>) -> Approvals {
        Approvals {
            pending: Mutex::new(HashMap::new()),
            asked: Mutex::new(HashMap::new()),
            file,
        }
    }

    /// Issue a code for an experiment and show it to the operator (never to the client).
    /// `what` describes the experiment (target, faults, stages), already cleaned.
    /// `x` is the resolved experiment (its key: text and seed); `digest` only names it to
    /// people.
    pub fn issue(
        &self,
        x: &Resolved,
        digest: &str,
        what: &str,
        session: &str,
    ) -> Result<Issued, String> {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        p.retain(|_, v| v.issued.elapsed() < CODE_TTL);
        // One code per experiment at a time: asking again never replaces the code a person
        // may be reading.
        let key = x.key();
        if p.get(&key).is_some_and(|v| v.approved == *x) {
            return Ok(Issued::AlreadyPending);
        }
        // Full: refuse the new request rather than drop a code a person may be reading.
        if !p.contains_key(&key) && p.len() >= MAX_PENDING {
            return Err(format!(
                "{MAX_PENDING} approvals are already pending; try again when they are used or expire"
            ));
        }
        let mut b = [0u8; 8];
        getrandom::fill(&mut b).map_err(|e| format!("no randomness for a code: {e}"))?;
        let n = u64::from_le_bytes(b) % 1_000_000_000;
        let code = format!(
            "{:03}-{:03}-{:03}",
            n / 1_000_000,
            n / 1000 % 1000,
            n % 1000
        );
        let line = format!(
            "brownout mcp: approval requested by session {session} for {what} [{digest}]: code {code} (valid {} min; give it to the agent only if you approve)",
            CODE_TTL.as_secs() / 60
        );
        eprintln!("{line}");
        if let Some(f) = &self.file {
            use std::os::unix::fs::OpenOptionsExt;
            let r = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(f)
                .and_then(|mut h| writeln!(h, "{line}"));
            if let Err(e) = r {
                eprintln!("brownout mcp: warning: cannot write {}: {e}", f.display());
            }
        }
        // A pending code for the same text and seed but other files is replaced: it could
        // only ever be refused.
        p.insert(
            key,
            Pending {
                code,
                approved: x.clone(),
                issued: Instant::now(),
                tries: 0,
            },
        );
        Ok(Issued::New)
    }

    /// Check (and on success consume) the code given for an experiment as resolved now.
    pub fn check(&self, now: &Resolved, given: &str) -> Check {
        let key = now.key();
        let digest = key.as_str();
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let Some(entry) = p.get_mut(digest).filter(|e| e.issued.elapsed() < CODE_TTL) else {
            p.remove(digest);
            return Check::NonePending;
        };
        let norm = |s: &str| s.chars().filter(char::is_ascii_digit).collect::<String>();
        let ok: bool = norm(&entry.code)
            .as_bytes()
            .ct_eq(norm(given).as_bytes())
            .into();
        if ok {
            let changed = now.changed_since(&entry.approved);
            p.remove(digest);
            if !changed.is_empty() {
                return Check::Changed(changed);
            }
            return Check::Approved;
        }
        entry.tries += 1;
        if entry.tries >= MAX_TRIES {
            p.remove(digest);
        }
        Check::Wrong
    }

    /// A fresh, unguessable request state for a multi-round-trip approval of `x`: the
    /// answer is taken only with it, once, so a client cannot skip the question.
    pub fn ask(&self, x: &Resolved) -> Result<String, String> {
        let mut b = [0u8; 16];
        getrandom::fill(&mut b).map_err(|e| format!("no randomness for a request state: {e}"))?;
        let nonce: String = b.iter().map(|x| format!("{x:02x}")).collect();
        let mut a = self.asked.lock().unwrap_or_else(|e| e.into_inner());
        a.retain(|_, (_, t)| t.elapsed() < CODE_TTL);
        if a.len() >= MAX_PENDING {
            if let Some(old) = a
                .iter()
                .min_by_key(|(_, (_, t))| *t)
                .map(|(k, _)| k.clone())
            {
                a.remove(&old);
            }
        }
        a.insert(nonce.clone(), (x.clone(), Instant::now()));
        Ok(nonce)
    }

    /// What `nonce` was issued for, if for the same text and seed as `now` (and still
    /// valid); consumed either way. The caller compares the files.
    pub fn answered(&self, nonce: &str, now: &Resolved) -> Option<Resolved> {
        let mut a = self.asked.lock().unwrap_or_else(|e| e.into_inner());
        a.remove(nonce)
            .filter(|(x, t)| x.key() == now.key() && t.elapsed() < CODE_TTL)
            .map(|(x, _)| x)
    }

    /// The pending code for a digest (tests read it as the operator would from stderr).
    #[cfg(test)]
    fn code(&self, digest: &str) -> Option<String> {
        let p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        p.get(digest).map(|e| e.code.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn x(text: &str) -> Resolved {
        Resolved {
            text: text.into(),
            seed: None,
            files: vec![("f.yaml".into(), b"faults: []".to_vec())],
            policy: "{}".into(),
        }
    }

    #[test]
    fn a_code_approves_its_own_experiment_once() {
        let a = Approvals::new(None);
        a.issue(&x("d1"), "x1", "t", "s").expect("issue");
        a.issue(&x("d2"), "x2", "t2", "s").expect("issue");
        let c1 = a.code(&x("d1").key()).expect("pending");
        assert_eq!(
            a.check(&x("d2"), &c1),
            Check::Wrong,
            "another experiment's code"
        );
        assert_eq!(a.check(&x("d1"), &c1), Check::Approved);
        assert_eq!(a.check(&x("d1"), &c1), Check::NonePending, "used once");
    }

    #[test]
    fn a_code_does_not_approve_rewritten_files_or_another_seed() {
        let a = Approvals::new(None);
        a.issue(&x("d"), "x", "t", "s").expect("issue");
        let c = a.code(&x("d").key()).expect("pending");
        let mut seeded = x("d");
        seeded.seed = Some(7);
        assert_eq!(a.check(&seeded, &c), Check::NonePending, "another seed");
        let mut rewritten = x("d");
        rewritten.files[0].1 = b"faults: [{kind: error}]".to_vec();
        assert_eq!(
            a.check(&rewritten, &c),
            Check::Changed(vec!["the file `f.yaml`".into()])
        );
        assert_eq!(a.check(&x("d"), &c), Check::NonePending, "withdrawn");
    }

    #[test]
    fn a_round_trip_answer_needs_the_state_it_was_asked_with() {
        let a = Approvals::new(None);
        let n = a.ask(&x("d")).expect("ask");
        assert!(a.answered("forged", &x("d")).is_none());
        assert!(
            a.answered(&n, &x("other")).is_none(),
            "bound to its experiment"
        );
        let n = a.ask(&x("d")).expect("ask");
        assert_eq!(a.answered(&n, &x("d")), Some(x("d")));
        assert!(a.answered(&n, &x("d")).is_none(), "used once");
    }

    #[test]
    fn wrong_guesses_withdraw_the_code() {
        let a = Approvals::new(None);
        a.issue(&x("d"), "x", "t", "s").expect("issue");
        let k = x("d").key();
        let c = a.code(&k).expect("pending");
        assert_eq!(
            a.issue(&x("d"), "x", "t", "s"),
            Ok(Issued::AlreadyPending),
            "never replaced"
        );
        assert_eq!(a.code(&k), Some(c.clone()));
        for _ in 0..MAX_TRIES {
            assert_eq!(a.check(&x("d"), "000-000-000"), Check::Wrong);
        }
        assert_eq!(a.check(&x("d"), &c), Check::NonePending);
    }
}
