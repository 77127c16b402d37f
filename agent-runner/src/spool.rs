//! The local spool: where events wait while the broker is unreachable, on disk, in order.
//!
//! # Format
//!
//! One append-only file of JSON lines, one record per event:
//! `{"subject":..,"msg_id":..,"type":..,"task":..,"schema":1,"event":{..the event..}}`.
//! `event` is the wire JSON byte for byte, so a replayed event is exactly the one that
//! would have been sent. A record is written with one `write` and made durable with
//! `fsync` before [`Spool::append`] returns (batched appends share one `fsync`). Compact
//! JSON never contains a raw newline, so a record ends at the first `\n` and a record cut
//! short by a crash (`kill -9`, power loss) is an unterminated last line: [`Spool::open`]
//! drops it (that event was never acknowledged as spooled). A complete line that does not
//! parse is skipped at replay and counted, never fatal.
//!
//! Replay progress is a byte offset in `<path>.cursor`, replaced atomically (write, fsync,
//! rename) after every acknowledged batch. Once everything is replayed the file is
//! truncated and the cursor removed. A crash between acknowledgement and cursor update
//! replays a few events twice; JetStream (`Nats-Msg-Id`) and the sink drop the copies.
//!
//! The file is locked (`flock`) while open: two runners on one spool would interleave.
//! Its size is capped; an append past the cap fails with [`SpoolError::Full`]. Space is
//! reclaimed when the spool has been replayed completely.
//!
//! This module knows nothing about NATS: it stores and returns [`Outgoing`] messages.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::publish::Outgoing;

/// Default size cap of the spool file: 1 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// Where the spool lives and how big it may get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpoolConfig {
    /// The records file; the cursor is `<path>.cursor`. Parent directories are created.
    pub path: PathBuf,
    /// Size cap of the records file, bytes. Default [`DEFAULT_MAX_BYTES`].
    pub max_bytes: u64,
}

/// A spool operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SpoolError {
    #[error("spool {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("spool {path} is used by another agent-runner process (it is locked); give each runner its own --spool")]
    Locked { path: PathBuf },
    #[error("spool {path} is full: {size} bytes + {incoming} new > cap {max_bytes} bytes. The broker has been unreachable for too long; events are still in each run's events.jsonl. Restore the broker or raise --spool-max-bytes")]
    Full {
        path: PathBuf,
        size: u64,
        incoming: u64,
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
}

/// A spool record as read back.
#[derive(Deserialize)]
struct RecordIn {
    subject: String,
    msg_id: String,
    #[serde(rename = "type")]
    event_type: String,
    task: String,
    schema: String,
    event: Box<RawValue>,
}

/// A record read for replay, with the offset just past it.
#[derive(Debug, Clone)]
pub struct Spooled {
    /// The message; `None` when the record could not be read (skipped, counted).
    pub message: Option<Outgoing>,
    /// Byte offset of the end of the record (what [`Spool::advance`] takes).
    pub end: u64,
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
    /// Records between `cursor` and `len`.
    pending: u64,
}

impl Spool {
    /// Opens (creating) the spool, takes its lock, drops a torn last record and loads
    /// the replay cursor.
    pub fn open(config: SpoolConfig) -> Result<Spool, SpoolError> {
        let path = config.path.clone();
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
        let len = repair_tail(&file).map_err(io_err)?;
        let cursor = read_cursor(&cursor_path(&path)).min(len);
        let pending = count_lines(&file, cursor).map_err(io_err)?;
        if pending > 0 {
            tracing::info!(path = %path.display(), pending, "spool holds events from an earlier run; they will be replayed");
        }
        Ok(Spool {
            config,
            file,
            len,
            cursor,
            pending,
        })
    }

    /// Whether every record has been replayed.
    pub fn is_empty(&self) -> bool {
        self.pending == 0
    }

    /// Records waiting for replay.
    pub fn pending(&self) -> u64 {
        self.pending
    }

    /// The records file.
    pub fn path(&self) -> &Path {
        &self.config.path
    }

    /// Appends `messages` in order and fsyncs once. All or nothing with respect to the
    /// size cap; on an I/O error a torn tail is possible and is dropped at next open.
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
        let io_err = |source| SpoolError::Io {
            path: self.config.path.clone(),
            source,
        };
        let mut file: &File = &self.file;
        file.write_all(&buf).map_err(io_err)?;
        self.file.sync_data().map_err(io_err)?;
        self.len += incoming;
        self.pending += messages.len() as u64;
        Ok(())
    }

    /// Up to `max` records from the cursor, in order. A line that does not parse is
    /// logged and returned as `message: None`, so that replay moves past it.
    pub fn read_batch(&self, max: usize) -> Result<Vec<Spooled>, SpoolError> {
        let io_err = |source| SpoolError::Io {
            path: self.config.path.clone(),
            source,
        };
        let mut reader = BufReader::new(self.file.try_clone().map_err(io_err)?);
        reader.seek(SeekFrom::Start(self.cursor)).map_err(io_err)?;
        let mut offset = self.cursor;
        let mut records = Vec::new();
        let mut line = Vec::new();
        while records.len() < max && offset < self.len {
            line.clear();
            let n = reader.read_until(b'\n', &mut line).map_err(io_err)?;
            if n == 0 {
                break;
            }
            let start = offset;
            offset += n as u64;
            let message = decode(&line)
                .map_err(|e| {
                    tracing::error!(path = %self.config.path.display(), offset = start, error = %e, "skipping unreadable spool record");
                })
                .ok();
            records.push(Spooled {
                message,
                end: offset,
            });
        }
        Ok(records)
    }

    /// Marks everything before `offset` as delivered (`offset` is a [`Spooled::end`]).
    /// When nothing is left, truncates the file.
    pub fn advance(&mut self, offset: u64, records: u64) -> Result<(), SpoolError> {
        self.cursor = offset.min(self.len);
        self.pending = self.pending.saturating_sub(records);
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

    fn reset(&mut self) -> Result<(), SpoolError> {
        let io_err = |source| SpoolError::Io {
            path: self.config.path.clone(),
            source,
        };
        // Truncate first: a crash before the cursor is removed leaves a cursor past the
        // end, which `open` clamps to 0 of an empty file.
        self.file.set_len(0).map_err(io_err)?;
        self.file.sync_data().map_err(io_err)?;
        match fs::remove_file(cursor_path(&self.config.path)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(e)),
        }
        self.len = 0;
        self.cursor = 0;
        self.pending = 0;
        Ok(())
    }
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

fn encode(m: &Outgoing, out: &mut Vec<u8>) {
    let event: &RawValue = serde_json::from_slice(&m.payload)
        .unwrap_or_else(|e| unreachable!("outgoing payloads are serialized events: {e}"));
    let record = RecordOut {
        subject: &m.subject,
        msg_id: &m.msg_id,
        event_type: &m.event_type,
        task: &m.task,
        schema: &m.schema,
        event,
    };
    // Serializing strings and a raw value cannot fail.
    serde_json::to_writer(&mut *out, &record)
        .unwrap_or_else(|e| unreachable!("spool record serialization: {e}"));
    out.push(b'\n');
}

fn decode(line: &[u8]) -> Result<Outgoing, serde_json::Error> {
    let r: RecordIn = serde_json::from_slice(line)?;
    Ok(Outgoing {
        subject: r.subject,
        msg_id: r.msg_id,
        event_type: r.event_type,
        task: r.task,
        schema: r.schema,
        payload: Bytes::from(r.event.get().to_owned()),
    })
}

/// Truncates the file after its last `\n` and returns the new length.
fn repair_tail(file: &File) -> io::Result<u64> {
    let len = file.metadata()?.len();
    let mut end = len;
    let mut buf = vec![0u8; 64 * 1024];
    let mut reader = file;
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let chunk = &mut buf[..(end - start) as usize];
        reader.seek(SeekFrom::Start(start))?;
        reader.read_exact(chunk)?;
        if let Some(pos) = chunk.iter().rposition(|&b| b == b'\n') {
            end = start + pos as u64 + 1;
            break;
        }
        end = start;
    }
    if end != len {
        tracing::warn!(
            dropped_bytes = len - end,
            "spool ended with a torn record (crash while writing); dropped it"
        );
        file.set_len(end)?;
        file.sync_data()?;
    }
    Ok(end)
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
        assert_eq!(batch[0].message, Some(message(0)));
        assert_eq!(batch[1].message, Some(message(1)));
        spool.advance(batch[1].end, 2).expect("advance");
        drop(spool);

        let mut spool = Spool::open(config(dir.path(), 1 << 20)).expect("reopen");
        assert_eq!(spool.pending(), 1);
        let batch = spool.read_batch(10).expect("read");
        assert_eq!(batch.len(), 1);
        assert_eq!(batch[0].message, Some(message(2)));
        spool.advance(batch[0].end, 1).expect("advance");
        assert!(spool.is_empty());
        assert_eq!(fs::metadata(spool.path()).expect("meta").len(), 0);
    }

    #[test]
    fn torn_last_record_is_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = config(dir.path(), 1 << 20);
        let mut spool = Spool::open(cfg.clone()).expect("open");
        spool.append(&[message(0), message(1)]).expect("append");
        drop(spool);
        let mut f = OpenOptions::new()
            .append(true)
            .open(&cfg.path)
            .expect("open");
        f.write_all(br#"{"subject":"bench.events.r.st"#)
            .expect("torn write");
        drop(f);

        let spool = Spool::open(cfg).expect("reopen");
        assert_eq!(spool.pending(), 2);
        let batch = spool.read_batch(10).expect("read");
        assert_eq!(batch.len(), 2);
        assert!(batch.iter().all(|r| r.message.is_some()));
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
    fn a_second_process_cannot_open_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let _first = Spool::open(config(dir.path(), 1 << 20)).expect("open");
        let second = Spool::open(config(dir.path(), 1 << 20));
        assert!(matches!(second, Err(SpoolError::Locked { .. })));
    }
}
