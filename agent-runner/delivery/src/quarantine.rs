//! The spool's quarantine: what can never be delivered, kept verbatim with the reason.
//!
//! A spool record that no retry can deliver (no stream captures its subject, the server
//! refuses the message itself) and every byte range of the spool that is not a verified
//! record (a flipped byte, a torn write, the bytes around a lost newline) is moved here
//! instead of blocking the records behind it or disappearing. Nothing in this file is
//! ever deleted or rewritten by the runner; an operator reads it with
//! `agent-runner spool status` and removes it by hand.
//!
//! # Format
//!
//! `<spool>.quarantine`, JSON lines, one [`QuarantineEntry`] per line, appended and
//! fsync'd before the spool's cursor moves past the bytes it holds (a crash in between
//! quarantines the same bytes twice, never zero times). `raw_base64` is the original
//! bytes: for a whole record it is the spool line itself, so
//! `jq -r .raw_base64 <spool>.quarantine | base64 -d >> <spool>` puts records back for
//! another try once their stream exists.
//!
//! This module does no NATS: the publisher decides what is undeliverable and why.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use base64::Engine;
use chrono::{SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

/// Why bytes were quarantined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuarantineKind {
    /// Bytes in the middle of the spool that are not a verified record (flipped bytes, a
    /// checksum mismatch, junk around a lost newline).
    Corrupt,
    /// The unterminated end of the spool: a record cut short by a crash while writing.
    Torn,
    /// A valid record whose subject no stream captures while JetStream answers and a
    /// stream captures the runner's own prefix (typically written under another
    /// `--subject-prefix`).
    NoStream,
    /// A valid record the server refuses for good (e.g. bigger than the stream allows).
    Refused,
}

impl QuarantineKind {
    /// The snake_case name, as in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            QuarantineKind::Corrupt => "corrupt",
            QuarantineKind::Torn => "torn",
            QuarantineKind::NoStream => "no_stream",
            QuarantineKind::Refused => "refused",
        }
    }
}

/// One quarantined byte range or record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuarantineEntry {
    /// When it was quarantined (RFC 3339, UTC).
    pub quarantined_at: String,
    /// The class of problem.
    pub kind: QuarantineKind,
    /// Why, in words: the parse error, the checksum mismatch, the server's answer.
    pub reason: String,
    /// Where the bytes were in the spool file when quarantined; `None` for a message
    /// refused before it was ever spooled.
    pub spool_offset: Option<u64>,
    /// Number of original bytes.
    pub len: u64,
    /// The record's subject, when the bytes are a readable record.
    pub subject: Option<String>,
    /// The record's `Nats-Msg-Id` (`event_id`), when readable.
    pub msg_id: Option<String>,
    /// The original bytes, base64 (standard alphabet, padded).
    pub raw_base64: String,
}

/// What a record was, when the quarantined bytes are one.
#[derive(Debug, Clone, Copy)]
pub struct RecordIdentity<'a> {
    /// Its subject.
    pub subject: &'a str,
    /// Its `Nats-Msg-Id`.
    pub msg_id: &'a str,
}

impl QuarantineEntry {
    /// An entry for `raw`, stamped now.
    pub fn new(
        kind: QuarantineKind,
        reason: impl Into<String>,
        spool_offset: Option<u64>,
        record: Option<RecordIdentity<'_>>,
        raw: &[u8],
    ) -> QuarantineEntry {
        QuarantineEntry {
            quarantined_at: Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true),
            kind,
            reason: reason.into(),
            spool_offset,
            len: raw.len() as u64,
            subject: record.map(|r| r.subject.to_owned()),
            msg_id: record.map(|r| r.msg_id.to_owned()),
            raw_base64: base64::engine::general_purpose::STANDARD.encode(raw),
        }
    }

    /// The original bytes; `None` when the stored base64 was damaged.
    pub fn raw(&self) -> Option<Vec<u8>> {
        base64::engine::general_purpose::STANDARD
            .decode(&self.raw_base64)
            .ok()
    }
}

/// The quarantine file beside the spool at `spool`.
pub fn quarantine_path(spool: &Path) -> PathBuf {
    let mut name = spool.as_os_str().to_owned();
    name.push(".quarantine");
    PathBuf::from(name)
}

/// Appends `entries` and fsyncs. The file is created on first use, so a spool that never
/// quarantined anything has none.
pub fn append(path: &Path, entries: &[QuarantineEntry]) -> io::Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let mut buf = Vec::new();
    for entry in entries {
        serde_json::to_writer(&mut buf, entry)?;
        buf.push(b'\n');
    }
    let mut file = OpenOptions::new().append(true).create(true).open(path)?;
    file.write_all(&buf)?;
    file.sync_data()
}

/// The quarantine file as read back.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct QuarantineListing {
    /// Every readable entry, oldest first.
    pub entries: Vec<QuarantineEntry>,
    /// Lines of the file that are not entries (damage to the quarantine file itself).
    pub unreadable_lines: u64,
}

/// Reads the quarantine file; an absent file is an empty quarantine.
pub fn read(path: &Path) -> io::Result<QuarantineListing> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(QuarantineListing::default()),
        Err(e) => return Err(e),
    };
    let mut listing = QuarantineListing::default();
    for line in BufReader::new(file).split(b'\n') {
        match serde_json::from_slice(&line?) {
            Ok(entry) => listing.entries.push(entry),
            Err(_) => listing.unreadable_lines += 1,
        }
    }
    Ok(listing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_keep_the_original_bytes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = quarantine_path(&dir.path().join("runner.spool"));
        assert_eq!(read(&path).expect("absent"), QuarantineListing::default());
        let raw = b"{\"subject\":\xff\x00\n";
        let entry = QuarantineEntry::new(QuarantineKind::Corrupt, "bad", Some(7), None, raw);
        append(&path, &[entry.clone(), entry]).expect("append");
        let listing = read(&path).expect("read");
        assert_eq!(listing.entries.len(), 2);
        assert_eq!(listing.entries[0].raw().as_deref(), Some(&raw[..]));
        assert_eq!(listing.entries[0].len, raw.len() as u64);
        assert!(listing.entries[0].quarantined_at.ends_with('Z'));
    }
}
