//! Opening-key files: one hex line, readable by its owner only, created on first use.

use std::io::Write;
use std::path::Path;

use crate::{Error, OpeningKey, Result};

/// Largest key file read (a key is 66 characters).
const MAX_KEY_FILE_BYTES: u64 = 4096;

/// The opening key in `path`, created (with a fresh key, mode 0600) if the file does not exist.
/// Returns the key and whether it was just created. A file that exists but holds no key is an
/// error, never replaced: what was sealed to it would be lost.
pub fn load_or_create(path: &Path) -> Result<(OpeningKey, bool)> {
    let io = |e: std::io::Error| Error::KeyFile(format!("{}: {e}", path.display()));
    match std::fs::metadata(path) {
        Ok(meta) => {
            if meta.len() > MAX_KEY_FILE_BYTES {
                return Err(Error::KeyFile(format!("{}: {} bytes, not a key file", path.display(), meta.len())));
            }
            let text = std::fs::read_to_string(path).map_err(io)?;
            let key = OpeningKey::from_hex(text.trim())
                .map_err(|e| Error::KeyFile(format!("{}: not an opening key ({e})", path.display())))?;
            Ok((key, false))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(io)?;
            }
            let (key, _) = OpeningKey::generate();
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let mut file = options.open(path).map_err(io)?;
            file.write_all(format!("{}\n", key.to_hex()).as_bytes()).map_err(io)?;
            file.sync_all().map_err(io)?;
            Ok((key, true))
        }
        Err(e) => Err(io(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_file_is_created_once_private_and_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys").join("sealing.key");
        let (key, created) = load_or_create(&path).unwrap();
        assert!(created);
        let (again, created) = load_or_create(&path).unwrap();
        assert!(!created);
        assert_eq!(again.sealing_key(), key.sealing_key());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        std::fs::write(&path, "not a key").unwrap();
        assert!(matches!(load_or_create(&path), Err(Error::KeyFile(m)) if m.contains("not an opening key")));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "not a key", "a damaged key file is left as it is");
    }
}
