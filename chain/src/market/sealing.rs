//! Providers' sealing keys: the X25519 key a private task's input is sealed to, announced by the
//! provider under its account's signature (EIP-712, the market's domain; never on-chain).
//!
//! The relay only stores and serves announcements; a poster checks the signature itself, so a
//! relay cannot make it seal an input to someone else's key. An announcement carries the time it
//! was issued: the relay keeps the newest per provider, so replaying an old (rotated) key cannot
//! replace the current one.

use alloy::primitives::{Address, Signature, B256};
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::SolStruct;
use serde::{Deserialize, Serialize};

use super::order::{check_signer, sign, signature_hex, MarketDomain, OrderError};

mod eip712 {
    alloy::sol! {
        /// A provider's key for sealed inputs.
        struct SealingKey {
            address provider;
            bytes32 publicKey;
            uint64 issuedAt;
        }
    }
}

/// A provider's signed sealing key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SealingKeyAnnouncement {
    /// The provider account.
    pub provider: Address,
    /// Its X25519 public key (32 bytes).
    pub public_key: B256,
    /// Unix time it was issued: a newer announcement replaces an older one.
    pub issued_at: u64,
    /// The provider's EIP-712 signature, 65 bytes.
    #[serde(with = "signature_hex")]
    pub signature: Signature,
}

impl SealingKeyAnnouncement {
    fn digest(provider: Address, public_key: B256, issued_at: u64, domain: &MarketDomain) -> B256 {
        eip712::SealingKey { provider, publicKey: public_key, issuedAt: issued_at }
            .eip712_signing_hash(&domain.eip712())
    }

    /// Announces `public_key` as the key of `signer`'s account.
    pub fn sign(
        public_key: B256,
        issued_at: u64,
        signer: &PrivateKeySigner,
        domain: &MarketDomain,
    ) -> Result<Self, OrderError> {
        let provider = signer.address();
        let signature = sign(signer, Self::digest(provider, public_key, issued_at, domain))?;
        Ok(Self { provider, public_key, issued_at, signature })
    }

    /// Checks that the provider it names signed it.
    pub fn verify(&self, domain: &MarketDomain) -> Result<(), OrderError> {
        let digest = Self::digest(self.provider, self.public_key, self.issued_at, domain);
        check_signer("sealing key", &self.signature, digest, self.provider)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_announcement_verifies_only_as_signed() {
        let domain = MarketDomain { chain_id: 31337, market: Address::repeat_byte(0x11) };
        let provider = PrivateKeySigner::random();
        let a = SealingKeyAnnouncement::sign(B256::repeat_byte(7), 100, &provider, &domain).unwrap();
        a.verify(&domain).unwrap();
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<SealingKeyAnnouncement>(&json).unwrap(), a);
        for changed in [
            SealingKeyAnnouncement { public_key: B256::repeat_byte(8), ..a },
            SealingKeyAnnouncement { issued_at: 101, ..a },
            SealingKeyAnnouncement { provider: Address::repeat_byte(9), ..a },
        ] {
            assert!(changed.verify(&domain).is_err(), "{changed:?}");
        }
        assert!(a.verify(&MarketDomain { chain_id: 1, ..domain }).is_err());
    }
}
