//! Public and private tasks.
//!
//! A public task hides nothing (its input is published, the weights are in the `.tgm`, the
//! output is served), so its proof has no blinding and plain tensor commitments. A private
//! task's proof is zero-knowledge and its input and output commitments are salted
//! ([`crate::commit::commit_salted`]): the sequencer, auditors and the public see two
//! commitments that reveal nothing of the tensors without the salts, which only the poster and
//! the provider hold.
//!
//! The mode is part of the proof's statement through the model id it exposes: a private task's
//! circuit exposes [`Privacy::task_model_id`], a hash of the model id under a domain of its own,
//! so a signed order names the mode with the model id it signs, the registry lists the two
//! circuits of a model under two ids, and neither kind of proof verifies as the other.

use sha2::{Digest, Sha256};

use crate::commit::Salt;

/// Whether a task's input, output and activations are secret.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Privacy {
    /// Everything is public; no blinding, unsalted commitments.
    #[default]
    Public,
    /// Zero-knowledge proof, salted input and output commitments.
    Private,
}

/// Domain of the private variant's model id.
const PRIVATE_DOMAIN: &[u8] = b"tgrid/private-task/v1";

impl Privacy {
    /// The id a task of this mode names for the model `model_id`: the model id itself for a
    /// public task, `SHA-256("tgrid/private-task/v1" ‖ model_id)` for a private one.
    pub fn task_model_id(self, model_id: [u8; 32]) -> [u8; 32] {
        match self {
            Privacy::Public => model_id,
            Privacy::Private => Sha256::new().chain_update(PRIVATE_DOMAIN).chain_update(model_id).finalize().into(),
        }
    }

    /// The mode whose task model id for `model_id` is `task_model_id`, if either is.
    pub fn of_task_model_id(model_id: [u8; 32], task_model_id: &[u8; 32]) -> Option<Privacy> {
        [Privacy::Public, Privacy::Private].into_iter().find(|p| &p.task_model_id(model_id) == task_model_id)
    }

    /// Whether the proofs are zero-knowledge.
    pub fn zero_knowledge(self) -> bool {
        self == Privacy::Private
    }

    /// `"public"` or `"private"`.
    pub fn name(self) -> &'static str {
        match self {
            Privacy::Public => "public",
            Privacy::Private => "private",
        }
    }
}

/// The salts of a private task's two commitments: the poster picks the input's (and sends it
/// with the sealed input), the provider the output's (and seals it with the output).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskSalts {
    /// Salt of the input commitment.
    pub input: Salt,
    /// Salt of the output commitment.
    pub output: Salt,
}
