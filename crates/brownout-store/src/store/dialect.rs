//! Every difference between the SQLite and the PostgreSQL SQL the store writes, in one
//! place: parameters (`?1` vs `$1`), column types, `INSERT OR IGNORE` vs `ON CONFLICT DO
//! NOTHING`, two-argument `min`/`max` vs `LEAST`/`GREATEST`, and reading JSON
//! (`json_extract`/`json_each` vs `jsonb` operators). The store's own SQL is written once,
//! in SQLite's form with `?N` parameters, and [`Dialect::sql`] rewrites it for PostgreSQL.

use std::borrow::Cow;

/// Which SQL a backend speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// What an insert does when the row's key is there already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conflict {
    /// An error (the row must be new).
    Fail,
    /// Keep the row there.
    Ignore,
    /// `experiments`: keep the latest file and widen first/last.
    Experiment,
}

impl Dialect {
    /// The store's SQL (SQLite's form, `?N` parameters) for this backend.
    pub fn sql(self, sqlite: &str) -> Cow<'_, str> {
        match self {
            Dialect::Sqlite => Cow::Borrowed(sqlite),
            Dialect::Postgres => {
                let mut out = String::with_capacity(sqlite.len());
                let mut chars = sqlite.chars().peekable();
                while let Some(c) = chars.next() {
                    if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
                        out.push('$');
                    } else {
                        out.push(c);
                    }
                }
                Cow::Owned(out)
            }
        }
    }

    /// The schema's DDL (written for SQLite) for this backend: PostgreSQL's integers are
    /// 64-bit `BIGINT` (times are Unix milliseconds) and its reals `DOUBLE PRECISION`.
    pub fn ddl(self, sqlite: &str) -> String {
        match self {
            Dialect::Sqlite => sqlite.to_string(),
            Dialect::Postgres => sqlite
                .lines()
                .map(|l| {
                    l.replace(" INTEGER", " BIGINT")
                        .replace(" REAL", " DOUBLE PRECISION")
                })
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    /// `INSERT INTO table VALUES (…n parameters…)` with the conflict rule.
    pub fn insert(self, table: &str, n: usize, conflict: Conflict) -> String {
        let p = if self == Dialect::Sqlite { '?' } else { '$' };
        let params: Vec<String> = (1..=n).map(|k| format!("{p}{k}")).collect();
        let values = params.join(",");
        let (min, max) = match self {
            Dialect::Sqlite => ("min", "max"),
            Dialect::Postgres => ("LEAST", "GREATEST"),
        };
        match (self, conflict) {
            (_, Conflict::Fail) => format!("INSERT INTO {table} VALUES ({values})"),
            (Dialect::Sqlite, Conflict::Ignore) => {
                format!("INSERT OR IGNORE INTO {table} VALUES ({values})")
            }
            (Dialect::Postgres, Conflict::Ignore) => {
                format!("INSERT INTO {table} VALUES ({values}) ON CONFLICT DO NOTHING")
            }
            (_, Conflict::Experiment) => format!(
                "INSERT INTO {table} VALUES ({values}) ON CONFLICT(name) DO UPDATE SET \
                 file = CASE WHEN excluded.last_unix_ms >= {table}.last_unix_ms \
                   THEN excluded.file ELSE {table}.file END, \
                 first_unix_ms = {min}({table}.first_unix_ms, excluded.first_unix_ms), \
                 last_unix_ms = {max}({table}.last_unix_ms, excluded.last_unix_ms)"
            ),
        }
    }

    /// A number in the stored journal JSON (`journals.json`, text) at a path of keys.
    pub fn json_number(self, column: &str, keys: &[&str]) -> String {
        match self {
            Dialect::Sqlite => format!("json_extract({column}, '$.{}')", keys.join(".")),
            Dialect::Postgres => format!(
                "(CASE WHEN jsonb_typeof({column}::jsonb #> '{{{k}}}') = 'number' \
                 THEN ({column}::jsonb #>> '{{{k}}}')::float8 END)",
                k = keys.join(",")
            ),
        }
    }

    /// `FROM` items giving each text element (`t.value`) of a JSON array in the stored
    /// journal at a path of keys, for each row of `journals j`.
    pub fn json_texts(self, column: &str, keys: &[&str]) -> String {
        match self {
            Dialect::Sqlite => format!(
                "json_each(json_extract({column}, '$.{}')) t",
                keys.join(".")
            ),
            Dialect::Postgres => format!(
                "LATERAL (SELECT e #>> '{{}}' AS value FROM jsonb_array_elements(\
                   CASE WHEN jsonb_typeof({column}::jsonb #> '{{{k}}}') = 'array' \
                   THEN {column}::jsonb #> '{{{k}}}' ELSE '[]'::jsonb END) AS x(e) \
                 WHERE jsonb_typeof(e) = 'string') t",
                k = keys.join(",")
            ),
        }
    }

    /// The condition that `t` (from [`Dialect::json_texts`]) is a text element.
    pub fn json_text_filter(self) -> &'static str {
        match self {
            Dialect::Sqlite => "t.type = 'text'",
            Dialect::Postgres => "TRUE",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_gets_dollar_parameters_wide_types_and_on_conflict() {
        assert_eq!(
            Dialect::Postgres.sql("SELECT ?1 WHERE x = '?' AND y = ?12"),
            "SELECT $1 WHERE x = '?' AND y = $12"
        );
        assert_eq!(Dialect::Sqlite.sql("SELECT ?1"), "SELECT ?1");
        let ddl = Dialect::Postgres.ddl("CREATE TABLE t (\n a INTEGER NOT NULL,\n b REAL\n);");
        assert!(ddl.contains("a BIGINT NOT NULL") && ddl.contains("b DOUBLE PRECISION"));
        assert_eq!(
            Dialect::Postgres.insert("labels", 3, Conflict::Ignore),
            "INSERT INTO labels VALUES ($1,$2,$3) ON CONFLICT DO NOTHING"
        );
        assert!(Dialect::Postgres
            .insert("experiments", 4, Conflict::Experiment)
            .contains("GREATEST"));
    }
}
