//! What a `--store` argument (or `BROWNOUT_STORE`) names: a SQLite file path, or a
//! PostgreSQL URL — never guessed. `postgres://…` and `postgresql://…` are PostgreSQL; any
//! other `scheme://…` is refused with the schemes brownout knows (before, such an argument
//! was taken as a path and made a folder named `postgres:` in the working directory);
//! anything else is a path.
//!
//! A URL's password is never shown: [`Location`]'s `Display` and every error print the URL
//! with the password replaced by `***` ([`redact`]).

use super::StoreError;
use std::fmt;
use std::path::{Path, PathBuf};

/// The schemes a store URL may have.
pub const SCHEMES: &[&str] = &["postgres", "postgresql"];

/// A `--store` argument, checked when the command line is read (clap's value parser).
pub fn parse_arg(s: &str) -> Result<PathBuf, String> {
    let p = PathBuf::from(s);
    Location::parse(&p).map_err(|e| e.to_string())?;
    Ok(p)
}

/// Where a store is.
#[derive(Clone, PartialEq, Eq)]
pub enum Location {
    /// One SQLite file (the embedded default).
    Sqlite(PathBuf),
    /// A PostgreSQL database (the URL as given, password included: never print it raw).
    Postgres(String),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Sqlite(p) => write!(f, "{}", p.display()),
            Location::Postgres(u) => f.write_str(&redact(u)),
        }
    }
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Sqlite(p) => write!(f, "Sqlite({})", p.display()),
            Location::Postgres(_) => write!(f, "Postgres({self})"),
        }
    }
}

impl Location {
    /// Read a store argument: a URL brownout understands, or a path.
    pub fn parse(arg: &Path) -> Result<Location, StoreError> {
        let Some(text) = arg.to_str() else {
            // Not UTF-8: not a URL, so a path.
            return Ok(Location::Sqlite(arg.to_path_buf()));
        };
        let Some((scheme, rest)) = split_scheme(text) else {
            return Ok(Location::Sqlite(arg.to_path_buf()));
        };
        let known = SCHEMES.iter().any(|s| s.eq_ignore_ascii_case(scheme));
        if known && rest.starts_with("//") {
            return Ok(Location::Postgres(text.to_string()));
        }
        if known || rest.starts_with("//") {
            return Err(StoreError::BadLocation(format!(
                "{:?} is not a store brownout understands: give a path to a SQLite file, or a \
                 URL {} (e.g. postgres://user@host:5432/brownout)",
                redact(text),
                SCHEMES
                    .iter()
                    .map(|s| format!("{s}://…"))
                    .collect::<Vec<_>>()
                    .join(" or ")
            )));
        }
        Ok(Location::Sqlite(arg.to_path_buf()))
    }

    /// The store named by `arg`, else by `BROWNOUT_STORE`, else the default SQLite file.
    pub fn resolve(arg: Option<&Path>) -> Result<Location, StoreError> {
        Location::parse(&arg.map_or_else(super::default_path, Path::to_path_buf))
    }

    /// A folder beside the store for brownout's own files (the MCP server's audit log): the
    /// SQLite file's folder, or the default data folder for a database server.
    pub fn local_dir(&self) -> PathBuf {
        match self {
            Location::Sqlite(p) => p.parent().map_or_else(PathBuf::new, Path::to_path_buf),
            Location::Postgres(_) => super::default_sqlite_path()
                .parent()
                .map_or_else(std::env::temp_dir, Path::to_path_buf),
        }
    }
}

/// `scheme` and what follows `scheme:`, when `text` starts like a URL: a letter, then
/// letters, digits, `+`, `-` or `.`, then `:`. One letter is not a scheme (a drive letter).
fn split_scheme(text: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = text.split_once(':')?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    let ok = first.is_ascii_alphabetic()
        && scheme.len() > 1
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    ok.then_some((scheme, rest))
}

/// The URL with its password (if any) replaced by `***`, in the authority
/// (`user:password@host`) and in a `password=` query parameter.
pub fn redact(url: &str) -> String {
    let mut out = url.to_string();
    if let Some(start) = out.find("://").map(|i| i + 3) {
        let end = out[start..]
            .find(['/', '?', '#'])
            .map_or(out.len(), |i| start + i);
        if let Some(at) = out[start..end].rfind('@').map(|i| start + i) {
            if let Some(colon) = out[start..at].find(':').map(|i| start + i) {
                out.replace_range(colon + 1..at, "***");
            }
        }
    }
    if let Some(q) = out.find('?') {
        let (head, query) = out.split_at(q + 1);
        let query = query
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                _ => kv.to_string(),
            })
            .collect::<Vec<_>>()
            .join("&");
        out = format!("{head}{query}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Location, StoreError> {
        Location::parse(Path::new(s))
    }

    #[test]
    fn paths_and_postgres_urls_are_told_apart_and_other_schemes_refused() {
        assert_eq!(
            parse("runs/journal.sqlite").ok(),
            Some(Location::Sqlite("runs/journal.sqlite".into()))
        );
        assert_eq!(
            parse("C:journal.sqlite").ok(),
            Some(Location::Sqlite("C:journal.sqlite".into()))
        );
        assert!(matches!(
            parse("postgres://u@h/db"),
            Ok(Location::Postgres(_))
        ));
        assert!(matches!(
            parse("POSTGRESQL://h/db"),
            Ok(Location::Postgres(_))
        ));
        for bad in [
            "mysql://h/db",
            "sqlite:///tmp/x",
            "postgres:db",
            "postgres:",
        ] {
            let e = parse(bad).expect_err(bad).to_string();
            assert!(e.contains("postgres://"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_password_is_never_shown() {
        assert_eq!(
            redact("postgres://alice:s3cret@db:5432/brownout"),
            "postgres://alice:***@db:5432/brownout"
        );
        assert_eq!(
            redact("postgres://db/brownout?user=a&password=s3cret&sslmode=require"),
            "postgres://db/brownout?user=a&password=***&sslmode=require"
        );
        assert_eq!(redact("postgres://alice@db/x"), "postgres://alice@db/x");
        let l = parse("postgres://alice:s3cret@db/x").expect("url");
        assert!(!format!("{l} {l:?}").contains("s3cret"));
        let e = parse("mysql://alice:s3cret@db/x").expect_err("refused");
        assert!(!e.to_string().contains("s3cret"), "{e}");
    }
}
