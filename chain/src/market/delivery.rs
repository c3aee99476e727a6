//! Deliveries and receipts: the two signatures around a result's hand-over to a sequencer
//! (EIP-712, the market's domain; neither type ever reaches the chain).
//!
//! - A provider signs a [`Delivery`] (order hash, output commitment, digest of the proof bytes)
//!   with the key that accepted the order. (A private task's encrypted output needs no digest of
//!   its own: the output commitment is its hash.) The sequencer checks it before anything costly, so its
//!   rate limit and its one-check-at-a-time rule apply to the provider who really sent the
//!   result: anyone can copy an order and its public acceptance, nobody else can sign a delivery.
//! - The sequencer answers an acknowledged result with a [`SignedReceipt`] under its own key: the
//!   provider's evidence that it delivered, what and when, should the sequencer then not settle.

use alloy::primitives::{keccak256, Address, Signature, B256};
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::SolStruct;
use serde::{Deserialize, Serialize};

use super::order::{check_signer, sign, signature_hex, MarketDomain, OrderError};

mod eip712 {
    alloy::sol! {
        /// A provider's hand-over of a result.
        struct Delivery {
            bytes32 orderHash;
            bytes32 outputCommitment;
            bytes32 proofDigest;
        }

        /// A sequencer's acknowledgement of a verified, stored result.
        struct DeliveryReceipt {
            bytes32 orderHash;
            address provider;
            bytes32 outputCommitment;
            bytes32 proofDigest;
            uint64 receivedAt;
        }
    }
}

/// What a provider hands over for an order: the output (by commitment) and the proof (by digest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Delivery {
    /// The order (task id).
    pub order_hash: B256,
    /// Commitment to the output tensor (the proof's public output commitment).
    pub output_commitment: B256,
    /// keccak256 of the task proof file's bytes.
    pub proof_digest: B256,
}

impl Delivery {
    /// The delivery of a task's `proof` (the .tgp bytes) for `order_hash`.
    pub fn of_proof(order_hash: B256, output_commitment: B256, proof: &[u8]) -> Self {
        Self { order_hash, output_commitment, proof_digest: keccak256(proof) }
    }

    /// The EIP-712 digest the provider signs.
    pub fn digest(&self, domain: &MarketDomain) -> B256 {
        eip712::Delivery {
            orderHash: self.order_hash,
            outputCommitment: self.output_commitment,
            proofDigest: self.proof_digest,
        }
        .eip712_signing_hash(&domain.eip712())
    }

    /// Signs it with the provider's key.
    pub fn sign(&self, signer: &PrivateKeySigner, domain: &MarketDomain) -> Result<Signature, OrderError> {
        sign(signer, self.digest(domain))
    }

    /// Checks that `provider` signed it.
    pub fn verify(&self, signature: &Signature, provider: Address, domain: &MarketDomain) -> Result<(), OrderError> {
        check_signer("delivery", signature, self.digest(domain), provider)
    }
}

/// What a sequencer acknowledges: a provider's delivery, verified and durably stored at `received_at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Receipt {
    /// The order (task id).
    pub order_hash: B256,
    /// The provider whose result it is.
    pub provider: Address,
    /// Commitment to the output tensor.
    pub output_commitment: B256,
    /// keccak256 of the stored proof's bytes.
    pub proof_digest: B256,
    /// Unix time the sequencer first stored the result.
    pub received_at: u64,
}

impl Receipt {
    /// The EIP-712 digest the sequencer signs.
    pub fn digest(&self, domain: &MarketDomain) -> B256 {
        eip712::DeliveryReceipt {
            orderHash: self.order_hash,
            provider: self.provider,
            outputCommitment: self.output_commitment,
            proofDigest: self.proof_digest,
            receivedAt: self.received_at,
        }
        .eip712_signing_hash(&domain.eip712())
    }

    /// Whether it acknowledges exactly `delivery` from `provider`.
    pub fn acknowledges(&self, delivery: &Delivery, provider: Address) -> bool {
        self.order_hash == delivery.order_hash
            && self.provider == provider
            && self.output_commitment == delivery.output_commitment
            && self.proof_digest == delivery.proof_digest
    }
}

/// A receipt with the sequencer's signature.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SignedReceipt {
    /// What is acknowledged.
    pub receipt: Receipt,
    /// The sequencer's signing account.
    pub sequencer: Address,
    /// Its EIP-712 signature, 65 bytes.
    #[serde(with = "signature_hex")]
    pub signature: Signature,
}

impl SignedReceipt {
    /// Signs `receipt` with the sequencer's key.
    pub fn sign(receipt: Receipt, signer: &PrivateKeySigner, domain: &MarketDomain) -> Result<Self, OrderError> {
        let signature = sign(signer, receipt.digest(domain))?;
        Ok(Self { receipt, sequencer: signer.address(), signature })
    }

    /// Checks that `sequencer` signed it.
    pub fn verify(&self, domain: &MarketDomain) -> Result<(), OrderError> {
        check_signer("receipt", &self.signature, self.receipt.digest(domain), self.sequencer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn domain() -> MarketDomain {
        MarketDomain { chain_id: 31337, market: Address::repeat_byte(0x11) }
    }

    fn delivery() -> Delivery {
        Delivery::of_proof(B256::repeat_byte(1), B256::repeat_byte(2), b"proof bytes")
    }

    #[test]
    fn deliveries_verify_only_for_their_signer_and_fields() {
        let provider = PrivateKeySigner::random();
        let d = delivery();
        assert_eq!(d.proof_digest, keccak256(b"proof bytes"));
        let sig = d.sign(&provider, &domain()).unwrap();
        d.verify(&sig, provider.address(), &domain()).unwrap();

        let other = PrivateKeySigner::random();
        assert!(matches!(d.verify(&sig, other.address(), &domain()), Err(OrderError::WrongSigner { .. })));
        let changed = [
            Delivery { order_hash: B256::repeat_byte(9), ..d },
            Delivery { output_commitment: B256::repeat_byte(9), ..d },
            Delivery::of_proof(d.order_hash, d.output_commitment, b"another proof"),
        ];
        for c in changed {
            assert!(c.verify(&sig, provider.address(), &domain()).is_err(), "{c:?}");
        }
        let elsewhere = MarketDomain { chain_id: 1, ..domain() };
        assert!(d.verify(&sig, provider.address(), &elsewhere).is_err());
    }

    #[test]
    fn receipts_round_trip_and_verify() {
        let sequencer = PrivateKeySigner::random();
        let provider = Address::repeat_byte(0x22);
        let d = delivery();
        let receipt = Receipt {
            order_hash: d.order_hash,
            provider,
            output_commitment: d.output_commitment,
            proof_digest: d.proof_digest,
            received_at: 1_700_000_000,
        };
        assert!(receipt.acknowledges(&d, provider));
        let other = Delivery::of_proof(d.order_hash, B256::repeat_byte(7), b"proof bytes");
        assert!(!receipt.acknowledges(&other, provider), "the output is part of what is acknowledged");
        assert!(!receipt.acknowledges(&d, Address::repeat_byte(0x33)));
        let signed = SignedReceipt::sign(receipt, &sequencer, &domain()).unwrap();
        let json = serde_json::to_string(&signed).unwrap();
        let back: SignedReceipt = serde_json::from_str(&json).unwrap();
        assert_eq!(back, signed);
        back.verify(&domain()).unwrap();

        let forged = SignedReceipt { receipt: Receipt { received_at: 1, ..receipt }, ..signed.clone() };
        assert!(forged.verify(&domain()).is_err(), "a changed time breaks the signature");
        let impostor = SignedReceipt { sequencer: Address::repeat_byte(0x44), ..signed };
        assert!(impostor.verify(&domain()).is_err());
        assert!(serde_json::from_str::<SignedReceipt>(r#"{"receipt":{},"sequencer":"0x","signature":"0x"}"#).is_err());
    }
}
