//! Public and private tasks.
//!
//! A public task hides nothing (its input is published, the weights are in the `.tgm`, the
//! output is served), so its proof has no blinding and plain tensor commitments. A private
//! task's proof is zero-knowledge, its input commitment is salted
//! ([`crate::commit::commit_salted`]; the poster picks the salt) and its output is encrypted
//! in the proof under the key derived from that salt ([`crate::commit::EncryptedTensor`]): the
//! sequencer, auditors and the public see a commitment and a ciphertext that reveal nothing of
//! the tensors, and the poster can always decrypt the output the proof is about.
//!
//! The mode is part of the proof's statement through the model id it exposes: a private task's
//! circuit exposes [`Privacy::task_model_id`], a hash of the model id under a domain of its own,
//! so a signed order names the mode with the model id it signs, the registry lists the two
//! circuits of a model under two ids, and neither kind of proof verifies as the other.

use sha2::{Digest, Sha256};

/// Whether a task's input, output and activations are secret.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Privacy {
    /// Everything is public; no blinding, unsalted commitments.
    #[default]
    Public,
    /// Zero-knowledge proof, salted input and output commitments.
    Private,
}

/// Domain of the private variant's model id (v2: the proof encrypts the output under the key
/// of the input salt, where v1 salted a provider-chosen output commitment; v3: the circuit is
/// blinded by [`crate::zero_knowledge`] and proven at rate 1/4 up to 2^13 rows; v4: its quotient
/// chunks are masked and `Z` takes twice the random pairs; v5: no lookup argument, bytes checked
/// by limbs and tables read by bits; v6: a segmented model's joins are blinded like its
/// segments, and every private circuit has `D` spare random rows and pairs; so a registered
/// private id names the circuit its proofs verify under).
const PRIVATE_DOMAIN: &[u8] = b"tgrid/private-task/v6";

impl Privacy {
    /// The id a task of this mode names for the model `model_id`: the model id itself for a
    /// public task, `SHA-256("tgrid/private-task/v6" ‖ model_id)` for a private one.
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
