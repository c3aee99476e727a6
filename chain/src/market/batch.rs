//! The calldata of `TaskMarket.settleBatch` (docs/contracts.md, "Batch calldata"): tables of
//! books, providers, models and order terms, and five words per proven order. [`SettlementBatch`]
//! builds it from signed orders in the proven order and reads it back from a transaction's
//! calldata, so auditors rebuild every order (and its task id) from chain data alone.

use std::collections::BTreeMap;

use alloy::primitives::{Address, Signature, B256, U256};
use alloy::sol_types::SolCall;

use crate::bindings::ITaskMarket::{self, BatchHeader, BookRef, OrderTerms, SettlementLeaf};
use crate::market::order::{Order, SignedOrder};

/// Most entries of the book and provider tables (16-bit indices).
pub const MAX_WIDE_TABLE: usize = 1 << 16;
/// Most entries of the model and terms tables (8-bit indices).
pub const MAX_NARROW_TABLE: usize = 1 << 8;

const U32: u64 = u32::MAX as u64;

/// What is wrong with a batch.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BatchError {
    /// No orders.
    #[error("a batch needs at least one order")]
    Empty,
    /// A table would need more entries than its index width allows.
    #[error("the batch has {count} distinct {table}, more than the {max} one batch can hold")]
    TableFull {
        /// Which table.
        table: &'static str,
        /// Entries needed.
        count: usize,
        /// Most allowed.
        max: usize,
    },
    /// A named order proven by another provider.
    #[error("order {index} names provider {named} but was proven by {provider}")]
    NotNamedProvider {
        /// Position in the batch.
        index: usize,
        /// The order's provider.
        named: Address,
        /// The prover.
        provider: Address,
    },
    /// An order the contract would misread (see [`Order::check`]).
    #[error("order {index}: {reason}")]
    BadOrder {
        /// Position in the batch.
        index: usize,
        /// Why.
        reason: String,
    },
    /// Calldata that is not a well-formed `settleBatch` call.
    #[error("not a settleBatch call: {0}")]
    Calldata(String),
}

/// One proven order of a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettlementItem {
    /// The signed order.
    pub order: SignedOrder,
    /// The provider whose proof settles it.
    pub provider: Address,
    /// The proven output commitment.
    pub output_commitment: B256,
}

/// The tables and leaves of one `settleBatch` call, in the proven order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettlementBatch {
    /// The tables.
    pub header: BatchHeader,
    /// The leaves.
    pub leaves: Vec<SettlementLeaf>,
}

/// A decoded `settleBatch` call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettleCall {
    /// Tables and leaves.
    pub batch: SettlementBatch,
    /// The registry root it was proven against.
    pub registry_root: B256,
    /// The Groth16 proof words.
    pub proof: [U256; 8],
}

impl SettlementBatch {
    /// Builds the tables (books and providers sorted ascending, models and terms in order of first
    /// use) and the leaves of `items`, in their order.
    pub fn build(items: &[SettlementItem]) -> Result<Self, BatchError> {
        if items.is_empty() {
            return Err(BatchError::Empty);
        }
        let mut books: BTreeMap<(Address, u32), u16> = BTreeMap::new();
        let mut providers: BTreeMap<Address, u16> = BTreeMap::new();
        let mut models: Vec<B256> = Vec::new();
        let mut terms: Vec<OrderTerms> = Vec::new();
        for (index, item) in items.iter().enumerate() {
            let o = &item.order.order;
            o.check().map_err(|e| BatchError::BadOrder { index, reason: e.to_string() })?;
            if o.is_named() && o.provider != item.provider {
                return Err(BatchError::NotNamedProvider { index, named: o.provider, provider: item.provider });
            }
            books.insert((o.poster, o.book()), 0);
            providers.insert(item.provider, 0);
            if !models.contains(&o.model_id) {
                models.push(o.model_id);
            }
            let t = o.terms();
            if !terms.contains(&t) {
                terms.push(t);
            }
        }
        for (table, count, max) in [
            ("books", books.len(), MAX_WIDE_TABLE),
            ("providers", providers.len(), MAX_WIDE_TABLE),
            ("models", models.len(), MAX_NARROW_TABLE),
            ("order terms", terms.len(), MAX_NARROW_TABLE),
        ] {
            if count > max {
                return Err(BatchError::TableFull { table, count, max });
            }
        }
        // Indices fit 16 bits: checked just above.
        for (i, slot) in books.values_mut().enumerate() {
            *slot = i as u16;
        }
        for (i, slot) in providers.values_mut().enumerate() {
            *slot = i as u16;
        }
        let leaves = items
            .iter()
            .map(|item| {
                let o = &item.order.order;
                let model = models.iter().position(|m| *m == o.model_id).expect("model in table") as u64;
                let terms_index = terms.iter().position(|t| *t == o.terms()).expect("terms in table") as u64;
                let meta = Meta {
                    deadline: o.deadline,
                    index: o.index(),
                    book: books[&(o.poster, o.book())],
                    provider: providers[&item.provider],
                    model: model as u8,
                    terms: terms_index as u8,
                    named: o.is_named(),
                };
                let compact = item.order.signature.as_erc2098();
                SettlementLeaf {
                    meta: meta.pack(),
                    inputCommitment: o.input_commitment,
                    outputCommitment: item.output_commitment,
                    r: B256::from_slice(&compact[..32]),
                    vs: B256::from_slice(&compact[32..]),
                }
            })
            .collect();
        let header = BatchHeader {
            books: books.keys().map(|(poster, book)| BookRef { poster: *poster, book: *book }).collect(),
            providers: providers.keys().copied().collect(),
            models,
            terms,
        };
        Ok(Self { header, leaves })
    }

    /// Number of orders.
    pub fn len(&self) -> usize {
        self.leaves.len()
    }

    /// Whether it has no orders.
    pub fn is_empty(&self) -> bool {
        self.leaves.is_empty()
    }

    /// The `settleBatch` call of this batch.
    pub fn call(&self, registry_root: B256, proof: [U256; 8]) -> ITaskMarket::settleBatchCall {
        ITaskMarket::settleBatchCall {
            header: self.header.clone(),
            leaves: self.leaves.clone(),
            registryRoot: registry_root,
            proof,
        }
    }

    /// Decodes (and validates, as the contract does) a `settleBatch` transaction's input.
    pub fn decode_call(input: &[u8]) -> Result<SettleCall, BatchError> {
        let call = ITaskMarket::settleBatchCall::abi_decode(input).map_err(|e| BatchError::Calldata(e.to_string()))?;
        let batch = Self { header: call.header, leaves: call.leaves };
        batch.items()?;
        Ok(SettleCall { batch, registry_root: call.registryRoot, proof: call.proof })
    }

    /// The proven orders, rebuilt from the tables and leaves (signatures included).
    pub fn items(&self) -> Result<Vec<SettlementItem>, BatchError> {
        let h = &self.header;
        self.leaves
            .iter()
            .enumerate()
            .map(|(index, leaf)| {
                let bad = |why: &str| BatchError::Calldata(format!("leaf {index}: {why}"));
                let meta = Meta::unpack(leaf.meta).ok_or_else(|| bad("bits set above the packed fields"))?;
                let book = h.books.get(meta.book as usize).ok_or_else(|| bad("book index out of range"))?;
                let provider =
                    *h.providers.get(meta.provider as usize).ok_or_else(|| bad("provider index out of range"))?;
                let model_id = *h.models.get(meta.model as usize).ok_or_else(|| bad("model index out of range"))?;
                let terms = h.terms.get(meta.terms as usize).ok_or_else(|| bad("terms index out of range"))?;
                let mut compact = [0u8; 64];
                compact[..32].copy_from_slice(leaf.r.as_slice());
                compact[32..].copy_from_slice(leaf.vs.as_slice());
                let order = Order {
                    poster: book.poster,
                    provider: if meta.named { provider } else { Address::ZERO },
                    model_id,
                    input_commitment: leaf.inputCommitment,
                    payment: terms.payment.to::<u128>(),
                    collateral: terms.collateral.to::<u128>(),
                    deadline: meta.deadline,
                    nonce: Order::nonce_of(book.book, meta.index),
                    slash_bps: terms.slashBps,
                    poster_share_bps: terms.posterShareBps,
                };
                Ok(SettlementItem {
                    order: SignedOrder { order, signature: Signature::from_erc2098(&compact) },
                    provider,
                    output_commitment: leaf.outputCommitment,
                })
            })
            .collect()
    }
}

/// A leaf's `meta` word: from bit 0, deadline (40 bits), order index (32), book table index (16),
/// provider table index (16), model table index (8), terms table index (8), named flag (1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Meta {
    deadline: u64,
    index: u32,
    book: u16,
    provider: u16,
    model: u8,
    terms: u8,
    named: bool,
}

impl Meta {
    fn pack(&self) -> U256 {
        let low = (self.deadline & ((1 << 40) - 1)) | (u64::from(self.index) << 40);
        let high = (u64::from(self.index) >> 24)
            | (u64::from(self.book) << 8)
            | (u64::from(self.provider) << 24)
            | (u64::from(self.model) << 40)
            | (u64::from(self.terms) << 48)
            | (u64::from(self.named) << 56);
        U256::from(low) | (U256::from(high) << 64)
    }

    fn unpack(meta: U256) -> Option<Self> {
        if meta >> 121 != U256::ZERO {
            return None;
        }
        let field =
            |shift: usize, bits: usize| -> u64 { ((meta >> shift) & U256::from((1u128 << bits) - 1)).to::<u64>() };
        Some(Self {
            deadline: field(0, 40),
            index: (field(40, 32) & U32) as u32,
            book: field(72, 16) as u16,
            provider: field(88, 16) as u16,
            model: field(104, 8) as u8,
            terms: field(112, 8) as u8,
            named: field(120, 1) == 1,
        })
    }
}

#[cfg(test)]
mod tests {
    use alloy::signers::local::PrivateKeySigner;

    use super::*;
    use crate::market::order::MarketDomain;

    fn domain() -> MarketDomain {
        MarketDomain { chain_id: 31337, market: Address::repeat_byte(0x11) }
    }

    fn item(key: &PrivateKeySigner, book: u32, index: u32, provider: Address, named: bool) -> SettlementItem {
        let order = Order {
            poster: key.address(),
            provider: if named { provider } else { Address::ZERO },
            model_id: B256::repeat_byte(index as u8 % 2),
            input_commitment: B256::repeat_byte(index as u8),
            payment: 10u128.pow(19) * u128::from(1 + index % 3),
            collateral: 10u128.pow(20),
            deadline: 1_800_000_000 + u64::from(index),
            nonce: Order::nonce_of(book, index),
            slash_bps: 5_000,
            poster_share_bps: 2_500,
        };
        SettlementItem {
            order: SignedOrder::sign(order, key, &domain()).unwrap(),
            provider,
            output_commitment: B256::repeat_byte(0xa0 ^ index as u8),
        }
    }

    fn keys() -> (PrivateKeySigner, PrivateKeySigner) {
        (PrivateKeySigner::random(), PrivateKeySigner::random())
    }

    #[test]
    fn meta_packs_every_field_at_its_bits() {
        let m = Meta {
            deadline: (1 << 40) - 1,
            index: u32::MAX,
            book: 0xabcd,
            provider: 0x1234,
            model: 7,
            terms: 9,
            named: true,
        };
        let packed = m.pack();
        assert_eq!(packed & U256::from((1u64 << 40) - 1), U256::from((1u64 << 40) - 1));
        assert_eq!((packed >> 40) & U256::from(u32::MAX), U256::from(u32::MAX));
        assert_eq!((packed >> 72) & U256::from(0xffffu64), U256::from(0xabcdu64));
        assert_eq!((packed >> 88) & U256::from(0xffffu64), U256::from(0x1234u64));
        assert_eq!((packed >> 104) & U256::from(0xffu64), U256::from(7u64));
        assert_eq!((packed >> 112) & U256::from(0xffu64), U256::from(9u64));
        assert_eq!(packed >> 120, U256::from(1u64));
        assert_eq!(Meta::unpack(packed), Some(m));
        assert_eq!(Meta::unpack(packed | (U256::from(1u64) << 121)), None);
    }

    #[test]
    fn built_batches_have_sorted_tables_and_decode_back_to_their_orders() {
        let (a, b) = keys();
        let (p, q) = (Address::repeat_byte(0xee), Address::repeat_byte(0x01));
        let items: Vec<SettlementItem> = (0..9)
            .map(|i| item(if i % 2 == 0 { &a } else { &b }, i % 3, i, if i % 4 < 2 { p } else { q }, i == 5))
            .collect();
        let batch = SettlementBatch::build(&items).unwrap();
        let books: Vec<_> = batch.header.books.iter().map(|r| (r.poster, r.book)).collect();
        let mut sorted = books.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(books, sorted);
        assert_eq!(batch.header.providers, vec![q, p]);
        assert_eq!(batch.header.models.len(), 2);
        assert_eq!(batch.header.terms.len(), 3);
        assert_eq!(batch.items().unwrap(), items);
        for (item, rebuilt) in items.iter().zip(batch.items().unwrap()) {
            assert_eq!(rebuilt.order.verify(&domain()).unwrap(), item.order.hash(&domain()));
        }
        let input = batch.call(B256::repeat_byte(7), [U256::from(3u64); 8]).abi_encode();
        let decoded = SettlementBatch::decode_call(&input).unwrap();
        assert_eq!(decoded.batch, batch);
        assert_eq!(decoded.registry_root, B256::repeat_byte(7));
    }

    #[test]
    fn bad_batches_and_calldata_are_refused() {
        let (a, _) = keys();
        assert_eq!(SettlementBatch::build(&[]), Err(BatchError::Empty));
        let mut named = item(&a, 0, 0, Address::repeat_byte(1), true);
        named.provider = Address::repeat_byte(2);
        assert!(matches!(SettlementBatch::build(&[named]), Err(BatchError::NotNamedProvider { .. })));
        assert!(SettlementBatch::decode_call(b"\x00\x01 random bytes").is_err());
        let batch = SettlementBatch::build(&[item(&a, 0, 0, Address::repeat_byte(1), false)]).unwrap();
        let mut bad = batch.clone();
        bad.leaves[0].meta |= U256::from(1u64) << 130;
        let input = bad.call(B256::ZERO, [U256::ZERO; 8]).abi_encode();
        assert!(SettlementBatch::decode_call(&input).unwrap_err().to_string().contains("bits set"));
        let mut bad = batch;
        bad.leaves[0].meta |= U256::from(5u64) << 104;
        let input = bad.call(B256::ZERO, [U256::ZERO; 8]).abi_encode();
        assert!(SettlementBatch::decode_call(&input).unwrap_err().to_string().contains("model index"));
    }
}
