//! A query answer as text cells with column names and ClickHouse types, read from
//! `TabSeparatedWithNamesAndTypes`, and its three output formats: an aligned text
//! table, JSON (an array of objects, numbers as numbers) and CSV (RFC 4180).
//!
//! Cells keep ClickHouse's own text for values (`0.6667`, `['3']`,
//! `2025-03-03 09:00:00`); only the JSON output interprets them, by column type.
//!
//! Cells are event data, written by whoever published the events, so the outputs defuse
//! them for where they are read:
//! - the text table shows control characters (ESC, BEL, newline, tab, DEL, C1) and
//!   bidirectional overrides as escapes (`\x1b`, `\n`, `\u{202e}`), so a cell cannot
//!   drive the terminal or break the table's lines;
//! - CSV prefixes a text cell starting with `=`, `+`, `-`, `@`, tab or CR with `'`, so a
//!   spreadsheet shows it instead of evaluating it as a formula; cells of numeric
//!   columns, and cells that are a number (`-1.5`), are left as they are.

use std::fmt::Write as _;

/// One column of an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// The column's name in the answer.
    pub name: String,
    /// The ClickHouse type, e.g. `Nullable(Float64)`.
    pub ty: String,
}

/// A whole query answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    /// The columns, in order.
    pub columns: Vec<Column>,
    /// Row-major cells; `None` is SQL NULL.
    pub rows: Vec<Vec<Option<String>>>,
}

/// The output formats of `bench-analysis query`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// Aligned columns for a terminal; NULL shown as `NULL`.
    #[default]
    Table,
    /// An array of objects, one per row; numeric columns as JSON numbers.
    Json,
    /// A header line, then one line per row; NULL as an empty field.
    Csv,
}

impl Table {
    /// Parses `TabSeparatedWithNamesAndTypes` text.
    pub fn from_tsv_with_names_and_types(text: &str) -> Result<Table, String> {
        let mut lines = text.lines();
        let names = lines.next().ok_or("no header line")?;
        let types = lines.next().ok_or("no types line")?;
        let columns: Vec<Column> = names
            .split('\t')
            .zip(types.split('\t'))
            .map(|(name, ty)| Column {
                name: unescape(name),
                ty: unescape(ty),
            })
            .collect();
        if columns.len() != names.split('\t').count() || columns.len() != types.split('\t').count()
        {
            return Err("header and types lines differ in length".into());
        }
        let rows = lines
            .enumerate()
            .map(|(i, line)| {
                let cells: Vec<Option<String>> = line
                    .split('\t')
                    .map(|cell| (cell != "\\N").then(|| unescape(cell)))
                    .collect();
                if cells.len() == columns.len() {
                    Ok(cells)
                } else {
                    Err(format!(
                        "row {} has {} cells, expected {}",
                        i + 1,
                        cells.len(),
                        columns.len()
                    ))
                }
            })
            .collect::<Result<_, _>>()?;
        Ok(Table { columns, rows })
    }

    /// The index of column `name`.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    /// The cell of `row` in column `name`; `None` for NULL or no such column.
    pub fn get(&self, row: usize, name: &str) -> Option<&str> {
        let column = self.column(name)?;
        self.rows.get(row)?.get(column)?.as_deref()
    }

    /// [`Self::get`] as a finite number; `None` also for ClickHouse's `inf` and `nan`.
    pub fn number(&self, row: usize, name: &str) -> Option<f64> {
        self.get(row, name)?
            .parse()
            .ok()
            .filter(|n: &f64| n.is_finite())
    }

    /// Writes the answer in `format`.
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Table => self.to_text(),
            Format::Json => self.to_json(),
            Format::Csv => self.to_csv(),
        }
    }

    fn to_text(&self) -> String {
        let shown: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|row| {
                row.iter()
                    .map(|c| c.as_deref().map_or_else(|| "NULL".into(), visible))
                    .collect()
            })
            .collect();
        let widths: Vec<usize> = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, column)| {
                shown
                    .iter()
                    .map(|row| row[i].chars().count())
                    .chain([visible(&column.name).chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        let line = |out: &mut String, cells: &mut dyn Iterator<Item = (usize, String)>| {
            let mut text = String::new();
            for (i, cell) in cells {
                let cell = cell.as_str();
                let pad = " ".repeat(widths[i] - cell.chars().count());
                let sep = if i == 0 { "" } else { "  " };
                if is_numeric(&self.columns[i].ty) {
                    let _ = write!(text, "{sep}{pad}{cell}");
                } else {
                    let _ = write!(text, "{sep}{cell}{pad}");
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        };
        line(
            &mut out,
            &mut self.columns.iter().map(|c| visible(&c.name)).enumerate(),
        );
        line(
            &mut out,
            &mut widths.iter().map(|w| "-".repeat(*w)).enumerate(),
        );
        for row in shown {
            line(&mut out, &mut row.into_iter().enumerate());
        }
        let _ = writeln!(out, "({} rows)", self.rows.len());
        out
    }

    fn to_json(&self) -> String {
        let rows: Vec<serde_json::Value> = self
            .rows
            .iter()
            .map(|row| {
                let object = self
                    .columns
                    .iter()
                    .zip(row)
                    .map(|(column, cell)| (column.name.clone(), json_value(&column.ty, cell)))
                    .collect();
                serde_json::Value::Object(object)
            })
            .collect();
        let mut out = serde_json::to_string_pretty(&rows).unwrap_or_default();
        out.push('\n');
        out
    }

    fn to_csv(&self) -> String {
        let mut out = String::new();
        let mut line = |cells: &mut dyn Iterator<Item = (bool, &str)>| {
            let fields: Vec<String> = cells
                .map(|(numeric, text)| csv_field(&inert(numeric, text)))
                .collect();
            out.push_str(&fields.join(","));
            out.push_str("\r\n");
        };
        line(&mut self.columns.iter().map(|c| (false, c.name.as_str())));
        for row in &self.rows {
            line(
                &mut self
                    .columns
                    .iter()
                    .zip(row)
                    .map(|(c, cell)| (is_numeric(&c.ty), cell.as_deref().unwrap_or(""))),
            );
        }
        out
    }
}

/// Whether a ClickHouse type is a number (`Nullable(...)` looked through).
fn is_numeric(ty: &str) -> bool {
    let inner = ty
        .strip_prefix("Nullable(")
        .and_then(|t| t.strip_suffix(')'))
        .unwrap_or(ty);
    ["UInt", "Int", "Float", "Decimal"]
        .iter()
        .any(|prefix| inner.starts_with(prefix))
}

/// A cell as JSON: numbers for numeric types (non-finite as null), arrays of numbers as
/// arrays, everything else as the text ClickHouse wrote.
fn json_value(ty: &str, cell: &Option<String>) -> serde_json::Value {
    use serde_json::Value;
    let Some(text) = cell else {
        return Value::Null;
    };
    if is_numeric(ty) {
        return text
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite())
            .and_then(|n| {
                // Integers keep full u64/i64 precision.
                text.parse::<i64>()
                    .map(Value::from)
                    .or_else(|_| text.parse::<u64>().map(Value::from))
                    .ok()
                    .or_else(|| serde_json::Number::from_f64(n).map(Value::Number))
            })
            .unwrap_or(Value::Null);
    }
    let element = ty.strip_prefix("Array(").and_then(|t| t.strip_suffix(')'));
    if element.is_some_and(is_numeric) {
        if let Ok(array) = serde_json::from_str::<Value>(text) {
            return array;
        }
    }
    Value::String(text.clone())
}

/// `text` with every control character and bidirectional override written as an
/// escape, for a terminal.
fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c.is_ascii_control() => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            // C1 controls (U+0080..U+009F; U+009B is a CSI on many terminals) and the
            // bidi embeddings, overrides and isolates that reorder what is shown.
            c if c.is_control()
                || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') =>
            {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// A CSV cell that a spreadsheet shows as text rather than evaluates: text starting
/// with a formula character gets a leading `'` (the OWASP advice on CSV injection).
/// Numbers, by column type or by their text, stay as they are.
fn inert(numeric: bool, text: &str) -> std::borrow::Cow<'_, str> {
    let formula = text.starts_with(['=', '+', '-', '@', '\t', '\r']);
    if formula && !numeric && text.parse::<f64>().is_err() {
        format!("'{text}").into()
    } else {
        text.into()
    }
}

fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// Undoes TabSeparated escaping (`\t`, `\n`, `\\`, ...).
fn unescape(cell: &str) -> String {
    let mut out = String::with_capacity(cell.len());
    let mut chars = cell.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('0') => out.push('\0'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANSWER: &str = "policy_id\truns\trate\tgaps\n\
        String\tUInt64\tNullable(Float64)\tArray(UInt64)\n\
        a,\\tb\t3\t0.5\t[3,4]\n\
        c\"d\t10\t\\N\t[]\n";

    #[test]
    fn tsv_answers_parse_with_nulls_and_escapes() {
        let table = Table::from_tsv_with_names_and_types(ANSWER).expect("parses");
        assert_eq!(table.columns.len(), 4);
        assert_eq!(table.get(0, "policy_id"), Some("a,\tb"));
        assert_eq!(table.get(1, "rate"), None);
        assert_eq!(table.number(1, "runs"), Some(10.0));
        assert!(Table::from_tsv_with_names_and_types("a\tb\nUInt8\tUInt8\n1\n").is_err());
    }

    #[test]
    fn formats_align_quote_and_type() {
        let table = Table::from_tsv_with_names_and_types(ANSWER).expect("parses");
        assert_eq!(
            table.render(Format::Table),
            "policy_id  runs  rate  gaps\n\
             ---------  ----  ----  -----\n\
             a,\\tb         3   0.5  [3,4]\n\
             c\"d          10  NULL  []\n\
             (2 rows)\n"
        );
        assert_eq!(
            table.render(Format::Csv),
            "policy_id,runs,rate,gaps\r\n\"a,\tb\",3,0.5,\"[3,4]\"\r\n\"c\"\"d\",10,,[]\r\n"
        );
        let json: serde_json::Value =
            serde_json::from_str(&table.render(Format::Json)).expect("valid json");
        assert_eq!(
            json,
            serde_json::json!([
                {"policy_id": "a,\tb", "runs": 3, "rate": 0.5, "gaps": [3, 4]},
                {"policy_id": "c\"d", "runs": 10, "rate": null, "gaps": []},
            ])
        );
    }

    #[test]
    fn table_output_shows_control_characters_as_escapes() {
        let table = Table {
            columns: vec![Column {
                name: "summary".into(),
                ty: "String".into(),
            }],
            rows: vec![vec![Some(
                "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}1m\u{202e}txt.exe\nnext\\x".into(),
            )]],
        };
        let text = table.render(Format::Table);
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{text:?}"
        );
        assert_eq!(text.lines().count(), 4, "{text}");
        assert!(
            text.contains("\\x1b]0;pwned\\x07\\x1b[2J\\u{9b}1m\\u{202e}txt.exe\\nnext\\x"),
            "{text}"
        );
    }

    #[test]
    fn csv_formulas_are_neutralised_and_numbers_kept() {
        let table = Table::from_tsv_with_names_and_types(
            "name\tscore\tnote\n\
             String\tFloat64\tString\n\
             =HYPERLINK(\"http://x\")\t-1.5\t-1.5\n\
             +cmd\t-2\t@SUM(A1)\n\
             -2+3\t0\tplain\n",
        )
        .expect("parses");
        assert_eq!(
            table.render(Format::Csv),
            "name,score,note\r\n\
             \"'=HYPERLINK(\"\"http://x\"\")\",-1.5,-1.5\r\n\
             '+cmd,-2,'@SUM(A1)\r\n\
             '-2+3,0,plain\r\n"
        );
    }
}
