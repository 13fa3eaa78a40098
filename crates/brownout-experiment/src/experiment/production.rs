//! Production marks outside experiments: `brownout proxy` refuses to start in an
//! environment marked production (`BROWNOUT_ENV`, or `--label KEY=VALUE` matching the
//! policy's `production_labels`) unless the operator says `--i-know-this-is-production`,
//! as an experiment with such a label is refused.

use super::policy::{check_labels, Policy};
use std::collections::BTreeMap;

/// Why the relay will not start.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ProductionError {
    #[error("--label `{0}` is not KEY=VALUE")]
    BadLabel(String),
    #[error("{0}; refusing to start: this environment is marked production. Pass --i-know-this-is-production to inject faults here anyway")]
    Production(String),
}

/// The labels of the environment: `--label`s, and `env` from `BROWNOUT_ENV` unless a
/// label already names `env`.
pub fn labels(
    given: &[String],
    brownout_env: Option<&str>,
) -> Result<BTreeMap<String, String>, ProductionError> {
    let mut out = BTreeMap::new();
    for l in given {
        let Some((k, v)) = l.split_once('=').filter(|(k, _)| !k.trim().is_empty()) else {
            return Err(ProductionError::BadLabel(l.clone()));
        };
        out.insert(k.trim().to_string(), v.trim().to_string());
    }
    if let Some(e) = brownout_env.map(str::trim).filter(|e| !e.is_empty()) {
        out.entry("env".to_string())
            .or_insert_with(|| e.to_string());
    }
    Ok(out)
}

/// Refuse an environment marked production (by the default policy's labels) unless the
/// operator overrode it; a warning on stderr when overridden.
pub fn refuse_unless_overridden(
    given: &[String],
    brownout_env: Option<&str>,
    i_know: bool,
) -> Result<(), ProductionError> {
    let labels = labels(given, brownout_env)?;
    match check_labels(&labels, &Policy::default()) {
        Ok(()) => Ok(()),
        Err(r) if i_know => {
            eprintln!(
                "brownout: warning: {}; starting anyway (--i-know-this-is-production)",
                r.detail
            );
            Ok(())
        }
        Err(r) => Err(ProductionError::Production(r.detail)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn production_marks_refuse_unless_overridden() {
        assert!(refuse_unless_overridden(&[], None, false).is_ok());
        assert!(refuse_unless_overridden(&[], Some("staging"), false).is_ok());
        let e = refuse_unless_overridden(&[], Some("Production"), false).expect_err("env");
        assert!(e.to_string().contains("--i-know-this-is-production"), "{e}");
        assert!(refuse_unless_overridden(&["cluster=prod-eu".into()], None, false).is_err());
        assert!(refuse_unless_overridden(&["cluster=prod-eu".into()], None, true).is_ok());
        assert_eq!(
            refuse_unless_overridden(&["oops".into()], None, true),
            Err(ProductionError::BadLabel("oops".into()))
        );
    }
}
