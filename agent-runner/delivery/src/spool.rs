//! The local spool: where events wait while the broker is unreachable, on disk, in order.
//!
//! # Format
//!
//! One append-only file of JSON lines, one record per event:
//! `{"subject":..,"msg_id":..,"type":..,"task":..,"schema":"1","event":{..},"sum":".."}`.
//! `event` is the wire JSON byte for byte, so a replayed event is exactly the one that
//! would have been sent. `sum` is the first 64 bits (16 hex digits) of the SHA-256 of the
//! other fields (each as its length, u64 little-endian, then its bytes, in the order
//! above), so a flipped byte anywhere in a record is detected even where the JSON still
//! parses; records written before `sum` existed are accepted unchecked. A record is
//! written with one `write` and made durable with `fsync` before [`Spool::append`]
//! returns (batched appends share one `fsync`). Compact JSON never contains a raw
//! newline, so a record ends at the first `\n`.
//!
//! # Damage
//!
//! Bytes that are not a verified record are never dropped: they go to the quarantine
//! file ([`crate::quarantine`]) verbatim, with the reason, and replay goes on.
//!
//! - A line that does not parse as one record is searched for records: each complete
//!   record with a good checksum is kept (a lost newline merges two records into one
//!   line; both are delivered), and every byte range between them is quarantined as
//!   [`QuarantineKind::Corrupt`].
//! - An unterminated last line (a record cut short by a crash: `kill -9`, power loss) is
//!   handled the same way by [`Spool::open`] ([`QuarantineKind::Torn`]): complete records
//!   in it are rewritten as proper lines, the rest is quarantined, then the file is
//!   truncated to its last `\n` so that new records start on a line of their own.
//!
//! Replay progress is a byte offset in `<path>.cursor`, replaced atomically (write, fsync,
//! rename) after every acknowledged batch. Once everything is replayed the file is
//! truncated and the cursor removed. A crash between acknowledgement and cursor update
//! replays a few events twice; JetStream (`Nats-Msg-Id`) and the sink drop the copies.
//!
//! The file is locked (`flock`) while open: two runners on one spool would interleave.
//!
//! # Slots
//!
//! A configured spool path is the first of [`SLOTS`] slots: `<dir>/<stem>.<ext>`, then
//! `<dir>/<stem>.1.<ext>`, `<dir>/<stem>.2.<ext>`, ... (`agent-runner.spool`,
//! `agent-runner.1.spool`), each with its own cursor and quarantine file. [`Spool::open`]
//! takes the first slot that is not locked and holds events (what a crashed process
//! left), else the first slot that is not locked: any number of processes can start in
//! one directory with the default spool, and a restart replays what a crash left.
//!
//! Its size is capped; an append past the cap fails with [`SpoolError::Full`]. Space is
//! reclaimed when the spool has been replayed completely. [`status`] reads a spool without
//! the lock (a snapshot, also of a spool a running runner holds).
//!
//! This module knows nothing about NATS: it stores and returns [`Outgoing`] messages and
//! quarantines what it is told to.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

use crate::outgoing::Outgoing;
use crate::quarantine::{self, QuarantineEntry, QuarantineKind, QuarantineListing};

/// Slots of one configured spool path (see the module docs).
pub const SLOTS: usize = 64;

/// Default size cap of the spool file: 1 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// How every record line starts (`subject` is the first field written): where a search
/// for records in a damaged line resumes.
const RECORD_START: &[u8] = b"{\"subject\":";

/// Where the spool lives and how big it may get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpoolConfig {
    /// The records file of the first slot ([`slot_path`] names the others); the cursor
    /// is `<file>.cursor`, the quarantine `<file>.quarantine`. Parent directories are
    /// created.
    pub path: PathBuf,
    /// Size cap of the records file, bytes. Default [`DEFAULT_MAX_BYTES`].
    pub max_bytes: u64,
}

/// A spool operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SpoolError {
    #[error("spool {path}: {source}")]
    /// Reading, writing or locking a slot failed.
    Io {
        /// The slot file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    #[error("all {SLOTS} slots of spool {path} are used by other agent-runner processes (each is locked); give some runners another --spool")]
    /// Every slot is held by another process.
    Locked {
        /// The spool's first slot.
        path: PathBuf,
    },
    #[error("spool {path} is full: {size} bytes + {incoming} new > cap {max_bytes} bytes. The broker has been unreachable for too long; events are still in each run's events.jsonl. Restore the broker or raise --spool-max-bytes")]
    /// Taking the record would pass `--spool-max-bytes`.
    Full {
        /// The slot file.
        path: PathBuf,
        /// Bytes the slot holds.
        size: u64,
        /// Bytes of the record refused.
        incoming: u64,
        /// The cap.
        max_bytes: u64,
    },
}

/// A spool record as written.
#[derive(Serialize)]
struct RecordOut<'a> {
    subject: &'a str,
    msg_id: &'a str,
    #[serde(rename = "type")]
    event_type: &'a str,
    task: &'a str,
    schema: &'a str,
    event: &'a RawValue,
    sum: &'a str,
}

/// A spool record as read back. Unknown fields are refused: a flipped byte in a field
/// name must not turn a record into one that looks older (without `sum`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordIn {
    subject: String,
    msg_id: String,
    #[serde(rename = "type")]
    event_type: String,
    task: String,
    schema: String,
    event: Box<RawValue>,
    sum: Option<String>,
}

/// What a stretch of the spool holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// A verified record.
    Message(Outgoing),
    /// Bytes that are not a verified record, and why: to be quarantined.
    Damaged(String),
}

/// One entry read for replay, with where it lies in the file.
#[derive(Debug, Clone)]
pub struct Spooled {
    /// The record, or the reason its bytes are not one.
    pub entry: Entry,
    /// The original bytes (what a quarantine entry keeps).
    pub raw: Vec<u8>,
    /// Byte offset of its start in the file.
    pub start: u64,
    /// Byte offset of its end (what [`Spool::advance`] takes).
    pub end: u64,
}

impl Spooled {
    /// The quarantine entry of these bytes: `kind` and `reason` for a record the broker
    /// cannot take; for damaged bytes the kind is [`QuarantineKind::Corrupt`] and the
    /// reason the one found when reading.
    pub fn quarantine_entry(&self, kind: QuarantineKind, reason: &str) -> QuarantineEntry {
        match &self.entry {
            Entry::Message(m) => QuarantineEntry::new(
                kind,
                reason,
                Some(self.start),
                Some(m.identity()),
                &self.raw,
            ),
            Entry::Damaged(why) => QuarantineEntry::new(
                QuarantineKind::Corrupt,
                why.as_str(),
                Some(self.start),
                None,
                &self.raw,
            ),
        }
    }
}

/// An open, locked spool.
#[derive(Debug)]
pub struct Spool {
    config: SpoolConfig,
    file: Flock<File>,
    /// Size of the records file.
    len: u64,
    /// Offset of the first record not yet replayed.
    cursor: u64,
    /// Entries between `cursor` and `len`: one per line, plus the extra entries found in
    /// damaged lines read so far.
    pending: u64,
    /// End of the last line whose extra entries are counted in `pending` (a line read
    /// twice, after a failed replay, is not counted twice).
    counted_until: u64,
    /// Entries this process moved to the quarantine file.
    quarantined: u64,
}

impl Spool {
    /// Opens (creating) a slot of the spool (see the module docs), takes its lock,
    /// repairs a torn last record and loads the replay cursor.
    pub fn open(config: SpoolConfig) -> Result<Spool, SpoolError> {
        let slots = || (0..SLOTS).map(|k| slot_path(&config.path, k));
        let holding = slots().filter(|p| fs::metadata(p).is_ok_and(|m| m.len() > 0));
        for path in holding.chain(slots()) {
            match Spool::open_slot(&config, path) {
                Err(SpoolError::Locked { .. }) => continue,
                opened => return opened,
            }
        }
        Err(SpoolError::Locked {
            path: config.path.clone(),
        })
    }

    /// Opens the slot file `path` of `config`.
    fn open_slot(config: &SpoolConfig, path: PathBuf) -> Result<Spool, SpoolError> {
        let config = SpoolConfig {
            path: path.clone(),
            max_bytes: config.max_bytes,
        };
        let io_err = |source| SpoolError::Io {
            path: path.clone(),
            source,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent).map_err(io_err)?;
        }
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(io_err)?;
        let file = Flock::lock(file, FlockArg::LockExclusiveNonblock)
            .map_err(|_| SpoolError::Locked { path: path.clone() })?;
        let len = file.metadata().map_err(io_err)?.len();
        let end = last_line_end(&file, len).map_err(io_err)?;
        let mut spool = Spool {
            config,
            file,
            len: end,
            cursor: 0,
            pending: 0,
            counted_until: 0,
            quarantined: 0,
        };
        if end < len {
            spool.repair_tail(end, len)?;
        }
        spool.cursor = read_cursor(&cursor_path(&path)).min(spool.len);
        spool.counted_until = spool.cursor;
        spool.pending = count_lines(&spool.file, spool.cursor).map_err(io_err)?;
        if spool.pending > 0 {
            tracing::info!(path = %path.display(), pending = spool.pending, "spool holds events from an earlier run; they will be replayed");
        }
        Ok(spool)
    }

    /// Whether every record has been replayed.
    pub fn is_empty(&self) -> bool {
        self.pending == 0
    }

    /// Entries waiting for replay (records, and damaged ranges still to quarantine).
    pub fn pending(&self) -> u64 {
        self.pending
    }

    /// Entries this process moved to the quarantine file.
    pub fn quarantined(&self) -> u64 {
        self.quarantined
    }

    /// The records file (of the slot taken).
    pub fn path(&self) -> &Path {
        &self.config.path
    }

    /// Appends `messages` in order and fsyncs once. All or nothing with respect to the
    /// size cap; on an I/O error a torn tail is possible and is repaired at next open.
    pub fn append(&mut self, messages: &[Outgoing]) -> Result<(), SpoolError> {
        let mut buf = Vec::new();
        for m in messages {
            encode(m, &mut buf);
        }
        let incoming = buf.len() as u64;
        if self.len + incoming > self.config.max_bytes {
            return Err(SpoolError::Full {
                path: self.config.path.clone(),
                size: self.len,
                incoming,
                max_bytes: self.config.max_bytes,
            });
        }
        let mut file: &File = &self.file;
        file.write_all(&buf).map_err(|e| self.io_err(e))?;
        self.file.sync_data().map_err(|e| self.io_err(e))?;
        self.len += incoming;
        self.pending += messages.len() as u64;
        Ok(())
    }

    /// Up to `max` entries from the cursor, in order (a damaged line yields all of its
    /// entries, even past `max`).
    pub fn read_batch(&mut self, max: usize) -> Result<Vec<Spooled>, SpoolError> {
        let mut reader = BufReader::new(self.file.try_clone().map_err(|e| self.io_err(e))?);
        reader
            .seek(SeekFrom::Start(self.cursor))
            .map_err(|e| self.io_err(e))?;
        let mut offset = self.cursor;
        let mut entries = Vec::new();
        let mut line = Vec::new();
        while entries.len() < max && offset < self.len {
            line.clear();
            let n = reader
                .read_until(b'\n', &mut line)
                .map_err(|e| self.io_err(e))?;
            if n == 0 {
                break;
            }
            let pieces = split(&line, offset);
            let end = offset + n as u64;
            if end > self.counted_until {
                self.pending += pieces.len() as u64 - 1;
                self.counted_until = end;
            }
            if pieces.len() > 1 || matches!(pieces[0].entry, Entry::Damaged(_)) {
                tracing::warn!(path = %self.config.path.display(), offset, entries = pieces.len(), "damaged spool line: its records are kept, the rest is quarantined");
            }
            entries.extend(pieces);
            offset = end;
        }
        Ok(entries)
    }

    /// Marks everything before `offset` as done (`offset` is a [`Spooled::end`]; `entries`
    /// the number of entries up to it). When nothing is left, truncates the file.
    pub fn advance(&mut self, offset: u64, entries: u64) -> Result<(), SpoolError> {
        self.cursor = offset.min(self.len);
        self.pending = self.pending.saturating_sub(entries);
        if self.cursor == self.len {
            return self.reset();
        }
        let path = cursor_path(&self.config.path);
        let tmp = path.with_extension("cursor.tmp");
        let io_err = |source| SpoolError::Io {
            path: path.clone(),
            source,
        };
        let mut f = File::create(&tmp).map_err(io_err)?;
        f.write_all(self.cursor.to_string().as_bytes())
            .map_err(io_err)?;
        f.sync_data().map_err(io_err)?;
        fs::rename(&tmp, &path).map_err(io_err)
    }

    /// Appends `entries` to the quarantine file, fsync'd: call before [`Spool::advance`]
    /// moves past their bytes.
    pub fn quarantine(&mut self, entries: &[QuarantineEntry]) -> Result<(), SpoolError> {
        let path = quarantine::quarantine_path(&self.config.path);
        quarantine::append(&path, entries).map_err(|source| SpoolError::Io { path, source })?;
        self.quarantined += entries.len() as u64;
        for e in entries {
            tracing::error!(kind = e.kind.as_str(), reason = %e.reason, subject = ?e.subject, msg_id = ?e.msg_id, bytes = e.len, "quarantined (see `agent-runner spool status`)");
        }
        Ok(())
    }

    fn io_err(&self, source: io::Error) -> SpoolError {
        SpoolError::Io {
            path: self.config.path.clone(),
            source,
        }
    }

    /// Quarantines what is not a record in the unterminated bytes `end..len`, truncates
    /// them and appends the complete records found there as proper lines.
    fn repair_tail(&mut self, end: u64, len: u64) -> Result<(), SpoolError> {
        let mut tail = vec![0u8; (len - end) as usize];
        let mut reader: &File = &self.file;
        reader
            .seek(SeekFrom::Start(end))
            .and_then(|_| reader.read_exact(&mut tail))
            .map_err(|e| self.io_err(e))?;
        let mut torn = Vec::new();
        let mut recovered = Vec::new();
        for piece in split(&tail, end) {
            match piece.entry {
                Entry::Message(m) => recovered.push(m),
                Entry::Damaged(why) => torn.push(QuarantineEntry::new(
                    QuarantineKind::Torn,
                    format!("the spool ended mid-record (a crash while writing): {why}"),
                    Some(piece.start),
                    None,
                    &piece.raw,
                )),
            }
        }
        tracing::warn!(
            torn_bytes = len - end,
            quarantined = torn.len(),
            recovered = recovered.len(),
            "spool ended with an unterminated record (crash while writing)"
        );
        // Quarantine first: a crash before the truncation repeats the repair, never
        // loses the bytes.
        self.quarantine(&torn)?;
        self.file.set_len(end).map_err(|e| self.io_err(e))?;
        self.file.sync_data().map_err(|e| self.io_err(e))?;
        self.append(&recovered)?;
        // `append` counted them; `open` counts every line afterwards.
        self.pending = 0;
        Ok(())
    }

    fn reset(&mut self) -> Result<(), SpoolError> {
        // Truncate first: a crash before the cursor is removed leaves a cursor past the
        // end, which `open` clamps to 0 of an empty file.
        self.file.set_len(0).map_err(|e| self.io_err(e))?;
        self.file.sync_data().map_err(|e| self.io_err(e))?;
        match fs::remove_file(cursor_path(&self.config.path)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(self.io_err(e)),
        }
        self.len = 0;
        self.cursor = 0;
        self.pending = 0;
        self.counted_until = 0;
        Ok(())
    }
}

/// What a spool holds, read without taking its lock (`agent-runner spool status`).
#[derive(Debug, Clone, Serialize)]
pub struct SpoolStatus {
    /// The records file.
    pub spool: PathBuf,
    /// The quarantine file beside it.
    pub quarantine_file: PathBuf,
    /// Entries not replayed yet, in file order.
    pub pending: Vec<PendingEntry>,
    /// The quarantine file's entries and how many of its lines are unreadable.
    pub quarantine: QuarantineListing,
}

/// One entry waiting in the spool.
#[derive(Debug, Clone, Serialize)]
pub struct PendingEntry {
    /// Byte offset in the spool file.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
    /// Subject, for a record.
    pub subject: Option<String>,
    /// `Nats-Msg-Id` (`event_id`), for a record.
    pub msg_id: Option<String>,
    /// Event type, for a record.
    pub event_type: Option<String>,
    /// Why these bytes are not a record (they are quarantined at the next replay);
    /// `None` for a good record.
    pub damage: Option<String>,
}

impl SpoolStatus {
    /// Records among the pending entries.
    pub fn pending_records(&self) -> usize {
        self.pending.iter().filter(|p| p.damage.is_none()).count()
    }
}

impl fmt::Display for SpoolStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let damaged = self.pending.len() - self.pending_records();
        writeln!(
            f,
            "spool {}: {} records pending, {} damaged ranges to quarantine",
            self.spool.display(),
            self.pending_records(),
            damaged
        )?;
        for p in &self.pending {
            match &p.damage {
                None => writeln!(
                    f,
                    "  pending      @{:<10} {} {} {}",
                    p.offset,
                    p.msg_id.as_deref().unwrap_or("-"),
                    p.event_type.as_deref().unwrap_or("-"),
                    p.subject.as_deref().unwrap_or("-")
                )?,
                Some(why) => {
                    writeln!(f, "  damaged      @{:<10} {} bytes: {why}", p.offset, p.len)?
                }
            }
        }
        let q = &self.quarantine;
        writeln!(
            f,
            "quarantine {}: {} entries{}",
            self.quarantine_file.display(),
            q.entries.len(),
            if q.unreadable_lines > 0 {
                format!(", {} unreadable lines", q.unreadable_lines)
            } else {
                String::new()
            }
        )?;
        for e in &q.entries {
            writeln!(
                f,
                "  {:<12} {} {} bytes{}{}: {}",
                e.kind.as_str(),
                e.quarantined_at,
                e.len,
                e.msg_id
                    .as_deref()
                    .map(|id| format!(" {id}"))
                    .unwrap_or_default(),
                e.subject
                    .as_deref()
                    .map(|s| format!(" {s}"))
                    .unwrap_or_default(),
                e.reason
            )?;
        }
        Ok(())
    }
}

/// The status of the spool at `path`: every entry after the cursor and the quarantine.
/// Takes no lock and changes nothing.
pub fn status(path: &Path) -> Result<SpoolStatus, SpoolError> {
    let io_err = |source| SpoolError::Io {
        path: path.to_owned(),
        source,
    };
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(io_err(e)),
    };
    let cursor = read_cursor(&cursor_path(path)).min(bytes.len() as u64);
    let mut pending = Vec::new();
    let mut offset = cursor;
    for line in bytes[cursor as usize..].split_inclusive(|&b| b == b'\n') {
        let torn = !line.ends_with(b"\n");
        for piece in split(line, offset) {
            let (record, damage) = match piece.entry {
                Entry::Message(m) => (Some(m), None),
                Entry::Damaged(why) if torn => (None, Some(format!("torn (unterminated): {why}"))),
                Entry::Damaged(why) => (None, Some(why)),
            };
            pending.push(PendingEntry {
                offset: piece.start,
                len: piece.end - piece.start,
                subject: record.as_ref().map(|m| m.subject.clone()),
                msg_id: record.as_ref().map(|m| m.msg_id.clone()),
                event_type: record.map(|m| m.event_type),
                damage,
            });
        }
        offset += line.len() as u64;
    }
    let quarantine_file = quarantine::quarantine_path(path);
    let quarantine = quarantine::read(&quarantine_file).map_err(|source| SpoolError::Io {
        path: quarantine_file.clone(),
        source,
    })?;
    Ok(SpoolStatus {
        spool: path.to_owned(),
        quarantine_file,
        pending,
        quarantine,
    })
}

/// The records file of slot `k` of the spool configured as `path` (slot 0 is `path`).
pub fn slot_path(path: &Path, k: usize) -> PathBuf {
    if k == 0 {
        return path.to_owned();
    }
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let name = match path.extension() {
        Some(ext) => format!("{stem}.{k}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{k}"),
    };
    path.with_file_name(name)
}

/// The slot files of the spool configured as `path` that exist, and slot 0 always.
pub fn slot_files(path: &Path) -> Vec<PathBuf> {
    (0..SLOTS)
        .map(|k| slot_path(path, k))
        .enumerate()
        .filter(|(k, p)| *k == 0 || p.exists())
        .map(|(_, p)| p)
        .collect()
}

/// The spool line of `m` (what a quarantine entry of a refused message keeps).
pub fn record_line(m: &Outgoing) -> Vec<u8> {
    let mut out = Vec::new();
    encode(m, &mut out);
    out
}

fn cursor_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".cursor");
    PathBuf::from(name)
}

fn read_cursor(path: &Path) -> u64 {
    fs::read_to_string(path)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// The checksum of a record's fields (see the module docs).
fn checksum(fields: [&[u8]; 6]) -> String {
    let mut hash = Sha256::new();
    for field in fields {
        hash.update((field.len() as u64).to_le_bytes());
        hash.update(field);
    }
    let digest = hash.finalize();
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

fn encode(m: &Outgoing, out: &mut Vec<u8>) {
    let event: &RawValue = serde_json::from_slice(&m.payload)
        .unwrap_or_else(|e| unreachable!("outgoing payloads are serialized events: {e}"));
    let sum = checksum([
        m.subject.as_bytes(),
        m.msg_id.as_bytes(),
        m.event_type.as_bytes(),
        m.task.as_bytes(),
        m.schema.as_bytes(),
        &m.payload,
    ]);
    let record = RecordOut {
        subject: &m.subject,
        msg_id: &m.msg_id,
        event_type: &m.event_type,
        task: &m.task,
        schema: &m.schema,
        event,
        sum: &sum,
    };
    // Serializing strings and a raw value cannot fail.
    serde_json::to_writer(&mut *out, &record)
        .unwrap_or_else(|e| unreachable!("spool record serialization: {e}"));
    out.push(b'\n');
}

/// The message of a parsed record, if its checksum (when it has one) matches.
fn verify(r: RecordIn) -> Result<Outgoing, String> {
    let payload = r.event.get().as_bytes();
    if let Some(sum) = &r.sum {
        let actual = checksum([
            r.subject.as_bytes(),
            r.msg_id.as_bytes(),
            r.event_type.as_bytes(),
            r.task.as_bytes(),
            r.schema.as_bytes(),
            payload,
        ]);
        if *sum != actual {
            return Err(format!(
                "checksum mismatch (stored {sum}, computed {actual}): the record was altered"
            ));
        }
    }
    Ok(Outgoing {
        payload: Bytes::copy_from_slice(payload),
        subject: r.subject,
        msg_id: r.msg_id,
        event_type: r.event_type,
        task: r.task,
        schema: r.schema,
    })
}

/// The entries of one line (`line` starts at file offset `base` and may end with `\n`,
/// which belongs to its last entry). A good line is one record; a damaged one is searched
/// for complete records (see the module docs), and every range between them is an
/// [`Entry::Damaged`], so the entries cover the line exactly.
fn split(line: &[u8], base: u64) -> Vec<Spooled> {
    let body = line.strip_suffix(b"\n").unwrap_or(line);
    let piece = |start: usize, end: usize, entry: Entry| Spooled {
        entry,
        raw: line[start..end].to_vec(),
        start: base + start as u64,
        end: base + end as u64,
    };
    let mut pieces = Vec::new();
    if let Ok(m) = serde_json::from_slice::<RecordIn>(body)
        .map_err(|e| e.to_string())
        .and_then(verify)
    {
        pieces.push(piece(0, line.len(), Entry::Message(m)));
        return pieces;
    }
    let mut pos = 0;
    while pos < body.len() {
        let mut stream = serde_json::Deserializer::from_slice(&body[pos..]).into_iter::<RecordIn>();
        match stream.next() {
            Some(Ok(record)) => {
                let len = stream.byte_offset();
                let entry = verify(record).map_or_else(Entry::Damaged, Entry::Message);
                pieces.push(piece(pos, pos + len, entry));
                pos += len;
            }
            parsed => {
                let next = find(body, RECORD_START, pos + 1).unwrap_or(body.len());
                let why = match parsed {
                    Some(Err(e)) => format!("not a spool record ({e})"),
                    _ => "whitespace where a record should be".to_owned(),
                };
                pieces.push(piece(pos, next, Entry::Damaged(why)));
                pos = next;
            }
        }
    }
    if body.len() < line.len() {
        match pieces.last_mut() {
            // The newline ends the last entry.
            Some(last) => {
                last.end += 1;
                last.raw.push(b'\n');
            }
            None => pieces.push(piece(
                0,
                line.len(),
                Entry::Damaged("empty line".to_owned()),
            )),
        }
    }
    pieces
}

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    haystack
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// The offset just past the file's last `\n` (0 when there is none).
fn last_line_end(file: &File, len: u64) -> io::Result<u64> {
    let mut end = len;
    let mut buf = vec![0u8; 64 * 1024];
    let mut reader = file;
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let chunk = &mut buf[..(end - start) as usize];
        reader.seek(SeekFrom::Start(start))?;
        reader.read_exact(chunk)?;
        if let Some(pos) = chunk.iter().rposition(|&b| b == b'\n') {
            return Ok(start + pos as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

fn count_lines(file: &File, from: u64) -> io::Result<u64> {
    let mut reader = BufReader::new(file);
    reader.seek(SeekFrom::Start(from))?;
    let mut count = 0;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(count);
        }
        count += buf.iter().filter(|&&b| b == b'\n').count() as u64;
        let n = buf.len();
        reader.consume(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(i: u32) -> Outgoing {
        Outgoing {
            subject: format!("bench.events.r.step{i}"),
            msg_id: format!("id-{i}"),
            event_type: "step".into(),
            task: "t%0A".into(),
            schema: "1".into(),
            payload: Bytes::from(format!(r#"{{"n":{i},"s":"a\nb \"q\" é"}}"#)),
        }
    }

    fn config(dir: &Path, max_bytes: u64) -> SpoolConfig {
        SpoolConfig {
            path: dir.join("sub/runner.spool"),
            max_bytes,
        }
    }

    #[test]
    fn round_trips_in_order_and_survives_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut spool = Spool::open(config(dir.path(), 1 << 20)).expect("open");
        spool.append(&[message(0), message(1)]).expect("append");
        spool.append(&[message(2)]).expect("append");
        let batch = spool.read_batch(2).expect("read");
        assert_eq!(messages(&batch), vec![Some(message(0)), Some(message(1))]);
        spool.advance(batch[1].end, 2).expect("advance");
        drop(spool);

        let mut spool = Spool::open(config(dir.path(), 1 << 20)).expect("reopen");
        assert_eq!(spool.pending(), 1);
        let batch = spool.read_batch(10).expect("read");
        assert_eq!(batch.len(), 1);
        assert_eq!(messages(&batch), vec![Some(message(2))]);
        spool.advance(batch[0].end, 1).expect("advance");
        assert!(spool.is_empty());
        assert_eq!(fs::metadata(spool.path()).expect("meta").len(), 0);
    }

    /// A spool holding `message(0..n)`, closed; its path.
    fn written(dir: &Path, n: u32) -> PathBuf {
        let cfg = config(dir, 1 << 20);
        let mut spool = Spool::open(cfg.clone()).expect("open");
        spool
            .append(&(0..n).map(message).collect::<Vec<_>>())
            .expect("append");
        cfg.path
    }

    fn messages(batch: &[Spooled]) -> Vec<Option<Outgoing>> {
        batch
            .iter()
            .map(|s| match &s.entry {
                Entry::Message(m) => Some(m.clone()),
                Entry::Damaged(_) => None,
            })
            .collect()
    }

    fn quarantined(path: &Path) -> Vec<QuarantineEntry> {
        quarantine::read(&quarantine::quarantine_path(path))
            .expect("quarantine")
            .entries
    }

    #[test]
    fn torn_last_record_is_quarantined_verbatim() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = written(dir.path(), 2);
        let good_len = fs::metadata(&path).expect("meta").len();
        let torn = br#"{"subject":"bench.events.r.st"#;
        let mut f = OpenOptions::new().append(true).open(&path).expect("open");
        f.write_all(torn).expect("torn write");
        drop(f);

        let mut spool = Spool::open(config(dir.path(), 1 << 20)).expect("reopen");
        assert_eq!((spool.pending(), spool.quarantined()), (2, 1));
        let batch = spool.read_batch(10).expect("read");
        assert_eq!(messages(&batch), vec![Some(message(0)), Some(message(1))]);
        assert_eq!(fs::metadata(&path).expect("meta").len(), good_len);
        let q = quarantined(&path);
        assert_eq!(q.len(), 1);
        assert_eq!(q[0].kind, QuarantineKind::Torn);
        assert_eq!(q[0].spool_offset, Some(good_len));
        assert_eq!(q[0].raw().as_deref(), Some(&torn[..]));
    }

    #[test]
    fn complete_record_without_its_newline_is_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = written(dir.path(), 3);
        let mut bytes = fs::read(&path).expect("read");
        bytes.pop();
        fs::write(&path, &bytes).expect("write");

        let mut spool = Spool::open(config(dir.path(), 1 << 20)).expect("reopen");
        assert_eq!((spool.pending(), spool.quarantined()), (3, 0));
        let batch = spool.read_batch(10).expect("read");
        assert_eq!(
            messages(&batch),
            (0..3).map(|i| Some(message(i))).collect::<Vec<_>>()
        );
    }

    #[test]
    fn flipped_byte_inside_a_string_fails_the_checksum() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = written(dir.path(), 3);
        let mut bytes = fs::read(&path).expect("read");
        let second = bytes.iter().position(|&b| b == b'\n').expect("newline") + 1;
        // `"n":1` becomes `"n":3`: still valid JSON, another event.
        let at = second + find(&bytes[second..], b"\"n\":1", 0).expect("field") + 4;
        bytes[at] = b'3';
        fs::write(&path, &bytes).expect("write");

        let mut spool = Spool::open(config(dir.path(), 1 << 20)).expect("reopen");
        let batch = spool.read_batch(10).expect("read");
        assert_eq!(
            messages(&batch),
            vec![Some(message(0)), None, Some(message(2))]
        );
        let Entry::Damaged(why) = &batch[1].entry else {
            unreachable!()
        };
        assert!(why.contains("checksum mismatch"), "{why}");
        assert_eq!(batch[1].raw, bytes[second..batch[1].end as usize]);
    }

    #[test]
    fn lost_newline_keeps_both_records_and_the_stray_byte() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = written(dir.path(), 3);
        let mut bytes = fs::read(&path).expect("read");
        let first_end = bytes.iter().position(|&b| b == b'\n').expect("newline");
        bytes[first_end] = b'\n' ^ 0x40;
        fs::write(&path, &bytes).expect("write");

        let mut spool = Spool::open(config(dir.path(), 1 << 20)).expect("reopen");
        assert_eq!(spool.pending(), 2, "two lines before reading");
        let batch = spool.read_batch(10).expect("read");
        assert_eq!(
            messages(&batch),
            vec![Some(message(0)), None, Some(message(1)), Some(message(2))]
        );
        assert_eq!(batch[1].raw, vec![b'\n' ^ 0x40]);
        assert_eq!(spool.pending(), 4, "every entry counted once");
        // Read again after a failed replay: not counted twice.
        spool.read_batch(10).expect("reread");
        assert_eq!(spool.pending(), 4);

        let status = status(&path).expect("status");
        assert_eq!((status.pending.len(), status.pending_records()), (4, 3));
        spool.advance(batch[3].end, 4).expect("advance");
        assert!(spool.is_empty());
    }

    #[test]
    fn garbage_line_is_one_damaged_entry() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = written(dir.path(), 1);
        let mut f = OpenOptions::new().append(true).open(&path).expect("open");
        f.write_all(b"\x00\xffnot json\n").expect("garbage");
        drop(f);
        let mut spool = Spool::open(config(dir.path(), 1 << 20)).expect("reopen");
        let batch = spool.read_batch(10).expect("read");
        assert_eq!(messages(&batch), vec![Some(message(0)), None]);
        assert_eq!(batch[1].raw, b"\x00\xffnot json\n");
    }

    #[test]
    fn full_spool_is_a_clear_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut spool = Spool::open(config(dir.path(), 300)).expect("open");
        spool.append(&[message(0)]).expect("fits");
        let err = spool
            .append(&[message(1), message(2)])
            .expect_err("over cap");
        assert!(matches!(err, SpoolError::Full { .. }), "{err}");
        assert!(err.to_string().contains("--spool-max-bytes"));
        assert_eq!(spool.pending(), 1);
    }

    #[test]
    fn a_second_process_takes_the_next_slot() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = config(dir.path(), 1 << 20);
        let first = Spool::open(cfg.clone()).expect("open");
        let second = Spool::open(cfg.clone()).expect("second slot");
        assert_eq!(first.path(), cfg.path);
        assert_eq!(second.path(), dir.path().join("sub/runner.1.spool"));
        assert_eq!(
            slot_files(&cfg.path),
            vec![cfg.path.clone(), second.path().to_owned()]
        );
    }

    #[test]
    fn a_free_slot_holding_events_is_taken_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = config(dir.path(), 1 << 20);
        let first = Spool::open(cfg.clone()).expect("open");
        let mut second = Spool::open(cfg.clone()).expect("second slot");
        second.append(&[message(7)]).expect("append");
        drop((first, second));

        let mut spool = Spool::open(cfg).expect("reopen");
        assert_eq!(spool.path(), dir.path().join("sub/runner.1.spool"));
        let batch = spool.read_batch(10).expect("read");
        assert_eq!(messages(&batch), vec![Some(message(7))]);
    }

    #[test]
    fn every_slot_locked_is_a_clear_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = config(dir.path(), 1 << 20);
        let _held: Vec<Spool> = (0..SLOTS)
            .map(|_| Spool::open(cfg.clone()).expect("a free slot"))
            .collect();
        let err = Spool::open(cfg).expect_err("no slot left");
        assert!(matches!(err, SpoolError::Locked { .. }), "{err}");
    }
}
