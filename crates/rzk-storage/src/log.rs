//! The transaction log: checksummed, length-prefixed records in rolling, preallocated segments.
//!
//! Segment `log.<first zxid, 16 hex digits>`: a 16-byte header (magic, first zxid), then
//! records `[len: u32][crc32: u32][payload: len bytes]`, then zeros up to the preallocated size.
//! A segment is either created sparse or taken from a spare written with zeros ahead of need
//! ([`prepare_spare`]); the spare's names are not segment names, so recovery never reads one.
//! Records are written in batches; each batch ends with one `fdatasync`, and the next batch is
//! only written after that sync returned. Each payload names its batch's first zxid, which is
//! how recovery tells an unsynced torn tail (truncated) from corruption of synced data
//! (refused, with the file and offset).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rzk_core::Txn;
use rzk_proto::jute::Writer;

use crate::backend::{Storage, StorageFile};
use crate::codec::{self, LoggedTxn};
use crate::error::StorageError;
use crate::files::{pace, remove_if_present};

/// Magic at the start of every segment.
pub const SEGMENT_MAGIC: &[u8; 8] = b"RZKLOG\x00\x01";
/// Segment header length: magic and first zxid.
pub const SEGMENT_HEADER_BYTES: u64 = 16;
/// Record header length: payload length and CRC.
pub const RECORD_HEADER_BYTES: usize = 8;
/// ZooKeeper's `preAllocSize`: 64 MiB segments.
pub const DEFAULT_SEGMENT_BYTES: u64 = 64 * 1024 * 1024;
/// The batch and record buffers are reused between batches up to this size; a larger one
/// (a batch of big writes) is dropped rather than held for the life of the server.
const REUSED_BUFFER_BYTES_MAX: usize = 4 * 1024 * 1024;

/// The file name of the segment whose first transaction is `zxid`.
pub fn segment_name(first_zxid: i64) -> String {
    format!("log.{first_zxid:016x}")
}

/// The first zxid of a segment file name.
pub fn parse_segment_name(name: &str) -> Option<i64> {
    let hex = name.strip_prefix("log.")?;
    (hex.len() == 16).then(|| i64::from_str_radix(hex, 16).ok()).flatten()
}

/// The next segment, written with zeros and synced ahead of need; the writer renames it into
/// place at its next roll.
pub const SPARE_NAME: &str = "log.spare";
/// A spare being written; renamed to [`SPARE_NAME`] once whole and synced.
pub const SPARE_TMP_NAME: &str = "log.spare.tmp";
/// Bytes of zeros per write while preparing a spare, and per sync when paced. Small, because
/// a log sync that lands behind one waits for it: the chunk bounds what preparing a spare adds
/// to a reply's wait (figures in docs/benchmarks-history.md, "The change: spare log segments").
const SPARE_CHUNK_BYTES: usize = 128 * 1024;

/// Writes a spare segment: `segment_bytes` of zeros, synced, under [`SPARE_NAME`]. Returns
/// `false` when one is already there.
///
/// Why: the blocks of a sparse segment are allocated by the fdatasync that first writes them,
/// and on ext4 that sync then writes the inode too, so each sync of a busy group commit into
/// a sparse or `fallocate`d file costs more time and CPU than one into a file already written
/// (docs/benchmarks-history.md, "The change: spare log segments").
///
/// With `bytes_per_sec` above 0 the zeros are synced every 128 KiB at that average rate, so that
/// preparing a spare does not fill the device queue ahead of the log's own syncs; it then
/// sleeps, so run it on a thread of its own.
///
/// # Errors
/// [`StorageError::Io`] if a write, the sync or the rename fails; a partial
/// [`SPARE_TMP_NAME`] may be left, which the next call or [`LogWriter::open`] removes.
pub fn prepare_spare(
    storage: &dyn Storage,
    dir: &Path,
    segment_bytes: u64,
    bytes_per_sec: u64,
) -> Result<bool, StorageError> {
    let names = storage.list(dir).map_err(|e| StorageError::io("list", dir, e))?;
    if names.iter().any(|n| n == SPARE_NAME) {
        return Ok(false);
    }
    let (tmp, spare) = (dir.join(SPARE_TMP_NAME), dir.join(SPARE_NAME));
    remove_if_present(storage, &tmp)?;
    let mut f = storage.open_write(&tmp).map_err(|e| StorageError::io("create", &tmp, e))?;
    let zeros = vec![0u8; SPARE_CHUNK_BYTES];
    let started = std::time::Instant::now();
    let mut at = 0u64;
    while at < segment_bytes {
        let n = (segment_bytes - at).min(SPARE_CHUNK_BYTES as u64) as usize;
        f.write_at(at, &zeros[..n]).map_err(|e| StorageError::io("write", &tmp, e))?;
        at += n as u64;
        if bytes_per_sec > 0 {
            f.sync_data().map_err(|e| StorageError::io("fdatasync", &tmp, e))?;
            pace(started, at, bytes_per_sec);
        }
    }
    f.sync_data().map_err(|e| StorageError::io("fdatasync", &tmp, e))?;
    // No directory sync: a spare lost in a crash is only written again.
    storage.rename(&tmp, &spare).map_err(|e| StorageError::io("rename", &tmp, e))?;
    Ok(true)
}

/// Segments in a directory, oldest first.
pub fn list_segments(
    storage: &dyn Storage,
    dir: &Path,
) -> Result<Vec<(i64, PathBuf)>, StorageError> {
    let names = storage.list(dir).map_err(|e| StorageError::io("list", dir, e))?;
    let mut out: Vec<(i64, PathBuf)> =
        names.iter().filter_map(|n| Some((parse_segment_name(n)?, dir.join(n)))).collect();
    out.sort();
    Ok(out)
}

/// Where the log ends, so that the writer can continue there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEnd {
    /// The segment to append to, with its first zxid; `None` when there is no segment yet.
    pub segment: Option<(i64, PathBuf)>,
    /// Offset of the first free byte in that segment.
    pub offset: u64,
    /// The last zxid in the log (0 when empty).
    pub last_zxid: i64,
}

/// What reading the log found.
#[derive(Debug)]
pub struct LogRead {
    /// How many transactions above the requested zxid were handed to the visitor.
    pub visited: usize,
    /// Where to continue writing.
    pub end: LogEnd,
    /// A torn tail that was cut off: (file, offset, bytes dropped).
    pub truncated: Option<(PathBuf, u64, u64)>,
}

fn read_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Parses one record at `pos`; `None` if it is not a valid record.
fn parse_record(bytes: &[u8], pos: usize) -> Option<(LoggedTxn, usize)> {
    if pos + RECORD_HEADER_BYTES > bytes.len() {
        return None;
    }
    let len = read_u32(bytes, pos) as usize;
    let crc = read_u32(bytes, pos + 4);
    if len == 0 || pos + RECORD_HEADER_BYTES + len > bytes.len() {
        return None;
    }
    let payload = &bytes[pos + RECORD_HEADER_BYTES..pos + RECORD_HEADER_BYTES + len];
    if crc32fast::hash(payload) != crc {
        return None;
    }
    let logged = codec::decode(payload).ok()?;
    Some((logged, RECORD_HEADER_BYTES + len))
}

/// Whether some valid record after `from` belongs to a batch that started after `bad_zxid`,
/// which proves the batch holding the bad record had been synced.
fn later_batch_exists(bytes: &[u8], from: usize, bad_zxid: i64) -> bool {
    (from..bytes.len().saturating_sub(RECORD_HEADER_BYTES)).any(|pos| {
        read_u32(bytes, pos) != 0
            && parse_record(bytes, pos)
                .is_some_and(|(r, _)| r.txn.zxid >= bad_zxid && r.batch_first_zxid > bad_zxid)
    })
}

/// Reads every segment and returns the transactions after `after_zxid`, collected.
///
/// # Errors
/// As [`visit`].
pub fn read(
    storage: &dyn Storage,
    dir: &Path,
    after_zxid: i64,
) -> Result<(Vec<Txn>, LogRead), StorageError> {
    let mut txns = Vec::new();
    let r = visit(storage, dir, after_zxid, |t| {
        txns.push(t);
        Ok(())
    })?;
    Ok((txns, r))
}

/// Reads every segment, handing each transaction after `after_zxid` to `visit` in order, one
/// segment in memory at a time (recovery of a large log never holds all of it).
///
/// # Errors
/// [`StorageError::Corrupt`] for a bad record anywhere but an unsynced tail, a gap in zxids,
/// or a bad segment header; [`StorageError::Io`] when a file cannot be read or repaired; any
/// error `visit` returns.
pub fn visit(
    storage: &dyn Storage,
    dir: &Path,
    after_zxid: i64,
    mut visit: impl FnMut(Txn) -> Result<(), StorageError>,
) -> Result<LogRead, StorageError> {
    let segments = list_segments(storage, dir)?;
    let mut visited = 0;
    let mut expected: Option<i64> = None;
    let mut end = LogEnd { segment: None, offset: SEGMENT_HEADER_BYTES, last_zxid: 0 };
    let mut truncated = None;
    for (i, (first, path)) in segments.iter().enumerate() {
        let last_segment = i + 1 == segments.len();
        let bytes = storage.read(path).map_err(|e| StorageError::io("read", path, e))?;
        let header_ok = bytes.len() >= SEGMENT_HEADER_BYTES as usize
            && &bytes[..8] == SEGMENT_MAGIC
            && i64::from_be_bytes(bytes[8..16].try_into().expect("8 bytes")) == *first;
        if !header_ok {
            if last_segment && bytes.iter().all(|b| *b == 0) {
                // Created but its header never reached the disk: nothing was written to it.
                storage.remove(path).map_err(|e| StorageError::io("remove", path, e))?;
                continue;
            }
            return Err(StorageError::corrupt(path, 0, "bad segment header"));
        }
        if let Some(exp) = expected {
            if *first != exp {
                return Err(StorageError::corrupt(
                    path,
                    0,
                    format!("segment starts at zxid {first:#x}, expected {exp:#x}"),
                ));
            }
        }
        let mut pos = SEGMENT_HEADER_BYTES as usize;
        loop {
            match parse_record(&bytes, pos) {
                Some((logged, len)) => {
                    let zxid = logged.txn.zxid;
                    if expected.is_some_and(|e| e != zxid) || (expected.is_none() && zxid != *first)
                    {
                        return Err(StorageError::corrupt(
                            path,
                            pos as u64,
                            format!("zxid {zxid:#x} out of sequence"),
                        ));
                    }
                    expected = Some(zxid + 1);
                    end.last_zxid = zxid;
                    if zxid > after_zxid {
                        visited += 1;
                        visit(logged.txn)?;
                    }
                    pos += len;
                }
                None => {
                    let rest_is_zero = bytes[pos..].iter().all(|b| *b == 0);
                    if !rest_is_zero {
                        let bad = expected.unwrap_or(*first);
                        if !last_segment || later_batch_exists(&bytes, pos + 1, bad) {
                            return Err(StorageError::corrupt(
                                path,
                                pos as u64,
                                "record fails its checksum and later synced records follow",
                            ));
                        }
                        // Torn tail: the last batch never finished syncing, so nothing in it
                        // was acknowledged. Zero it so that it cannot be misread later.
                        let dropped = bytes.len() - pos;
                        let mut f = storage
                            .open_write(path)
                            .map_err(|e| StorageError::io("open", path, e))?;
                        f.write_at(pos as u64, &vec![0; dropped])
                            .and_then(|_| f.sync_data())
                            .map_err(|e| StorageError::io("truncate", path, e))?;
                        truncated = Some((path.clone(), pos as u64, dropped as u64));
                    }
                    break;
                }
            }
        }
        end.segment = Some((*first, path.clone()));
        end.offset = pos as u64;
    }
    Ok(LogRead { visited, end, truncated })
}

/// Appends transactions; one [`LogWriter::sync`] makes a whole batch durable.
pub struct LogWriter {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    segment_bytes: u64,
    file: Option<(i64, Box<dyn StorageFile>)>,
    offset: u64,
    pending: Writer,
    /// One transaction's encoding, reused: a fresh buffer per append was an allocation, its
    /// growth and its free on every write.
    scratch: Writer,
    batch_first: Option<i64>,
    last_zxid: i64,
    /// Last zxid handed to the file, synced or not.
    unsynced_zxid: i64,
    synced_zxid: i64,
    /// Record bytes appended since this writer opened (headers included).
    appended_bytes: u64,
    /// Whether [`LogWriter::take_spare_request`] has asked for a spare for this segment.
    spare_requested: bool,
}

impl LogWriter {
    /// A writer continuing at `end` (from [`read`]). A spare left by an earlier process is
    /// removed: it may have been written for another segment size.
    ///
    /// # Errors
    /// [`StorageError::Io`] if the last segment cannot be opened or a stale spare removed.
    pub fn open(
        storage: Arc<dyn Storage>,
        dir: &Path,
        segment_bytes: u64,
        end: &LogEnd,
    ) -> Result<LogWriter, StorageError> {
        for name in [SPARE_TMP_NAME, SPARE_NAME] {
            remove_if_present(&*storage, &dir.join(name))?;
        }
        let file = match &end.segment {
            Some((first, path)) => Some((
                *first,
                storage.open_write(path).map_err(|e| StorageError::io("open", path, e))?,
            )),
            None => None,
        };
        Ok(LogWriter {
            storage,
            dir: dir.to_path_buf(),
            segment_bytes: segment_bytes.max(SEGMENT_HEADER_BYTES + 64),
            file,
            offset: end.offset,
            pending: Writer::new(),
            scratch: Writer::new(),
            batch_first: None,
            last_zxid: end.last_zxid,
            unsynced_zxid: end.last_zxid,
            synced_zxid: end.last_zxid,
            appended_bytes: 0,
            spare_requested: false,
        })
    }

    /// True once per segment, when a quarter of it is used: the moment to start
    /// [`prepare_spare`] for the next one. A log that never writes that much never pays for
    /// a spare.
    pub fn take_spare_request(&mut self) -> bool {
        let due = self.file.is_some() && self.offset >= self.segment_bytes / 4;
        let take = due && !self.spare_requested;
        self.spare_requested |= take;
        take
    }

    /// The last zxid appended.
    pub fn last_zxid(&self) -> i64 {
        self.last_zxid
    }

    /// The last zxid known durable.
    pub fn synced_zxid(&self) -> i64 {
        self.synced_zxid
    }

    /// Record bytes appended since this writer opened: what recovery would replay of them.
    pub fn appended_bytes(&self) -> u64 {
        self.appended_bytes
    }

    /// Buffers a transaction for the current batch. Nothing is durable until
    /// [`LogWriter::sync`].
    ///
    /// # Errors
    /// [`StorageError::Io`] if rolling to a new segment fails.
    pub fn append(&mut self, txn: &Txn) -> Result<(), StorageError> {
        self.encode(txn);
        let record_len = (RECORD_HEADER_BYTES + self.scratch.len()) as u64;
        let used = self.offset + self.pending.len() as u64;
        let has_records = used > SEGMENT_HEADER_BYTES;
        if self.file.is_none() || (has_records && used + record_len > self.segment_bytes) {
            self.roll(txn.zxid)?;
            // Rolling synced the old segment, so this record opens a new batch.
            self.encode(txn);
        }
        let payload = self.scratch.as_bytes();
        self.pending.raw(&(payload.len() as u32).to_be_bytes());
        self.pending.raw(&crc32fast::hash(payload).to_be_bytes());
        self.pending.raw(payload);
        self.appended_bytes += (RECORD_HEADER_BYTES + payload.len()) as u64;
        self.last_zxid = txn.zxid;
        if self.scratch.len() > REUSED_BUFFER_BYTES_MAX {
            self.scratch = Writer::new();
        }
        Ok(())
    }

    fn encode(&mut self, txn: &Txn) {
        let batch_first = *self.batch_first.get_or_insert(txn.zxid);
        self.scratch.clear();
        codec::encode(txn, batch_first, &mut self.scratch);
    }

    /// Writes the pending batch and makes it durable; returns the last durable zxid.
    ///
    /// # Errors
    /// [`StorageError::Io`] if the write or the sync fails. The server must then stop: the
    /// batch may or may not be on disk, and nothing in it may be acknowledged.
    pub fn sync(&mut self) -> Result<i64, StorageError> {
        if self.pending.is_empty() && self.unsynced_zxid == self.synced_zxid {
            return Ok(self.synced_zxid);
        }
        self.write_pending()?;
        let (first, file) = self.file.as_mut().expect("append opened a segment");
        file.sync_data()
            .map_err(|e| StorageError::io("fdatasync", &self.dir.join(segment_name(*first)), e))?;
        self.batch_first = None;
        self.synced_zxid = self.unsynced_zxid;
        Ok(self.synced_zxid)
    }

    /// Hands the pending batch to the file without syncing it: the moment a crash can leave
    /// a torn tail. [`LogWriter::sync`] does this first; tests call it alone.
    ///
    /// # Errors
    /// [`StorageError::Io`] if the write fails.
    pub fn write_pending(&mut self) -> Result<(), StorageError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let bytes = self.pending.as_bytes();
        let (first, file) = self.file.as_mut().expect("append opened a segment");
        file.write_at(self.offset, bytes)
            .map_err(|e| StorageError::io("write", &self.dir.join(segment_name(*first)), e))?;
        self.offset += bytes.len() as u64;
        // Kept for the next batch unless one unusually large batch grew it.
        if self.pending.len() > REUSED_BUFFER_BYTES_MAX {
            self.pending = Writer::new();
        } else {
            self.pending.clear();
        }
        self.unsynced_zxid = self.last_zxid;
        Ok(())
    }

    /// Finishes the current segment (syncing what it holds) and starts one at `first_zxid`.
    fn roll(&mut self, first_zxid: i64) -> Result<(), StorageError> {
        if self.file.is_some() {
            // The records already batched belong to the old segment.
            self.sync()?;
        }
        self.batch_first = None;
        let path = self.dir.join(segment_name(first_zxid));
        // A crash after the rename but before the header is synced leaves an all-zero last
        // segment, which recovery removes; one before the directory sync may leave the file
        // under the spare's name, which the next open removes.
        let spare = match self.storage.rename(&self.dir.join(SPARE_NAME), &path) {
            Ok(()) => true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(e) => return Err(StorageError::io("rename", &path, e)),
        };
        let mut f =
            self.storage.open_write(&path).map_err(|e| StorageError::io("create", &path, e))?;
        let mut header = Vec::with_capacity(SEGMENT_HEADER_BYTES as usize);
        header.extend_from_slice(SEGMENT_MAGIC);
        header.extend_from_slice(&first_zxid.to_be_bytes());
        let sized = if spare { Ok(()) } else { f.set_len(self.segment_bytes) };
        sized
            .and_then(|_| f.write_at(0, &header))
            .and_then(|_| f.sync_data())
            .map_err(|e| StorageError::io("preallocate", &path, e))?;
        self.storage
            .sync_dir(&self.dir)
            .map_err(|e| StorageError::io("fsync dir", &self.dir, e))?;
        self.file = Some((first_zxid, f));
        self.offset = SEGMENT_HEADER_BYTES;
        self.spare_requested = false;
        Ok(())
    }
}
