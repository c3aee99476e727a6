//! Where a signing key comes from: an encrypted keystore file (the Web3 Secret Storage format
//! Foundry's `cast wallet import` writes, and geth's), or an environment variable. Never the
//! command line: every process on the machine can read another's arguments (`ps`,
//! `/proc/<pid>/cmdline`), and shells keep them in their history.

use std::path::{Path, PathBuf};

use alloy::signers::local::PrivateKeySigner;

use crate::client::parse_signer;
use crate::{Error, Result};

/// The environment variable that may hold a raw private key (0x + 64 hex).
pub const PRIVATE_KEY_ENV: &str = "TGRID_PRIVATE_KEY";
/// The environment variable that may hold a keystore's password.
pub const KEYSTORE_PASSWORD_ENV: &str = "TGRID_KEYSTORE_PASSWORD";

/// Largest keystore file read: a real one is under 1 KiB.
const MAX_KEYSTORE_BYTES: u64 = 64 << 10;
/// Largest scrypt cost accepted (log2 N): geth's "standard" is 18, Foundry's 13. A file asking
/// for more would take minutes and gigabytes before its password could be refused.
const MAX_SCRYPT_LOG_N: u32 = 20;
/// Largest PBKDF2 iteration count accepted (geth writes 262,144).
const MAX_PBKDF2_ROUNDS: u64 = 10_000_000;

fn key_err(reason: impl std::fmt::Display) -> Error {
    Error::Chain { step: "signing key".into(), reason: reason.to_string() }
}

/// An encrypted keystore and where its password comes from.
#[derive(Clone, Debug)]
pub struct Keystore {
    /// The keystore file.
    pub path: PathBuf,
    /// A file holding the password (its first line); without it, [`KEYSTORE_PASSWORD_ENV`].
    pub password_file: Option<PathBuf>,
}

impl Keystore {
    /// Decrypts the key. The password comes from `password_file` or [`KEYSTORE_PASSWORD_ENV`];
    /// a wrong password, a malformed file or a key-derivation cost beyond the bounds above is a
    /// clear error.
    pub fn signer(&self) -> Result<PrivateKeySigner> {
        let password = match &self.password_file {
            Some(file) => read_password_file(file)?,
            None => std::env::var(KEYSTORE_PASSWORD_ENV).map_err(|_| {
                key_err(format!(
                    "keystore {} needs a password: give a password file or set {KEYSTORE_PASSWORD_ENV}",
                    self.path.display()
                ))
            })?,
        };
        decrypt(&self.path, &password)
    }
}

fn read_password_file(file: &Path) -> Result<String> {
    let text = read_bounded(file, "password file")?;
    // The first line, as `cast --password-file` reads it; a trailing newline is no part of it.
    Ok(text.lines().next().unwrap_or_default().to_string())
}

fn read_bounded(file: &Path, what: &str) -> Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(file)
        .and_then(|f| f.take(MAX_KEYSTORE_BYTES + 1).read_to_string(&mut text))
        .map_err(|e| key_err(format!("{what} {}: {e}", file.display())))?;
    if text.len() as u64 > MAX_KEYSTORE_BYTES {
        return Err(key_err(format!("{what} {}: larger than {MAX_KEYSTORE_BYTES} bytes", file.display())));
    }
    Ok(text)
}

/// Checks the key-derivation parameters a keystore asks for before any work is spent on them.
fn check_kdf(path: &Path, json: &serde_json::Value) -> Result<()> {
    let bad = |reason: String| key_err(format!("keystore {}: {reason}", path.display()));
    let crypto = json.get("crypto").or_else(|| json.get("Crypto")).ok_or_else(|| bad("no `crypto` object".into()))?;
    let params = crypto.get("kdfparams").ok_or_else(|| bad("no `kdfparams`".into()))?;
    match crypto.get("kdf").and_then(|k| k.as_str()) {
        Some("scrypt") => {
            let n = params.get("n").and_then(|n| n.as_u64()).ok_or_else(|| bad("scrypt without `n`".into()))?;
            if !n.is_power_of_two() || n.trailing_zeros() > MAX_SCRYPT_LOG_N {
                return Err(bad(format!("scrypt cost n = {n} is not a power of two at most 2^{MAX_SCRYPT_LOG_N}")));
            }
            let r = params.get("r").and_then(|r| r.as_u64()).unwrap_or(0);
            let p = params.get("p").and_then(|p| p.as_u64()).unwrap_or(0);
            if !(1..=16).contains(&r) || !(1..=16).contains(&p) {
                return Err(bad(format!("scrypt r = {r}, p = {p}: each must be 1 to 16")));
            }
        }
        Some("pbkdf2") => {
            let c = params.get("c").and_then(|c| c.as_u64()).ok_or_else(|| bad("pbkdf2 without `c`".into()))?;
            if c == 0 || c > MAX_PBKDF2_ROUNDS {
                return Err(bad(format!("pbkdf2 rounds {c}: at most {MAX_PBKDF2_ROUNDS}")));
            }
        }
        other => return Err(bad(format!("unknown key derivation {other:?} (scrypt or pbkdf2)"))),
    }
    Ok(())
}

/// Decrypts the keystore at `path` with `password`. The file is read once: the bytes whose key
/// derivation was checked are the bytes decrypted (alloy decrypts only from a path, so they go
/// through a private temporary copy, itself only the encrypted keystore), so a file swapped
/// after the check cannot make us spend an unchecked derivation.
pub fn decrypt(path: &Path, password: &str) -> Result<PrivateKeySigner> {
    let text = read_bounded(path, "keystore")?;
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| key_err(format!("keystore {}: not a JSON keystore ({e})", path.display())))?;
    check_kdf(path, &json)?;
    let copy = checked_copy(&text).map_err(|e| key_err(format!("keystore {}: a private copy: {e}", path.display())))?;
    PrivateKeySigner::decrypt_keystore(copy.path(), password).map_err(|e| {
        let reason = match e.to_string() {
            s if s.contains("Mac Mismatch") || s.contains("MacMismatch") => "wrong password".to_string(),
            s => s,
        };
        key_err(format!("keystore {}: {reason}", path.display()))
    })
}

/// `text` in a new temporary file only this user can read, removed when dropped.
fn checked_copy(text: &str) -> std::io::Result<tempfile::NamedTempFile> {
    use std::io::Write;
    let mut copy = tempfile::NamedTempFile::new()?;
    copy.write_all(text.as_bytes())?;
    copy.flush()?;
    Ok(copy)
}

/// The signer of a long-running service whose settings name either a keystore (and its password
/// file) or a raw key: the keystore wins.
pub fn settings_signer(
    keystore: Option<&Path>,
    password_file: Option<&Path>,
    private_key: &str,
) -> Result<PrivateKeySigner> {
    match keystore {
        Some(path) => {
            Keystore { path: path.to_path_buf(), password_file: password_file.map(Path::to_path_buf) }.signer()
        }
        None => parse_signer(private_key),
    }
}

/// The signer a tool runs as: the keystore if one is given, else [`PRIVATE_KEY_ENV`], else
/// `None` (the caller decides whether a devnet default applies).
pub fn signer_from(keystore: Option<&Keystore>) -> Result<Option<PrivateKeySigner>> {
    if let Some(keystore) = keystore {
        return keystore.signer().map(Some);
    }
    match std::env::var(PRIVATE_KEY_ENV) {
        Ok(key) if !key.trim().is_empty() => parse_signer(&key).map(Some),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";

    fn keystore(dir: &Path, password: &str) -> PathBuf {
        let key = alloy::hex::decode(KEY).unwrap();
        PrivateKeySigner::encrypt_keystore(dir, &mut rand::thread_rng(), key, password, Some("provider")).unwrap();
        dir.join("provider")
    }

    #[test]
    fn a_keystore_decrypts_with_its_password_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = keystore(dir.path(), "hunter2");
        let expected = parse_signer(KEY).unwrap().address();
        assert_eq!(decrypt(&path, "hunter2").unwrap().address(), expected);
        let password_file = dir.path().join("password");
        std::fs::write(&password_file, "hunter2\n").unwrap();
        let store = Keystore { path: path.clone(), password_file: Some(password_file) };
        assert_eq!(store.signer().unwrap().address(), expected);
        let wrong = decrypt(&path, "hunter3").unwrap_err().to_string();
        assert!(wrong.contains("wrong password"), "{wrong}");
        assert!(!wrong.contains(&KEY[2..]), "the key never appears in an error");
    }

    #[test]
    fn hostile_keystores_are_refused_before_any_key_derivation() {
        let dir = tempfile::tempdir().unwrap();
        let path = keystore(dir.path(), "pw");
        let mut json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let cases: [(&str, serde_json::Value, &str); 4] = [
            ("n", serde_json::json!(1u64 << 40), "scrypt cost"),
            ("n", serde_json::json!(3), "power of two"),
            ("r", serde_json::json!(1_000_000), "r = "),
            ("p", serde_json::json!(0), "p = 0"),
        ];
        for (field, value, expected) in cases {
            let mut hostile = json.clone();
            hostile["crypto"]["kdfparams"][field] = value;
            std::fs::write(&path, hostile.to_string()).unwrap();
            let err = decrypt(&path, "pw").unwrap_err().to_string();
            assert!(err.contains(expected), "{field}: {err}");
        }
        json["crypto"]["kdf"] = serde_json::json!("argon9");
        std::fs::write(&path, json.to_string()).unwrap();
        assert!(decrypt(&path, "pw").unwrap_err().to_string().contains("unknown key derivation"));
        for garbage in [&b"\x00\xff random"[..], b"{}", b"[1,2]"] {
            std::fs::write(&path, garbage).unwrap();
            assert!(decrypt(&path, "pw").is_err());
        }
        std::fs::write(&path, vec![b' '; (MAX_KEYSTORE_BYTES + 1) as usize]).unwrap();
        assert!(decrypt(&path, "pw").unwrap_err().to_string().contains("larger than"));
    }
}
