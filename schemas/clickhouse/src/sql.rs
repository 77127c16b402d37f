//! ClickHouse SQL text as the sink and `bench-analysis` read it: which bytes are code
//! and which are quoted text or comments. Migrations split statements on the `;` of code
//! only, and query templates take only a `{` of code as a parameter.
//!
//! Quotes are `'...'` (string literals), `"..."` and `` `...` `` (identifiers); inside
//! them a backslash escapes the next byte and a doubled quote is one quote, as in
//! ClickHouse. Comments are `-- ...` to the end of the line and `/* ... */`. An
//! unterminated quote or comment runs to the end of the text.

use std::ops::Range;

/// What a stretch of SQL text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece {
    /// Keywords, names, numbers, operators, whitespace: what ClickHouse parses.
    Code,
    /// A quoted string literal or identifier, its quotes included.
    Quoted,
    /// A `--` or `/* */` comment.
    Comment,
}

/// Cuts `sql` into consecutive pieces that cover it exactly, in order.
pub fn pieces(sql: &str) -> Vec<(Piece, Range<usize>)> {
    let bytes = sql.as_bytes();
    let mut pieces = Vec::new();
    let (mut code_start, mut i) = (0, 0);
    while i < bytes.len() {
        let (piece, end) = match bytes[i] {
            quote @ (b'\'' | b'"' | b'`') => {
                let mut j = i + 1;
                while j < bytes.len() {
                    // An escape, or a doubled quote: two bytes of text.
                    let escaped = bytes[j] == b'\\'
                        || (bytes[j] == quote && bytes.get(j + 1) == Some(&quote));
                    if escaped {
                        j += 2;
                    } else if bytes[j] == quote {
                        break;
                    } else {
                        j += 1;
                    }
                }
                (Piece::Quoted, (j + 1).min(bytes.len()))
            }
            b'-' if bytes.get(i + 1) == Some(&b'-') => (
                Piece::Comment,
                sql[i..].find('\n').map_or(bytes.len(), |end| i + end + 1),
            ),
            b'/' if bytes.get(i + 1) == Some(&b'*') => (
                Piece::Comment,
                sql[i + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |end| i + 2 + end + 2),
            ),
            _ => {
                i += 1;
                continue;
            }
        };
        if code_start < i {
            pieces.push((Piece::Code, code_start..i));
        }
        pieces.push((piece, i..end));
        code_start = end;
        i = end;
    }
    if code_start < bytes.len() {
        pieces.push((Piece::Code, code_start..bytes.len()));
    }
    pieces
}

/// Byte offsets of every `needle` in the code of `sql` (never in quotes or comments).
pub fn code_positions(sql: &str, needle: char) -> Vec<usize> {
    pieces(sql)
        .into_iter()
        .filter(|(piece, _)| *piece == Piece::Code)
        .flat_map(|(_, range)| {
            sql[range.clone()]
                .match_indices(needle)
                .map(move |(at, _)| range.start + at)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_text_in_order() {
        let sql = "SELECT 'a''b\\'c', `x` -- note\n/* c */ FROM t";
        let found = pieces(sql);
        let kinds: Vec<Piece> = found.iter().map(|(p, _)| *p).collect();
        use Piece::*;
        assert_eq!(
            kinds,
            [Code, Quoted, Code, Quoted, Code, Comment, Comment, Code]
        );
        assert_eq!(&sql[found[1].1.clone()], "'a''b\\'c'");
        let joined: String = found.iter().map(|(_, r)| &sql[r.clone()]).collect();
        assert_eq!(joined, sql);
    }

    #[test]
    fn unterminated_quotes_and_comments_run_to_the_end() {
        assert_eq!(
            pieces("SELECT 'abc"),
            [(Piece::Code, 0..7), (Piece::Quoted, 7..11)]
        );
        assert_eq!(pieces("/* abc"), [(Piece::Comment, 0..6)]);
        assert_eq!(code_positions("'{' {a} -- {b}\n{c}", '{'), [4, 15]);
    }
}
