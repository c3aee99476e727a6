//! Orders and acceptances: the EIP-712 messages of the task market
//! (`contracts/libraries/OrderLib.sol`). A poster signs an [`Order`]; its EIP-712 digest is the
//! task id the provider's proof binds. A provider accepts by signing [`Acceptance`] of that digest.
//! Neither reaches the chain unless the order settles (the poster's signature is in the batch
//! calldata) or is disputed (both signatures are).

use alloy::primitives::{Address, Signature, B256, U256};
use alloy::signers::local::PrivateKeySigner;
use alloy::signers::SignerSync;
use alloy::sol_types::{eip712_domain, Eip712Domain, SolStruct};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::bindings;
use crate::Deployment;

/// EIP-712 domain name of the TaskMarket.
pub const DOMAIN_NAME: &str = "TensorGrid TaskMarket";
/// EIP-712 domain version of the TaskMarket.
pub const DOMAIN_VERSION: &str = "2";
/// 100 % in basis points.
pub const MAX_BPS: u16 = 10_000;
/// Largest amount the contracts account (96 bits).
pub const MAX_AMOUNT: u128 = (1 << 96) - 1;
/// Largest deadline the contracts store (40 bits).
pub const MAX_DEADLINE: u64 = (1 << 40) - 1;
/// secp256k1n / 2: a signature with a larger `s` is the malleable twin of a valid one, which the
/// contract refuses.
const HALF_N: U256 =
    U256::from_be_bytes(alloy::primitives::hex!("7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0"));

/// What is wrong with an order or a signature.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OrderError {
    /// The poster is the zero address.
    #[error("the order has no poster")]
    NoPoster,
    /// The payment is zero or does not fit 96 bits.
    #[error("payment {0} must be positive and below 2^96")]
    Payment(u128),
    /// The collateral does not fit 96 bits.
    #[error("collateral {0} must be below 2^96")]
    Collateral(u128),
    /// The deadline does not fit 40 bits.
    #[error("deadline {0} does not fit 40 bits")]
    Deadline(u64),
    /// A basis-point term is above 10,000.
    #[error("{what} {value} bps is above 10,000")]
    Bps {
        /// Which term.
        what: &'static str,
        /// Its value.
        value: u16,
    },
    /// The signature does not recover to the account that should have signed.
    #[error("{what} signature is not {expected}'s (it recovers to {recovered})")]
    WrongSigner {
        /// Order or acceptance.
        what: &'static str,
        /// Who should have signed.
        expected: Address,
        /// Who did, if anyone.
        recovered: String,
    },
    /// The signature has a high `s` (the contract refuses malleable signatures).
    #[error("{0} signature has a high s value")]
    Malleable(&'static str),
    /// Signing failed.
    #[error("signing failed: {0}")]
    Signing(String),
}

/// The market's EIP-712 domain on one chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MarketDomain {
    /// Chain id.
    pub chain_id: u64,
    /// The TaskMarket.
    pub market: Address,
}

impl MarketDomain {
    /// The domain of a deployment's market.
    pub fn of(deployment: &Deployment) -> Self {
        Self { chain_id: deployment.chain_id, market: deployment.market }
    }

    /// As alloy's EIP-712 domain.
    pub fn eip712(&self) -> Eip712Domain {
        eip712_domain! {
            name: DOMAIN_NAME,
            version: DOMAIN_VERSION,
            chain_id: self.chain_id,
            verifying_contract: self.market,
        }
    }
}

/// A task order (`Order` of OrderLib.sol). Amounts are in base units (10^-18 TGRID); in JSON they
/// are decimal strings, as is the nonce (both exceed what JSON numbers carry exactly).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Order {
    /// The signer, whose deposit book pays.
    pub poster: Address,
    /// The only provider that may be paid, or zero for any.
    pub provider: Address,
    /// The model to run.
    pub model_id: B256,
    /// Commitment to the input tensor.
    pub input_commitment: B256,
    /// Payment (less the protocol fee) to the provider.
    #[serde(with = "decimal")]
    pub payment: u128,
    /// Provider bond at stake.
    #[serde(with = "decimal")]
    pub collateral: u128,
    /// Last second at which it can settle.
    pub deadline: u64,
    /// `(book << 32) | index`.
    #[serde(with = "decimal")]
    pub nonce: u64,
    /// Fraction of the collateral slashed on a dispute, in basis points.
    pub slash_bps: u16,
    /// Fraction of the slash paid to the poster, in basis points.
    pub poster_share_bps: u16,
}

impl Order {
    /// The nonce of order `index` in book `book`.
    pub fn nonce_of(book: u32, index: u32) -> u64 {
        (u64::from(book) << 32) | u64::from(index)
    }

    /// The poster's deposit book that pays.
    pub fn book(&self) -> u32 {
        (self.nonce >> 32) as u32
    }

    /// The order's index in its book.
    pub fn index(&self) -> u32 {
        self.nonce as u32
    }

    /// Whether the order names its provider.
    pub fn is_named(&self) -> bool {
        !self.provider.is_zero()
    }

    /// Checks what the contract would refuse or misread.
    pub fn check(&self) -> Result<(), OrderError> {
        if self.poster.is_zero() {
            return Err(OrderError::NoPoster);
        }
        if self.payment == 0 || self.payment > MAX_AMOUNT {
            return Err(OrderError::Payment(self.payment));
        }
        if self.collateral > MAX_AMOUNT {
            return Err(OrderError::Collateral(self.collateral));
        }
        if self.deadline > MAX_DEADLINE {
            return Err(OrderError::Deadline(self.deadline));
        }
        for (what, value) in [("slash", self.slash_bps), ("poster share", self.poster_share_bps)] {
            if value > MAX_BPS {
                return Err(OrderError::Bps { what, value });
            }
        }
        Ok(())
    }

    /// As the Solidity struct. Amounts are truncated to 96 bits: call [`Order::check`] first.
    pub fn to_sol(&self) -> bindings::Order {
        bindings::Order {
            poster: self.poster,
            provider: self.provider,
            modelId: self.model_id,
            inputCommitment: self.input_commitment,
            payment: alloy::primitives::Uint::from(self.payment & MAX_AMOUNT),
            collateral: alloy::primitives::Uint::from(self.collateral & MAX_AMOUNT),
            deadline: alloy::primitives::Uint::from(self.deadline & MAX_DEADLINE),
            nonce: self.nonce,
            slashBps: self.slash_bps,
            posterShareBps: self.poster_share_bps,
        }
    }

    /// The EIP-712 struct hash (OrderLib.structHash).
    pub fn struct_hash(&self) -> B256 {
        self.to_sol().eip712_hash_struct()
    }

    /// The EIP-712 digest: the task id.
    pub fn hash(&self, domain: &MarketDomain) -> B256 {
        self.to_sol().eip712_signing_hash(&domain.eip712())
    }

    /// The order's terms as the settlement's terms table holds them.
    pub fn terms(&self) -> bindings::ITaskMarket::OrderTerms {
        bindings::ITaskMarket::OrderTerms {
            payment: alloy::primitives::Uint::from(self.payment & MAX_AMOUNT),
            collateral: alloy::primitives::Uint::from(self.collateral & MAX_AMOUNT),
            slashBps: self.slash_bps,
            posterShareBps: self.poster_share_bps,
        }
    }
}

/// An order with its poster's signature.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SignedOrder {
    /// The order.
    pub order: Order,
    /// The poster's EIP-712 signature, 65 bytes `r ‖ s ‖ v`.
    #[serde(with = "signature_hex")]
    pub signature: Signature,
}

impl SignedOrder {
    /// Signs `order` with the poster's key (which must be the order's poster).
    pub fn sign(order: Order, signer: &PrivateKeySigner, domain: &MarketDomain) -> Result<Self, OrderError> {
        order.check()?;
        if signer.address() != order.poster {
            return Err(OrderError::WrongSigner {
                what: "order",
                expected: order.poster,
                recovered: signer.address().to_string(),
            });
        }
        let signature = sign(signer, order.hash(domain))?;
        Ok(Self { order, signature })
    }

    /// The task id.
    pub fn hash(&self, domain: &MarketDomain) -> B256 {
        self.order.hash(domain)
    }

    /// Checks the order and that its poster signed it; returns its hash (the task id).
    pub fn verify(&self, domain: &MarketDomain) -> Result<B256, OrderError> {
        self.order.check()?;
        let hash = self.order.hash(domain);
        check_signer("order", &self.signature, hash, self.order.poster)?;
        Ok(hash)
    }
}

/// A provider's signed acceptance of an order: what a dispute presents to slash it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Acceptance {
    /// The accepted order's hash (task id).
    pub order_hash: B256,
    /// The accepting provider.
    pub provider: Address,
    /// The provider's EIP-712 signature of `Acceptance(order_hash)`, 65 bytes.
    #[serde(with = "signature_hex")]
    pub signature: Signature,
}

impl Acceptance {
    /// The EIP-712 digest the provider signs.
    pub fn digest(order_hash: B256, domain: &MarketDomain) -> B256 {
        bindings::Acceptance { order: order_hash }.eip712_signing_hash(&domain.eip712())
    }

    /// Accepts the order `order_hash` with the provider's key.
    pub fn sign(order_hash: B256, signer: &PrivateKeySigner, domain: &MarketDomain) -> Result<Self, OrderError> {
        let signature = sign(signer, Self::digest(order_hash, domain))?;
        Ok(Self { order_hash, provider: signer.address(), signature })
    }

    /// Checks that `provider` signed it.
    pub fn verify(&self, domain: &MarketDomain) -> Result<(), OrderError> {
        check_signer("acceptance", &self.signature, Self::digest(self.order_hash, domain), self.provider)
    }
}

pub(super) fn sign(signer: &PrivateKeySigner, digest: B256) -> Result<Signature, OrderError> {
    let sig = signer.sign_hash_sync(&digest).map_err(|e| OrderError::Signing(e.to_string()))?;
    // k256 signs with a low s already; normalizing keeps that true whatever the backend.
    Ok(sig.normalize_s().unwrap_or(sig))
}

pub(super) fn check_signer(
    what: &'static str,
    sig: &Signature,
    digest: B256,
    expected: Address,
) -> Result<(), OrderError> {
    if sig.s() > HALF_N {
        return Err(OrderError::Malleable(what));
    }
    match sig.recover_address_from_prehash(&digest) {
        Ok(a) if a == expected && !a.is_zero() => Ok(()),
        Ok(a) => Err(OrderError::WrongSigner { what, expected, recovered: a.to_string() }),
        Err(e) => Err(OrderError::WrongSigner { what, expected, recovered: format!("nobody ({e})") }),
    }
}

/// Serde of integers as decimal strings.
mod decimal {
    use super::*;

    pub fn serialize<T: std::fmt::Display, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.to_string())
    }

    pub fn deserialize<'de, T, D>(d: D) -> Result<T, D::Error>
    where
        T: std::str::FromStr,
        T::Err: std::fmt::Display,
        D: Deserializer<'de>,
    {
        let s = String::deserialize(d)?;
        if s.is_empty() || s.len() > 40 || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(serde::de::Error::custom(format!("{s:?} is not a decimal integer")));
        }
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Serde of a signature as 0x-hex of its 65 bytes `r ‖ s ‖ v` (`#[serde(with = "signature_hex")]`).
pub mod signature_hex {
    use super::*;

    /// As 0x-hex.
    pub fn serialize<S: Serializer>(sig: &Signature, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("0x{}", hex::encode(sig.as_bytes())))
    }

    /// From 0x-hex of exactly 65 bytes.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Signature, D::Error> {
        let s = String::deserialize(d)?;
        let bytes = hex::decode(s.strip_prefix("0x").unwrap_or(&s))
            .map_err(|e| serde::de::Error::custom(format!("signature: {e}")))?;
        if bytes.len() != 65 {
            return Err(serde::de::Error::custom(format!("signature: {} bytes, not 65", bytes.len())));
        }
        Signature::from_raw(&bytes).map_err(|e| serde::de::Error::custom(format!("signature: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn domain() -> MarketDomain {
        MarketDomain { chain_id: 31337, market: Address::repeat_byte(0x11) }
    }

    fn poster() -> PrivateKeySigner {
        "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d".parse().unwrap()
    }

    fn order(poster: Address) -> Order {
        Order {
            poster,
            provider: Address::ZERO,
            model_id: B256::repeat_byte(2),
            input_commitment: B256::repeat_byte(3),
            payment: 50_000_000_000_000_000_000,
            collateral: 100_000_000_000_000_000_000,
            deadline: 1_800_000_000,
            nonce: Order::nonce_of(1, 7),
            slash_bps: 5_000,
            poster_share_bps: 5_000,
        }
    }

    #[test]
    fn signed_orders_verify_and_round_trip_through_json() {
        let key = poster();
        let signed = SignedOrder::sign(order(key.address()), &key, &domain()).unwrap();
        let hash = signed.verify(&domain()).unwrap();
        let json = serde_json::to_string(&signed).unwrap();
        assert!(json.contains("\"payment\":\"50000000000000000000\""), "{json}");
        let back: SignedOrder = serde_json::from_str(&json).unwrap();
        assert_eq!(back, signed);
        assert_eq!(back.verify(&domain()).unwrap(), hash);
        assert_eq!(signed.order.book(), 1);
        assert_eq!(signed.order.index(), 7);
    }

    #[test]
    fn a_changed_field_chain_or_market_breaks_the_signature() {
        let key = poster();
        let signed = SignedOrder::sign(order(key.address()), &key, &domain()).unwrap();
        let mut changed = signed.clone();
        changed.order.payment += 1;
        assert!(matches!(changed.verify(&domain()), Err(OrderError::WrongSigner { .. })));
        let other_chain = MarketDomain { chain_id: 1, ..domain() };
        assert!(signed.verify(&other_chain).is_err());
        let other_market = MarketDomain { market: Address::repeat_byte(0x12), ..domain() };
        assert!(signed.verify(&other_market).is_err());
    }

    #[test]
    fn acceptances_verify_only_for_their_provider() {
        let key = poster();
        let acceptance = Acceptance::sign(B256::repeat_byte(9), &key, &domain()).unwrap();
        acceptance.verify(&domain()).unwrap();
        let forged = Acceptance { provider: Address::repeat_byte(1), ..acceptance.clone() };
        assert!(forged.verify(&domain()).is_err());
    }

    #[test]
    fn bad_orders_and_bad_json_are_refused() {
        let mut o = order(Address::repeat_byte(1));
        o.payment = 0;
        assert_eq!(o.check(), Err(OrderError::Payment(0)));
        o.payment = MAX_AMOUNT + 1;
        assert!(o.check().is_err());
        let mut o = order(Address::repeat_byte(1));
        o.slash_bps = 10_001;
        assert!(matches!(o.check(), Err(OrderError::Bps { .. })));
        assert!(order(Address::ZERO).check().is_err());
        for bad in ["{}", "\u{0}\u{ff}", r#"{"order":{"poster":"0x01"},"signature":"0x00"}"#] {
            assert!(serde_json::from_str::<SignedOrder>(bad).is_err(), "{bad}");
        }
        let key = poster();
        let json = serde_json::to_string(&SignedOrder::sign(order(key.address()), &key, &domain()).unwrap()).unwrap();
        let short_sig = json.replace("\"signature\":\"0x", "\"signature\":\"0x00");
        assert!(serde_json::from_str::<SignedOrder>(&short_sig).is_err());
        let negative = json.replace("\"payment\":\"", "\"payment\":\"-");
        assert!(serde_json::from_str::<SignedOrder>(&negative).is_err());
    }

    /// The struct hash of contracts/test/market/OrderLib.t.sol's pinned order (computed there
    /// with js-sha3): the Rust and Solidity encodings agree.
    #[test]
    fn struct_hash_matches_the_solidity_type_hash() {
        use alloy::primitives::keccak256;
        let typehash = keccak256(
            "Order(address poster,address provider,bytes32 modelId,bytes32 inputCommitment,uint96 payment,uint96 collateral,uint40 deadline,uint64 nonce,uint16 slashBps,uint16 posterShareBps)",
        );
        assert_eq!(bindings::Order::eip712_type_hash(&order(Address::ZERO).to_sol()), typehash);
        let acceptance = keccak256("Acceptance(bytes32 order)");
        assert_eq!(bindings::Acceptance { order: B256::ZERO }.eip712_type_hash(), acceptance);
    }
}
