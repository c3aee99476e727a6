//! Bounds-checked binary encoding shared by the file formats.
//!
//! Every length read from untrusted bytes is checked against the bytes that remain before
//! anything is allocated, so a hostile length can never make us allocate more than the input.

use crate::error::{Error, Result};

/// Little-endian writer.
#[derive(Default, Debug)]
pub struct Writer(Vec<u8>);

impl Writer {
    /// The bytes written so far.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }
    /// Writes a little-endian `u8`.
    pub fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    /// Writes a little-endian `u16`.
    pub fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    /// Writes a little-endian `u32`.
    pub fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    /// Writes a little-endian `i32`.
    pub fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    /// Writes a little-endian `i64`.
    pub fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    /// Writes bytes as they are (no length).
    pub fn raw(&mut self, v: &[u8]) {
        self.0.extend_from_slice(v);
    }
    /// Length-prefixed bytes.
    pub fn bytes(&mut self, v: &[u8]) {
        self.u32(v.len() as u32);
        self.raw(v);
    }
    /// Writes a length-prefixed UTF-8 string.
    pub fn str(&mut self, v: &str) {
        self.bytes(v.as_bytes());
    }
    /// Writes a length-prefixed list of u32 values.
    pub fn usizes(&mut self, v: &[usize]) {
        self.u32(v.len() as u32);
        v.iter().for_each(|&x| self.u32(x as u32));
    }
}

/// Little-endian reader over untrusted bytes.
#[derive(Debug)]
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// Starts reading at the first byte of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self { data, pos: 0 }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| Error::Format(format!("truncated: needs {n} more bytes at offset {}", self.pos)))?;
        let out = &self.data[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// Reads exactly `N` bytes.
    pub fn raw<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }
    /// Reads a little-endian `u8`.
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    /// A boolean byte (0 or 1; anything else is an error).
    pub fn bool(&mut self) -> Result<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(Error::Format(format!("invalid boolean byte {v}"))),
        }
    }
    /// Reads a little-endian `u16`.
    pub fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.raw()?))
    }
    /// Reads a little-endian `u32`.
    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.raw()?))
    }
    /// Reads a little-endian `i32`.
    pub fn i32(&mut self) -> Result<i32> {
        Ok(i32::from_le_bytes(self.raw()?))
    }
    /// Reads a little-endian `i64`.
    pub fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(self.raw()?))
    }

    /// Reads a count of items that take at least `min_item_bytes` each, rejecting counts over
    /// `max` or larger than the remaining input could hold.
    pub fn len_prefix(&mut self, max: usize, min_item_bytes: usize) -> Result<usize> {
        let n = self.u32()? as usize;
        if n > max || n.saturating_mul(min_item_bytes.max(1)) > self.remaining() {
            return Err(Error::Format(format!(
                "length {n} at offset {} exceeds the limit or the remaining input",
                self.pos - 4
            )));
        }
        Ok(n)
    }

    /// Length-prefixed bytes, at most `max`.
    pub fn bytes(&mut self, max: usize) -> Result<&'a [u8]> {
        let n = self.len_prefix(max, 1)?;
        self.take(n)
    }

    /// Reads a length-prefixed UTF-8 string of at most `max` bytes.
    pub fn str(&mut self, max: usize) -> Result<String> {
        let b = self.bytes(max)?;
        String::from_utf8(b.to_vec()).map_err(|_| Error::Format("name is not UTF-8".into()))
    }

    /// Reads a length-prefixed list of at most `max` u32 values.
    pub fn usizes(&mut self, max: usize) -> Result<Vec<usize>> {
        let n = self.len_prefix(max, 4)?;
        (0..n).map(|_| Ok(self.u32()? as usize)).collect()
    }

    /// Fails unless every byte was consumed.
    pub fn finish(&self) -> Result<()> {
        if self.remaining() != 0 {
            return Err(Error::Format(format!("{} trailing bytes", self.remaining())));
        }
        Ok(())
    }
}

/// Reads and checks a file header: the 8-byte `magic` and the little-endian u16 `version`;
/// `what` names the file kind in errors.
pub fn check_header(r: &mut Reader<'_>, magic: &[u8; 8], version: u16, what: &str) -> Result<()> {
    let got: [u8; 8] =
        r.raw().map_err(|_| Error::Format(format!("not a {what}: the file is shorter than its header")))?;
    if &got != magic {
        return Err(Error::Format(format!("not a {what}: bad magic")));
    }
    let v = r.u16()?;
    if v != version {
        return Err(Error::Format(format!("{what} version {v} is not supported (expected {version})")));
    }
    Ok(())
}
