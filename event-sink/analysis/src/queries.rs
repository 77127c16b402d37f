//! The shipped query catalog: the `.sql` files of `deploy/clickhouse/queries/`, embedded
//! at build time, their typed parameters, and running one against ClickHouse.
//!
//! # Parameters
//!
//! A file declares each parameter in a header comment line,
//!
//! ```sql
//! -- param since DateTime = '1970-01-01 00:00:00': runs started at or after this time (UTC)
//! -- param run_id UUID: the run to show
//! ```
//!
//! (no default = required) and uses it as `{since:DateTime}`, the placeholder syntax of
//! current ClickHouse, so the same file runs there with `clickhouse-client
//! --param_since=...`. ClickHouse 18.16 has no server-side parameters, so this module
//! substitutes them itself: every value is parsed as its declared type first and only
//! the parsed value is written back as a literal (`toUUID('...')`, `toDateTime(<unix
//! seconds>)`, a decimal integer, or a quoted and escaped string). No text from the user
//! reaches the SQL unparsed. Only a `{` outside string literals, quoted identifiers and
//! comments opens a placeholder: `'{not a param}'` in the SQL stays as written.
//! `deploy/clickhouse/chdb_check.py` implements the same rules.
//!
//! This module never writes: the queries are `SELECT`s.

use std::collections::BTreeMap;
use std::fmt;

use chrono::{DateTime, NaiveDate, NaiveDateTime};
use clickhouse::Client;

use crate::table::Table;

/// Why a shipped query could not be prepared or run.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// No shipped query has this name.
    #[error("unknown query {name:?}; known: {known}")]
    UnknownQuery {
        /// The name asked for.
        name: String,
        /// The shipped queries' names, comma-separated.
        known: String,
    },
    /// A parameter the query does not declare.
    #[error("query {query} has no parameter {name:?}; it takes: {known}")]
    UnknownParam {
        /// The query.
        query: &'static str,
        /// The parameter given.
        name: String,
        /// The query's parameters, comma-separated.
        known: String,
    },
    /// A required parameter without a value.
    #[error("query {query} needs --param {name}=<{ty}>")]
    MissingParam {
        /// The query.
        query: &'static str,
        /// The parameter.
        name: &'static str,
        /// Its type.
        ty: ParamType,
    },
    /// A value that does not parse as the parameter's type.
    #[error("parameter {name}={value:?} is not a valid {ty}: {reason}")]
    InvalidParam {
        /// The parameter.
        name: String,
        /// The value given.
        value: String,
        /// Its type.
        ty: ParamType,
        /// Why the value does not parse.
        reason: String,
    },
    /// `--policy` names a policy no stored run has (in any time range).
    #[error("no stored run has policy {policy:?}; `bench-analysis query leaderboard` lists them")]
    UnknownPolicy {
        /// The policy asked for.
        policy: String,
    },
    /// A `.sql` file that breaks the conventions above (caught by the unit tests).
    #[error("query {query} is malformed: {reason}")]
    Malformed {
        /// The query.
        query: &'static str,
        /// The convention it breaks.
        reason: String,
    },
    /// ClickHouse refused the query or could not be reached.
    #[error("query {query} failed: {source}")]
    ClickHouse {
        /// The query.
        query: &'static str,
        /// The client's error.
        #[source]
        source: clickhouse::error::Error,
    },
    /// The answer was not the TabSeparatedWithNamesAndTypes text asked for.
    #[error("query {query} returned an unreadable answer: {reason}")]
    Response {
        /// The query.
        query: &'static str,
        /// What could not be read.
        reason: String,
    },
}

/// The type of a query parameter; each has one literal form (see module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    /// A UUID in any form the `uuid` crate parses.
    Uuid,
    /// Any UTF-8 text.
    String,
    /// `YYYY-MM-DD`, `YYYY-MM-DD HH:MM:SS` (UTC) or RFC 3339 with an offset.
    DateTime,
    /// A decimal integer in `0..=4294967295`.
    UInt32,
    /// A finite decimal number, e.g. `0.5` or `-1e-3`.
    Float64,
}

impl ParamType {
    fn parse(name: &str) -> Option<Self> {
        match name {
            "UUID" => Some(Self::Uuid),
            "String" => Some(Self::String),
            "DateTime" => Some(Self::DateTime),
            "UInt32" => Some(Self::UInt32),
            "Float64" => Some(Self::Float64),
            _ => None,
        }
    }

    /// The ClickHouse literal for `value`, or why `value` is not of this type.
    pub fn literal(self, value: &str) -> Result<String, String> {
        match self {
            Self::Uuid => uuid::Uuid::parse_str(value.trim())
                .map(|id| format!("toUUID('{}')", id.hyphenated()))
                .map_err(|e| e.to_string()),
            Self::String => Ok(quote_string(value)),
            Self::DateTime => parse_datetime(value).map(|secs| format!("toDateTime({secs})")),
            Self::UInt32 => value
                .trim()
                .parse::<u32>()
                .map(|n| n.to_string())
                .map_err(|e| e.to_string()),
            Self::Float64 => match value.trim().parse::<f64>() {
                Ok(x) if x.is_finite() => Ok(format!("toFloat64('{x}')")),
                Ok(x) => Err(format!("{x} is not finite")),
                Err(e) => Err(e.to_string()),
            },
        }
    }
}

impl fmt::Display for ParamType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Uuid => "UUID",
            Self::String => "String",
            Self::DateTime => "DateTime",
            Self::UInt32 => "UInt32",
            Self::Float64 => "Float64",
        })
    }
}

/// One declared parameter of a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// The name `--param <name>=` sets.
    pub name: &'static str,
    /// Its type.
    pub ty: ParamType,
    /// Used when no value is given; `None` = required.
    pub default: Option<&'static str>,
    /// What it means, from the declaration.
    pub help: &'static str,
}

/// One shipped query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Query {
    /// The file stem: `leaderboard` for `leaderboard.sql`.
    pub name: &'static str,
    /// The file's text.
    pub sql: &'static str,
}

macro_rules! query {
    ($name:literal) => {
        Query {
            name: $name,
            sql: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../deploy/clickhouse/queries/",
                $name,
                ".sql"
            )),
        }
    };
}

/// Every shipped query. A new file in `deploy/clickhouse/queries/` is added here (a unit
/// test checks the two lists agree).
pub const QUERIES: &[Query] = &[
    query!("leaderboard"),
    query!("exit_status"),
    query!("cost_breakdown"),
    query!("deliberation_latency"),
    query!("latency_histogram"),
    query!("pricing_audit"),
    query!("run_timeline"),
    query!("lost_events"),
    query!("tool_errors"),
    query!("pareto_frontier"),
    query!("runs"),
    query!("conflicts"),
    query!("sweep_trajectory"),
    query!("instances"),
    query!("paired_outcomes"),
    query!("run_outcomes"),
    query!("test_outcomes"),
    query!("swe_integrity"),
];

/// Parameter values by name, as given on the command line.
pub type ParamValues = BTreeMap<String, String>;

impl Query {
    /// The shipped query called `name`.
    pub fn find(name: &str) -> Result<Query, QueryError> {
        QUERIES
            .iter()
            .find(|q| q.name == name)
            .copied()
            .ok_or_else(|| QueryError::UnknownQuery {
                name: name.to_owned(),
                known: QUERIES
                    .iter()
                    .map(|q| q.name)
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// The first paragraph of the header comment (up to a bare `--` line, a parameter
    /// declaration or the SQL), its lines joined with spaces.
    pub fn description(&self) -> String {
        self.sql
            .lines()
            .map_while(|line| line.strip_prefix("--"))
            .map(str::trim)
            .take_while(|line| !line.is_empty() && !line.starts_with("param "))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The declared parameters, in file order.
    pub fn params(&self) -> Result<Vec<Param>, QueryError> {
        self.sql
            .lines()
            .filter_map(|line| line.strip_prefix("-- param "))
            .map(|decl| {
                parse_param(decl).ok_or_else(|| QueryError::Malformed {
                    query: self.name,
                    reason: format!("bad parameter declaration {decl:?}"),
                })
            })
            .collect()
    }

    /// The SQL with every `{name:Type}` replaced by the literal of its value (given, or
    /// the default).
    pub fn render(&self, values: &ParamValues) -> Result<String, QueryError> {
        let params = self.params()?;
        if let Some(unknown) = values
            .keys()
            .find(|name| !params.iter().any(|p| p.name == name.as_str()))
        {
            return Err(QueryError::UnknownParam {
                query: self.name,
                name: unknown.clone(),
                known: params.iter().map(|p| p.name).collect::<Vec<_>>().join(", "),
            });
        }
        let mut out = String::with_capacity(self.sql.len());
        let mut done = 0;
        for open in placeholder_starts(self.sql) {
            let close = self.sql[open..]
                .find('}')
                .map(|i| open + i)
                .ok_or_else(|| self.malformed("unclosed '{'"))?;
            let (name, ty) = self.sql[open + 1..close]
                .split_once(':')
                .ok_or_else(|| self.malformed("placeholder without ':Type'"))?;
            let param = params
                .iter()
                .find(|p| p.name == name && p.ty.to_string() == ty)
                .ok_or_else(|| self.malformed(&format!("{{{name}:{ty}}} is not declared")))?;
            let value = values
                .get(name)
                .map(String::as_str)
                .or(param.default)
                .ok_or(QueryError::MissingParam {
                    query: self.name,
                    name: param.name,
                    ty: param.ty,
                })?;
            let literal = param
                .ty
                .literal(value)
                .map_err(|reason| QueryError::InvalidParam {
                    name: name.to_owned(),
                    value: value.to_owned(),
                    ty: param.ty,
                    reason,
                })?;
            out.push_str(&self.sql[done..open]);
            out.push_str(&literal);
            done = close + 1;
        }
        out.push_str(&self.sql[done..]);
        Ok(out)
    }

    /// Runs the query with `values` and reads the whole answer.
    pub async fn run(&self, client: &Client, values: &ParamValues) -> Result<Table, QueryError> {
        // The clickhouse crate binds `?` placeholders; `??` is a literal `?`.
        let sql = self.render(values)?.replace('?', "??");
        // On a cluster the tables are Distributed and the queries' `IN (SELECT ...)` and
        // `JOIN (SELECT ...)` subqueries read them too: `global` runs each subquery once,
        // over every shard, and ships its answer to the shards, which gives the answers
        // of one server (the default, `deny`, refuses such queries). No effect on one
        // server.
        let bytes = client
            .clone()
            .with_setting("distributed_product_mode", "global")
            .query(&sql)
            .fetch_bytes("TabSeparatedWithNamesAndTypes")
            .map_err(|source| self.clickhouse(source))?
            .collect()
            .await
            .map_err(|source| self.clickhouse(source))?;
        let text = std::str::from_utf8(&bytes).map_err(|e| QueryError::Response {
            query: self.name,
            reason: e.to_string(),
        })?;
        Table::from_tsv_with_names_and_types(text).map_err(|reason| QueryError::Response {
            query: self.name,
            reason,
        })
    }

    fn malformed(&self, reason: &str) -> QueryError {
        QueryError::Malformed {
            query: self.name,
            reason: reason.to_owned(),
        }
    }

    fn clickhouse(&self, source: clickhouse::error::Error) -> QueryError {
        QueryError::ClickHouse {
            query: self.name,
            source,
        }
    }
}

/// Byte offsets of the `{` that open a placeholder: those in code, never in string
/// literals, quoted identifiers or comments ([`bench_clickhouse::sql`]).
fn placeholder_starts(sql: &str) -> Vec<usize> {
    bench_clickhouse::sql::code_positions(sql, '{')
}

/// Parses `name Type [= 'default']: help` (the default may hold `:`).
fn parse_param(decl: &'static str) -> Option<Param> {
    let (head, default, help) = match decl.split_once('=') {
        Some((head, rest)) => {
            let rest = rest.trim_start().strip_prefix('\'')?;
            let (default, rest) = rest.split_once('\'')?;
            (head, Some(default), rest.trim_start().strip_prefix(':')?)
        }
        None => {
            let (head, help) = decl.split_once(':')?;
            (head, None, help)
        }
    };
    let mut words = head.split_whitespace();
    let (name, ty) = (words.next()?, ParamType::parse(words.next()?)?);
    if words.next().is_some() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    Some(Param {
        name,
        ty,
        default,
        help: help.trim(),
    })
}

/// A ClickHouse string literal: quoted, with `\` and `'` escaped and control characters
/// written as escapes, so any UTF-8 text stays one literal.
fn quote_string(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('\'');
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\0' => out.push_str("\\0"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Unix seconds of `value` (see [`ParamType::DateTime`]), within the DateTime range.
pub(crate) fn parse_datetime(value: &str) -> Result<u32, String> {
    let value = value.trim();
    let secs = if let Ok(t) = DateTime::parse_from_rfc3339(value) {
        t.timestamp()
    } else if let Ok(t) = NaiveDateTime::parse_from_str(value, "%Y-%m-%d %H:%M:%S")
        .or_else(|_| NaiveDateTime::parse_from_str(value, "%Y-%m-%dT%H:%M:%S"))
    {
        t.and_utc().timestamp()
    } else if let Ok(day) = NaiveDate::parse_from_str(value, "%Y-%m-%d") {
        day.and_hms_opt(0, 0, 0)
            .map_or(-1, |t| t.and_utc().timestamp())
    } else {
        return Err("expected YYYY-MM-DD, YYYY-MM-DD HH:MM:SS (UTC) or RFC 3339".into());
    };
    u32::try_from(secs).map_err(|_| "outside 1970-01-01 .. 2106-02-07".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(pairs: &[(&str, &str)]) -> ParamValues {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn every_query_file_is_embedded_and_renders_with_defaults() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../deploy/clickhouse/queries"
        );
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter_map(|name| name.strip_suffix(".sql").map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        let mut embedded: Vec<String> = QUERIES.iter().map(|q| q.name.to_owned()).collect();
        embedded.sort();
        assert_eq!(files, embedded);
        for query in QUERIES {
            assert!(
                query.description().ends_with('.'),
                "{}: the description is not whole sentences",
                query.name
            );
            let params = query.params().expect("declarations parse");
            let required: ParamValues = params
                .iter()
                .filter(|p| p.default.is_none())
                .map(|p| {
                    (
                        p.name.to_owned(),
                        "00000000-0000-0000-0000-000000000001".into(),
                    )
                })
                .collect();
            let sql = query.render(&required).expect("renders");
            assert!(!sql.contains('{'), "{}: placeholder left", query.name);
            for param in params {
                assert!(
                    query
                        .sql
                        .contains(&format!("{{{}:{}}}", param.name, param.ty)),
                    "{}: {} declared but unused",
                    query.name,
                    param.name
                );
            }
        }
    }

    #[test]
    fn values_become_typed_literals_never_raw_text() {
        let query = Query::find("leaderboard").expect("shipped");
        let sql = query
            .render(&values(&[
                ("policy", "x' OR 1=1 -- \\ ?"),
                ("since", "2025-03-01T00:00:00Z"),
                ("until", "2025-03-02"),
            ]))
            .expect("renders");
        assert!(sql.contains(r"'x\' OR 1=1 -- \\ ?'"));
        assert!(sql.contains("toDateTime(1740787200)"));
        assert!(sql.contains("toDateTime(1740873600)"));

        let timeline = Query::find("run_timeline").expect("shipped");
        let sql = timeline
            .render(&values(&[(
                "run_id",
                "A1000000-0000-4000-8000-000000000000",
            )]))
            .expect("renders");
        assert!(sql.contains("toUUID('a1000000-0000-4000-8000-000000000000')"));
        for (name, value) in [("run_id", "1' OR '1"), ("run_id", "")] {
            assert!(matches!(
                timeline.render(&values(&[(name, value)])),
                Err(QueryError::InvalidParam { .. })
            ));
        }
        assert!(matches!(
            timeline.render(&ParamValues::new()),
            Err(QueryError::MissingParam { name: "run_id", .. })
        ));
        assert!(matches!(
            timeline.render(&values(&[("nope", "1")])),
            Err(QueryError::UnknownParam { .. })
        ));
        let lost = Query::find("lost_events").expect("shipped");
        for bad in ["-1", "1; DROP TABLE x", "4294967296"] {
            assert!(lost.render(&values(&[("stale_minutes", bad)])).is_err());
        }
        assert!(matches!(
            Query::find("nope"),
            Err(QueryError::UnknownQuery { .. })
        ));
    }

    #[test]
    fn braces_in_literals_and_comments_are_text_not_parameters() {
        let query = Query {
            name: "literals",
            sql: "-- A {comment} with braces\n\
                  -- param policy String = '': only this policy_id\n\
                  SELECT '{not a param}', 'it''s {x}', 'a\\' {y}', \"{col}\", `{z}`\n\
                  /* {block:String} */ FROM t WHERE p = {policy:String} -- {tail}\n",
        };
        let sql = query
            .render(&values(&[("policy", "a{b}")]))
            .expect("renders");
        assert_eq!(
            sql,
            "-- A {comment} with braces\n\
             -- param policy String = '': only this policy_id\n\
             SELECT '{not a param}', 'it''s {x}', 'a\\' {y}', \"{col}\", `{z}`\n\
             /* {block:String} */ FROM t WHERE p = 'a{b}' -- {tail}\n"
        );
        assert_eq!(placeholder_starts("SELECT '{'"), Vec::<usize>::new());
        assert_eq!(placeholder_starts("'x' {a:UInt32}"), vec![4]);
    }

    #[test]
    fn datetimes_are_utc_and_in_range() {
        assert_eq!(parse_datetime("1970-01-01 00:00:01"), Ok(1));
        assert_eq!(parse_datetime("2025-03-03T10:00:00+01:00"), Ok(1740992400));
        assert!(parse_datetime("1969-12-31").is_err());
        assert!(parse_datetime("2200-01-01").is_err());
        assert!(parse_datetime("yesterday").is_err());
        assert_eq!(quote_string("a\nb\0"), r"'a\nb\0'");
    }
}
