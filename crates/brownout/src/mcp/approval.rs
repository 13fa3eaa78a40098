//! A person approves every live run. Where the client supports elicitation (form mode) the
//! server asks the client's user directly; otherwise it issues a one-time code that only the
//! operator sees (printed on brownout's stderr, and appended to `--approvals FILE` when
//! given) and that the agent must pass back with the same experiment. The code is bound to
//! the experiment's exact text (kept and compared whole, not by a hash a search could
//! collide): a code for one experiment never starts another. It is
//! used once and expires. There is no argument a model can set to approve by itself.

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
    issued: Instant,
    tries: u32,
}

/// The pending codes, by the experiment's whole text.
pub struct Approvals {
    pending: Mutex<HashMap<String, Pending>>,
    /// Multi-round-trip approvals asked and not yet answered: nonce → (text, issued).
    asked: Mutex<HashMap<String, (String, Instant)>>,
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
    /// `text` is the experiment's whole text (the key); `digest` only names it to people.
    pub fn issue(
        &self,
        text: &str,
        digest: &str,
        what: &str,
        session: &str,
    ) -> Result<Issued, String> {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        p.retain(|_, v| v.issued.elapsed() < CODE_TTL);
        // One code per experiment at a time: asking again never replaces the code a person
        // may be reading.
        if p.contains_key(text) {
            return Ok(Issued::AlreadyPending);
        }
        // Full: refuse the new request rather than drop a code a person may be reading.
        if p.len() >= MAX_PENDING {
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
        p.insert(
            text.to_string(),
            Pending {
                code,
                issued: Instant::now(),
                tries: 0,
            },
        );
        Ok(Issued::New)
    }

    /// Check (and on success consume) the code given for an experiment.
    pub fn check(&self, text: &str, given: &str) -> Check {
        let digest = text;
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
            p.remove(digest);
            return Check::Approved;
        }
        entry.tries += 1;
        if entry.tries >= MAX_TRIES {
            p.remove(digest);
        }
        Check::Wrong
    }

    /// A fresh, unguessable request state for a multi-round-trip approval of `text`: the
    /// answer is taken only with it, once, so a client cannot skip the question.
    pub fn ask(&self, text: &str) -> Result<String, String> {
        let digest = text;
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
        a.insert(nonce.clone(), (digest.to_string(), Instant::now()));
        Ok(nonce)
    }

    /// Whether `nonce` was issued for `text` (and still valid); consumed either way.
    pub fn answered(&self, nonce: &str, text: &str) -> bool {
        let digest = text;
        let mut a = self.asked.lock().unwrap_or_else(|e| e.into_inner());
        a.remove(nonce)
            .is_some_and(|(d, t)| d == digest && t.elapsed() < CODE_TTL)
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

    #[test]
    fn a_code_approves_its_own_experiment_once() {
        let a = Approvals::new(None);
        a.issue("d1", "x1", "t", "s").expect("issue");
        a.issue("d2", "x2", "t2", "s").expect("issue");
        let c1 = a.code("d1").expect("pending");
        assert_eq!(
            a.check("d2", &c1),
            Check::Wrong,
            "another experiment's code"
        );
        assert_eq!(a.check("d1", &c1), Check::Approved);
        assert_eq!(a.check("d1", &c1), Check::NonePending, "used once");
    }

    #[test]
    fn a_round_trip_answer_needs_the_state_it_was_asked_with() {
        let a = Approvals::new(None);
        let n = a.ask("d").expect("ask");
        assert!(!a.answered("forged", "d"));
        assert!(!a.answered(&n, "other"), "bound to its experiment");
        let n = a.ask("d").expect("ask");
        assert!(a.answered(&n, "d"));
        assert!(!a.answered(&n, "d"), "used once");
    }

    #[test]
    fn wrong_guesses_withdraw_the_code() {
        let a = Approvals::new(None);
        a.issue("d", "x", "t", "s").expect("issue");
        let c = a.code("d").expect("pending");
        assert_eq!(
            a.issue("d", "x", "t", "s"),
            Ok(Issued::AlreadyPending),
            "never replaced"
        );
        assert_eq!(a.code("d"), Some(c.clone()));
        for _ in 0..MAX_TRIES {
            assert_eq!(a.check("d", "000-000-000"), Check::Wrong);
        }
        assert_eq!(a.check("d", &c), Check::NonePending);
    }
}
