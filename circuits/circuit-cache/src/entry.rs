//! The entry file: `MAGIC ‖ key (32) ‖ SHA-256 of the payload (32) ‖ payload length (u64 LE) ‖
//! payload`, written atomically and checked in full before the payload is decoded.

use std::fs;
use std::io::{self, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use sha2::{Digest, Sha256};

pub(crate) const MAGIC: &[u8; 8] = b"TGRIDCC1";
pub(crate) const HEADER_LEN: usize = 8 + 32 + 32 + 8;

/// `Ok(None)` if there is no entry; `Err` (with the reason) if there is one we cannot use.
pub(crate) fn load<T>(
    path: &Path,
    digest: &[u8; 32],
    decode: impl FnOnce(&[u8]) -> Result<T, String>,
) -> Result<Option<T>, String> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let payload = checked_payload(&bytes, digest)?;
    match catch_unwind(AssertUnwindSafe(|| decode(payload))) {
        Ok(decoded) => decoded.map(Some),
        Err(_) => Err("decoding the entry panicked".into()),
    }
}

/// The payload of an entry file, after checking its magic, key, length and content digest.
fn checked_payload<'a>(bytes: &'a [u8], digest: &[u8; 32]) -> Result<&'a [u8], String> {
    if bytes.len() < HEADER_LEN || &bytes[..8] != MAGIC {
        return Err("not a circuit cache entry".into());
    }
    if &bytes[8..40] != digest {
        return Err("the entry was written for another key".into());
    }
    let payload = &bytes[HEADER_LEN..];
    let declared = u64::from_le_bytes(bytes[72..80].try_into().expect("8 bytes"));
    if declared != payload.len() as u64 {
        return Err(format!("truncated entry: {} of {declared} bytes", payload.len()));
    }
    if Sha256::digest(payload).as_slice() != &bytes[40..72] {
        return Err("the entry's content digest does not match".into());
    }
    Ok(payload)
}

/// Writes an entry atomically (a temporary file renamed into place), returning its size.
pub(crate) fn store(path: &Path, digest: &[u8; 32], payload: &[u8]) -> Result<usize, String> {
    let mut header = Vec::with_capacity(HEADER_LEN);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(digest);
    header.extend_from_slice(&Sha256::digest(payload));
    header.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    let temporary = path.with_extension(format!("tmp.{}", std::process::id()));
    let write = || -> io::Result<()> {
        // Another executable may have pruned this directory since it was opened.
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir)?;
        }
        let mut file = fs::File::create(&temporary)?;
        file.write_all(&header)?;
        file.write_all(payload)?;
        drop(file);
        fs::rename(&temporary, path)
    };
    write().map_err(|e| {
        let _ = fs::remove_file(&temporary);
        e.to_string()
    })?;
    Ok(HEADER_LEN + payload.len())
}
