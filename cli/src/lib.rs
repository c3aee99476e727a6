//! Shared plumbing of the TensorGrid command-line tools (`tgrid-prover`, `tgrid-verifier`,
//! `tgrid-sequencer`): one convention for exit codes, JSON output, progress and logging.
//!
//! Exit codes: 0 success, 1 failure (an invalid proof, a failed step), 2 bad input (unreadable
//! or malformed files, wrong arguments). With `--json`, a failure also prints one JSON object
//! `{"ok": false, "error": "..."}` on stdout.

use std::time::Duration;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};

/// Marks an error caused by the user's input (exit code 2).
#[derive(Debug)]
pub struct BadInput(pub anyhow::Error);

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.0)
    }
}

impl std::error::Error for BadInput {}

/// Wraps an error as bad input.
pub fn bad_input(e: impl Into<anyhow::Error>) -> anyhow::Error {
    anyhow::Error::new(BadInput(e.into()))
}

/// Writes `line` and a newline to stdout. A reader that has gone away (`| head`) ends the process
/// quietly with the status a SIGPIPE would give (141) instead of `println!`'s panic.
pub fn print_stdout(line: &str) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{line}").and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(141),
        other => Ok(other?),
    }
}

/// Text or JSON output.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    /// Print one JSON object on stdout instead of text.
    pub json: bool,
}

impl Output {
    /// Prints `value` as one JSON line, or the text.
    pub fn emit(&self, value: serde_json::Value, text: impl FnOnce() -> String) -> Result<()> {
        let line = if self.json { serde_json::to_string(&value)? } else { text() };
        print_stdout(&line)
    }

    /// Prints the error and exits: 2 for bad input, 1 for anything else.
    pub fn exit_with(&self, result: Result<()>) -> ! {
        match result {
            Ok(()) => std::process::exit(0),
            Err(e) => {
                let code = if e.downcast_ref::<BadInput>().is_some() { 2 } else { 1 };
                if self.json {
                    println!("{}", serde_json::json!({ "ok": false, "valid": false, "error": format!("{e:#}") }));
                }
                eprintln!("error: {e:#}");
                std::process::exit(code)
            }
        }
    }

    /// A spinner on stderr for a step slower than a couple of seconds (hidden in JSON mode).
    pub fn spinner(&self, message: &str) -> ProgressBar {
        if self.json {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::new_spinner();
        bar.set_style(ProgressStyle::with_template("{spinner} {msg} [{elapsed}]").expect("static template"));
        bar.set_message(message.to_string());
        bar.enable_steady_tick(Duration::from_millis(120));
        bar
    }

    /// A progress bar of `len` steps on stderr (hidden in JSON mode).
    pub fn progress(&self, len: u64, unit: &str) -> ProgressBar {
        if self.json {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::new(len);
        let template = format!("{{bar:30}} {{pos}}/{{len}} {unit} ({{msg}}) [{{elapsed}} / ~{{eta}}]");
        bar.set_style(ProgressStyle::with_template(&template).expect("valid template"));
        bar
    }
}

/// Logs to stderr; `RUST_LOG` sets the level (default: warnings).
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into());
    // arkworks' `ns!` opens an info span (target `gr1cs`) per namespace and leaks it on purpose:
    // with spans enabled, synthesizing the wrap's ~2M constraints exhausts memory (measured: 24
    // GB in minutes under RUST_LOG=info). Never enable that target, whatever RUST_LOG says.
    let filter = filter.add_directive("gr1cs=off".parse().expect("a valid directive"));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
}

/// Parses `0x`-prefixed hex of exactly N bytes.
pub fn parse_hex<const N: usize>(s: &str, what: &str) -> Result<[u8; N]> {
    let digits = s.strip_prefix("0x").ok_or_else(|| anyhow::anyhow!("{what} must start with 0x"))?;
    if digits.len() != 2 * N {
        anyhow::bail!("{what} must have {} hex digits, got {}", 2 * N, digits.len());
    }
    let mut out = [0u8; N];
    hex::decode_to_slice(digits, &mut out).map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
    Ok(out)
}

/// Peak resident set size of this process so far, in MiB (Linux `VmHWM`); benchmarks report it.
pub fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// The kind of an `Option` setting of [`layered_settings`], which its environment variable's
/// text is read as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionalSetting {
    /// A string or a path.
    Text,
    /// An integer.
    Integer,
}

/// Layered settings of a long-running command: `T::default()`, overridden by the TOML `file`,
/// overridden by environment variables `<prefix><FIELD>` (field name upper case). Unknown
/// settings and ill-typed values are errors naming them. `optional` lists the `Option` fields
/// with their kind (absent from the defaults' table, so they are accepted by name and typed from
/// this list when they come from the environment).
pub fn layered_settings<T>(
    file: Option<&std::path::Path>,
    env: impl IntoIterator<Item = (String, String)>,
    prefix: &str,
    optional: &[(&str, OptionalSetting)],
) -> Result<T, String>
where
    T: serde::Serialize + serde::de::DeserializeOwned + Default,
{
    /// Largest settings file read.
    const MAX_CONFIG_BYTES: u64 = 1 << 20;
    let mut table = toml::Table::try_from(T::default()).map_err(|e| e.to_string())?;
    if let Some(path) = file {
        let at = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
        let len = std::fs::metadata(path).map_err(|e| at(&e))?.len();
        if len > MAX_CONFIG_BYTES {
            return Err(at(&format!("{len} bytes, more than a settings file holds")));
        }
        let text = std::fs::read_to_string(path).map_err(|e| at(&e))?;
        let from_file: toml::Table = text.parse().map_err(|e| at(&e))?;
        for (k, v) in from_file {
            if !table.contains_key(&k) && !optional.iter().any(|(name, _)| *name == k) {
                return Err(at(&format!("unknown setting {k:?}")));
            }
            table.insert(k, v);
        }
    }
    for (name, value) in env {
        let Some(key) = name.strip_prefix(prefix) else { continue };
        let key = key.to_ascii_lowercase();
        let kind = table.get(&key).cloned().or_else(|| {
            optional.iter().find(|(name, _)| *name == key).map(|(_, kind)| match kind {
                OptionalSetting::Text => toml::Value::String(String::new()),
                OptionalSetting::Integer => toml::Value::Integer(0),
            })
        });
        let typed = match kind {
            Some(toml::Value::Integer(_)) => {
                toml::Value::Integer(value.parse().map_err(|_| format!("{name}={value:?} is not an integer"))?)
            }
            Some(toml::Value::Boolean(_)) => {
                toml::Value::Boolean(value.parse().map_err(|_| format!("{name}={value:?} is not true or false"))?)
            }
            // Lists from the environment are comma-separated.
            Some(toml::Value::Array(_)) => toml::Value::Array(
                value
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| toml::Value::String(s.into()))
                    .collect(),
            ),
            Some(_) => toml::Value::String(value),
            None => return Err(format!("{name}: unknown setting")),
        };
        table.insert(key, typed);
    }
    table.try_into().map_err(|e: toml::de::Error| e.to_string())
}

/// The int8 output tensor of an output JSON: `output_int8` (tgrid-prover's files) or `output`
/// (the sequencer's published outputs); every value must be an integer in -128..=127.
pub fn int8_output(v: &serde_json::Value) -> Result<Vec<i8>> {
    let values = v
        .get("output_int8")
        .or_else(|| v.get("output"))
        .and_then(|o| o.as_array())
        .ok_or_else(|| anyhow::anyhow!("no output_int8 (or output) array"))?;
    values
        .iter()
        .map(|x| {
            x.as_i64()
                .and_then(|i| i8::try_from(i).ok())
                .ok_or_else(|| anyhow::anyhow!("output value {x} is not an int8"))
        })
        .collect()
}

/// The `output_key` of an output JSON (`tgrid order result --out` writes it for a private task:
/// the key its output was encrypted under), if any; anything but a hex string or null is refused.
pub fn output_key_field(v: &serde_json::Value) -> Result<Option<&str>> {
    match v.get("output_key") {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(hex)) => Ok(Some(hex)),
        Some(other) => Err(anyhow::anyhow!("output_key {other} is not a hex string")),
    }
}

/// Reads an output JSON file (at most 16 MiB) with [`int8_output`]; errors are bad input.
pub fn read_int8_output(path: &std::path::Path) -> Result<Vec<i8>> {
    use anyhow::Context;
    let v = read_output_json(path)?;
    int8_output(&v).with_context(|| path.display().to_string()).map_err(bad_input)
}

/// A file of at most `max` bytes (checked before reading), refused as bad input beyond it
/// ("larger than any {what}") or when unreadable.
pub fn read_bounded(path: &std::path::Path, max: u64, what: &str) -> Result<Vec<u8>> {
    use anyhow::Context;
    let len =
        std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display())).map_err(bad_input)?.len();
    if len > max {
        return Err(bad_input(anyhow::anyhow!("{}: {len} bytes, larger than any {what}", path.display())));
    }
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display())).map_err(bad_input)
}

/// An output file as JSON, refused (bad input) beyond any output's size or when not JSON.
pub fn read_output_json(path: &std::path::Path) -> Result<serde_json::Value> {
    use anyhow::Context;
    let bytes = read_bounded(path, 16 << 20, "output")?;
    serde_json::from_slice(&bytes).with_context(|| format!("{} is not JSON", path.display())).map_err(bad_input)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn output_files_of_both_shapes_decode_and_out_of_range_values_are_refused() {
        assert_eq!(int8_output(&json!({"output_int8": [1, -2, 127]})).unwrap(), vec![1, -2, 127]);
        assert_eq!(int8_output(&json!({"task_id": "0x", "output": [-128]})).unwrap(), vec![-128]);
        assert!(int8_output(&json!({"output": [128]})).is_err());
        assert!(int8_output(&json!({"output": [1.5]})).is_err());
        assert!(int8_output(&json!({"outputs": [1]})).is_err());
    }

    #[test]
    fn an_output_key_is_a_hex_string_or_absent() {
        assert_eq!(output_key_field(&json!({"output_key": "0xab"})).unwrap(), Some("0xab"));
        assert_eq!(output_key_field(&json!({"output_key": null})).unwrap(), None);
        assert_eq!(output_key_field(&json!({"output": [1]})).unwrap(), None);
        assert!(output_key_field(&json!({"output_key": 7})).is_err());
    }
}
