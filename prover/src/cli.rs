//! Shared CLI plumbing: output mode, error classes and exit codes, progress, parsing.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};

/// Marks an error caused by the user's input (exit code 2).
#[derive(Debug)]
pub(crate) struct BadInput(pub anyhow::Error);

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.0)
    }
}

impl std::error::Error for BadInput {}

/// Wraps an error as bad input.
pub(crate) fn bad_input(e: impl Into<anyhow::Error>) -> anyhow::Error {
    anyhow::Error::new(BadInput(e.into()))
}

/// Prints the error and exits: 2 for bad input, 1 for anything else.
pub(crate) fn exit_with(result: Result<()>) -> ! {
    match result {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            let code = if e.downcast_ref::<BadInput>().is_some() { 2 } else { 1 };
            eprintln!("error: {e:#}");
            std::process::exit(code)
        }
    }
}

/// Text or JSON output.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Output {
    pub json: bool,
}

impl Output {
    /// Prints `value` as one JSON line, or the text.
    pub(crate) fn emit(&self, value: serde_json::Value, text: impl FnOnce() -> String) -> Result<()> {
        if self.json {
            println!("{}", serde_json::to_string(&value)?);
        } else {
            println!("{}", text());
        }
        Ok(())
    }
}

/// A spinner on stderr (hidden in JSON mode and when stderr is not a terminal).
pub(crate) fn spinner(out: &Output, message: &str) -> ProgressBar {
    if out.json {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(ProgressStyle::with_template("{spinner} {msg} [{elapsed}]").expect("static template"));
    bar.set_message(message.to_string());
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

/// Logs to stderr; `RUST_LOG` sets the level (default: warnings).
pub(crate) fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into());
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
}

/// Parses `0x`-prefixed hex of exactly N bytes.
pub(crate) fn parse_hex<const N: usize>(s: &str, what: &str) -> Result<[u8; N]> {
    let digits = s.strip_prefix("0x").ok_or_else(|| anyhow::anyhow!("{what} must start with 0x"))?;
    if digits.len() != 2 * N {
        anyhow::bail!("{what} must have {} hex digits, got {}", 2 * N, digits.len());
    }
    let mut out = [0u8; N];
    hex::decode_to_slice(digits, &mut out).map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
    Ok(out)
}

/// Reads and quantizes the first sample of an EZKL input file.
pub(crate) fn read_input(model: &tgrid_circuits::QuantModel, path: &Path) -> Result<Vec<i8>> {
    crate::quantized_input(model, path)
}
