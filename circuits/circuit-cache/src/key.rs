//! The key of a cache entry: a circuit's name and the runtime inputs it depends on.

use sha2::{Digest, Sha256};

/// What determines one circuit besides the code: its name and runtime inputs.
#[derive(Clone, Debug)]
pub struct CircuitKey {
    name: String,
    pub(crate) inputs: Sha256,
}

impl CircuitKey {
    /// A circuit called `name` (letters, digits, `-` and `_` keep the file name readable; other
    /// characters are replaced).
    pub fn new(name: impl AsRef<str>) -> Self {
        let mut inputs = Sha256::new();
        // The name as given, so that names differing only in replaced characters stay apart.
        absorb(&mut inputs, name.as_ref().as_bytes());
        let name: String = name
            .as_ref()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
            .collect();
        Self { name, inputs }
    }

    /// Adds a runtime input the circuit depends on (inner verifier data, parameters).
    pub fn with(mut self, input: impl AsRef<[u8]>) -> Self {
        absorb(&mut self.inputs, input.as_ref());
        self
    }

    /// The circuit's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Length-prefixed, so that inputs `("ab", "c")` and `("a", "bc")` differ.
pub(crate) fn absorb(hasher: &mut Sha256, bytes: &[u8]) {
    hasher.update((bytes.len() as u64).to_le_bytes());
    hasher.update(bytes);
}
