//! Jute primitives: the big-endian encodings of `BinaryInputArchive` / `BinaryOutputArchive`.
//!
//! Every multi-byte integer in this crate is written here and nowhere else, so byte order has
//! exactly one home.

use crate::DecodeError;

/// Reads jute primitives from one complete frame.
///
/// A frame is already whole when it reaches the reader, so running out of bytes is an
/// [`DecodeError::UnexpectedEof`] (a malformed frame), never "need more bytes".
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader over `buf`. Lengths of buffers, strings and vectors are bounded by the bytes
    /// left in the frame, which is itself bounded by `max_packet_bytes` at framing time.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Bytes not yet consumed.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Whether every byte has been consumed.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.remaining() < n {
            return Err(DecodeError::UnexpectedEof { needed: n, remaining: self.remaining() });
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// `n` raw bytes.
    pub fn read_bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        self.take(n)
    }

    /// A jute `boolean`: one byte, non-zero is true (Java's `readBoolean`).
    pub fn read_bool(&mut self) -> Result<bool, DecodeError> {
        Ok(self.take(1)?[0] != 0)
    }

    /// A jute `int`.
    pub fn read_i32(&mut self) -> Result<i32, DecodeError> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A jute `long`.
    pub fn read_i64(&mut self) -> Result<i64, DecodeError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }

    /// Reads a length prefix; `-1` is null and any other negative value is an error.
    fn read_len(&mut self) -> Result<Option<usize>, DecodeError> {
        let len = self.read_i32()?;
        match len {
            -1 => Ok(None),
            n if n < 0 => Err(DecodeError::NegativeLength(n)),
            // `take` then checks the length against what the frame holds.
            n => Ok(Some(n as usize)),
        }
    }

    /// A jute `buffer`; null (length -1) reads as `None`.
    pub fn read_buffer_opt(&mut self) -> Result<Option<Vec<u8>>, DecodeError> {
        match self.read_len()? {
            None => Ok(None),
            Some(n) => Ok(Some(self.take(n)?.to_vec())),
        }
    }

    /// A jute `buffer`; null reads as empty, which is how ZooKeeper stores it.
    pub fn read_buffer(&mut self) -> Result<Vec<u8>, DecodeError> {
        Ok(self.read_buffer_opt()?.unwrap_or_default())
    }

    /// A jute `ustring`; null reads as `None`.
    ///
    /// Invalid UTF-8 is replaced with U+FFFD, as Java's `new String(bytes, UTF_8)` does. The
    /// replacement character is itself an illegal path character, so a mangled path is refused
    /// by path validation with the same error ZooKeeper gives.
    pub fn read_string_opt(&mut self) -> Result<Option<String>, DecodeError> {
        match self.read_len()? {
            None => Ok(None),
            Some(n) => Ok(Some(String::from_utf8_lossy(self.take(n)?).into_owned())),
        }
    }

    /// A jute `ustring`; null reads as the empty string.
    pub fn read_string(&mut self) -> Result<String, DecodeError> {
        Ok(self.read_string_opt()?.unwrap_or_default())
    }

    /// A jute `vector<T>`; null reads as empty.
    ///
    /// The claimed count is never trusted for allocation: each element takes at least
    /// `min_elem_bytes`, so the capacity is bounded by what the frame can hold.
    pub fn read_vec<T>(
        &mut self,
        min_elem_bytes: usize,
        mut read_one: impl FnMut(&mut Self) -> Result<T, DecodeError>,
    ) -> Result<Vec<T>, DecodeError> {
        let n = match self.read_i32()? {
            -1 => return Ok(Vec::new()),
            n if n < 0 => return Err(DecodeError::NegativeLength(n)),
            n => n as usize,
        };
        let bound = self.remaining() / min_elem_bytes.max(1);
        if n > bound {
            return Err(DecodeError::UnexpectedEof {
                needed: n * min_elem_bytes,
                remaining: self.remaining(),
            });
        }
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(read_one(self)?);
        }
        Ok(out)
    }

    /// A vector of `ustring`s.
    pub fn read_string_vec(&mut self) -> Result<Vec<String>, DecodeError> {
        self.read_vec(4, Self::read_string)
    }
}

/// Writes jute primitives into a growable buffer.
#[derive(Debug, Default, Clone)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    /// An empty writer.
    pub fn new() -> Self {
        Writer::default()
    }

    /// An empty writer with room for `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> Self {
        Writer { buf: Vec::with_capacity(capacity) }
    }

    /// A writer that starts with a 4-byte placeholder for the frame length; finish it with
    /// [`Writer::finish_frame`].
    pub fn frame() -> Self {
        Writer::frame_with_capacity(64)
    }

    /// Like [`Writer::frame`], reserving `capacity` bytes up front.
    pub fn frame_with_capacity(capacity: usize) -> Self {
        let mut buf = Vec::with_capacity(capacity + 4);
        buf.extend_from_slice(&[0; 4]);
        Writer { buf }
    }

    /// Patches the length prefix written by [`Writer::frame`] and returns the whole frame.
    pub fn finish_frame(mut self) -> Vec<u8> {
        let len = (self.buf.len() - 4) as i32;
        self.buf[..4].copy_from_slice(&len.to_be_bytes());
        self.buf
    }

    /// The bytes written so far.
    pub fn into_inner(self) -> Vec<u8> {
        self.buf
    }

    /// The bytes written so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Forgets what was written and keeps the allocation, for a writer reused as a buffer.
    pub fn clear(&mut self) {
        self.buf.clear();
    }

    /// Number of bytes written so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether nothing has been written.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// A jute `boolean`.
    pub fn bool(&mut self, v: bool) -> &mut Self {
        self.buf.push(u8::from(v));
        self
    }

    /// A jute `int`.
    pub fn i32(&mut self, v: i32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// A jute `long`.
    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// A jute `buffer`.
    pub fn buffer(&mut self, v: &[u8]) -> &mut Self {
        self.i32(v.len() as i32);
        self.buf.extend_from_slice(v);
        self
    }

    /// A jute `buffer` that may be null.
    pub fn buffer_opt(&mut self, v: Option<&[u8]>) -> &mut Self {
        match v {
            Some(v) => self.buffer(v),
            None => self.i32(-1),
        }
    }

    /// A jute `ustring`.
    pub fn string(&mut self, v: &str) -> &mut Self {
        self.buffer(v.as_bytes())
    }

    /// A jute `vector<ustring>`.
    pub fn string_vec<S: AsRef<str>>(&mut self, v: &[S]) -> &mut Self {
        self.i32(v.len() as i32);
        for s in v {
            self.string(s.as_ref());
        }
        self
    }

    /// Raw bytes, already encoded.
    pub fn raw(&mut self, v: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(v);
        self
    }
}
