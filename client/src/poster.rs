//! A poster's local state and the choice of a book and an index for a new order.
//!
//! An order's nonce is `(book << 32) | index`, and a book pays each index at most once: two
//! orders signed with the same nonce compete for one payment, so a poster must never reuse an
//! index, including for orders that are signed but not yet settled (invisible on-chain). The file
//! `<state dir>/poster/<address>.json` keeps, per market, the next index of every book and the
//! orders signed from it:
//!
//! ```json
//! {"version": 1, "poster": "0x..", "markets": {"31337:0x<market>": {"books": {"0":
//!   {"next_index": 2, "orders": [{"index": 0, "hash": "0x..", "payment": "10", "deadline": 1700000000}]}}}}}
//! ```
//!
//! (payments in base units, as decimal strings). A file that does not parse is an error naming
//! it, never silently reset: resetting would reuse indices.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};

use alloy::primitives::{Address, B256};
use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Map, Value};
use tgrid_chain::market::Order;
use tgrid_cli::bad_input;

use crate::common::write_atomically;

const VERSION: u64 = 1;
/// Largest state file read.
const MAX_STATE_BYTES: u64 = 64 << 20;

/// An order the poster signed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KnownOrder {
    pub(crate) index: u32,
    pub(crate) hash: B256,
    /// Base units.
    pub(crate) payment: u128,
    pub(crate) deadline: u64,
}

/// What the poster signed from one book.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct BookState {
    /// The next index to try (every lower one is taken or skipped).
    pub(crate) next_index: u32,
    pub(crate) orders: Vec<KnownOrder>,
}

/// A poster's state file, for one market.
#[derive(Debug)]
pub(crate) struct PosterState {
    path: PathBuf,
    /// The whole document (other markets kept as they are).
    doc: Map<String, Value>,
    key: String,
    /// The books of this market.
    pub(crate) books: BTreeMap<u32, BookState>,
}

impl PosterState {
    /// The state file of `poster` under `state_dir`.
    pub(crate) fn path(state_dir: &Path, poster: Address) -> PathBuf {
        state_dir.join("poster").join(format!("{poster}.json"))
    }

    /// Reads the state of `poster` for `market` on chain `chain_id` (empty if there is no file).
    pub(crate) fn load(state_dir: &Path, poster: Address, chain_id: u64, market: Address) -> Result<Self> {
        let path = Self::path(state_dir, poster);
        let key = format!("{chain_id}:{market}");
        let mut state = Self { path: path.clone(), doc: Map::new(), key, books: BTreeMap::new() };
        if !path.exists() {
            state.doc.insert("version".into(), json!(VERSION));
            state.doc.insert("poster".into(), json!(poster.to_string()));
            return Ok(state);
        }
        let fail = |why: String| {
            bad_input(anyhow!(
                "poster state file {} is damaged ({why}); it holds the order indices already used: repair it \
                 (or move it away: indices are then found again from the orders in the state directory)",
                path.display()
            ))
        };
        let len = std::fs::metadata(&path).with_context(|| format!("cannot read {}", path.display()))?.len();
        if len > MAX_STATE_BYTES {
            return Err(fail(format!("{len} bytes")));
        }
        let bytes = std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let doc = match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return Err(fail("not a JSON object".into())),
            Err(e) => return Err(fail(e.to_string())),
        };
        if doc.get("version").and_then(Value::as_u64) != Some(VERSION) {
            return Err(fail(format!("version {:?}, expected {VERSION}", doc.get("version"))));
        }
        match doc.get("poster").and_then(Value::as_str).map(|p| p.parse::<Address>()) {
            Some(Ok(p)) if p == poster => {}
            other => return Err(fail(format!("poster {other:?}, expected {poster}"))),
        }
        state.books = match doc.get("markets").and_then(|m| m.get(&state.key)) {
            None => BTreeMap::new(),
            Some(m) => decode_books(m).map_err(|e| fail(format!("market {}: {e}", state.key)))?,
        };
        state.doc = doc;
        Ok(state)
    }

    /// The file.
    pub(crate) fn file(&self) -> &Path {
        &self.path
    }

    /// The first index of `book` not yet used by an order this state knows.
    pub(crate) fn next_index(&self, book: u32) -> u32 {
        self.books.get(&book).map_or(0, |b| {
            let after_known = b.orders.iter().map(|o| o.index.saturating_add(1)).max().unwrap_or(0);
            b.next_index.max(after_known)
        })
    }

    /// Whether an order this state knows uses `index` of `book`.
    pub(crate) fn knows(&self, book: u32, index: u32) -> bool {
        self.books.get(&book).is_some_and(|b| b.orders.iter().any(|o| o.index == index))
    }

    /// Takes note of an order signed earlier (found in the state directory) without writing.
    pub(crate) fn adopt(&mut self, order: &Order, hash: B256) {
        let b = self.books.entry(order.book()).or_default();
        if !b.orders.iter().any(|o| o.hash == hash) {
            b.orders.push(KnownOrder { index: order.index(), hash, payment: order.payment, deadline: order.deadline });
        }
    }

    /// Records a signed order (its index is then used) and writes the file.
    pub(crate) fn record(&mut self, order: &Order, hash: B256) -> Result<()> {
        let b = self.books.entry(order.book()).or_default();
        b.next_index = b.next_index.max(order.index().saturating_add(1));
        b.orders.push(KnownOrder { index: order.index(), hash, payment: order.payment, deadline: order.deadline });
        self.save()
    }

    fn save(&mut self) -> Result<()> {
        let markets = self.doc.entry("markets").or_insert_with(|| json!({}));
        let Some(markets) = markets.as_object_mut() else { bail!("{}: markets is not an object", self.path.display()) };
        markets.insert(self.key.clone(), encode_books(&self.books));
        write_atomically(&self.path, &serde_json::to_vec_pretty(&self.doc)?)
    }
}

fn encode_books(books: &BTreeMap<u32, BookState>) -> Value {
    let books: Map<String, Value> = books
        .iter()
        .map(|(id, b)| {
            let orders: Vec<Value> = b
                .orders
                .iter()
                .map(|o| {
                    json!({"index": o.index, "hash": o.hash.to_string(), "payment": o.payment.to_string(), "deadline": o.deadline})
                })
                .collect();
            (id.to_string(), json!({"next_index": b.next_index, "orders": orders}))
        })
        .collect();
    json!({ "books": books })
}

fn decode_books(v: &Value) -> Result<BTreeMap<u32, BookState>, String> {
    let books = v.get("books").and_then(Value::as_object).ok_or("no books object")?;
    let u32_of = |v: Option<&Value>, what: &str| {
        v.and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok()).ok_or(format!("{what} is not a u32"))
    };
    let mut out = BTreeMap::new();
    for (id, b) in books {
        let id: u32 = id.parse().map_err(|_| format!("book id {id:?} is not a u32"))?;
        let next_index = u32_of(b.get("next_index"), "next_index")?;
        let mut orders = Vec::new();
        for o in b.get("orders").and_then(Value::as_array).ok_or(format!("book {id}: no orders list"))? {
            let hash = o
                .get("hash")
                .and_then(Value::as_str)
                .and_then(|h| h.parse::<B256>().ok())
                .ok_or(format!("book {id}: an order hash is not 32 bytes of hex"))?;
            let payment = o
                .get("payment")
                .and_then(Value::as_str)
                .and_then(|p| p.parse::<u128>().ok())
                .ok_or(format!("book {id}: order {hash}: payment is not a decimal string"))?;
            let deadline = o
                .get("deadline")
                .and_then(Value::as_u64)
                .ok_or(format!("book {id}: order {hash}: deadline is not a number"))?;
            orders.push(KnownOrder { index: u32_of(o.get("index"), "index")?, hash, payment, deadline });
        }
        out.insert(id, BookState { next_index, orders });
    }
    Ok(out)
}

/// A book as the chain holds it (amounts in base units).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BookInfo {
    pub(crate) id: u32,
    pub(crate) remaining: u128,
    pub(crate) per_order_max: u128,
    pub(crate) capacity: u32,
    /// Zero while open.
    pub(crate) unlock_at: u64,
}

impl BookInfo {
    /// From the contract's struct.
    pub(crate) fn of(id: u32, b: &tgrid_chain::bindings::ITaskMarket::Book) -> Self {
        Self {
            id,
            remaining: b.remaining.to::<u128>(),
            per_order_max: b.perOrderMax.to::<u128>(),
            capacity: b.capacity.to::<u32>(),
            unlock_at: b.unlockAt.to::<u64>(),
        }
    }

    /// Open, closing until T, withdrawable, or withdrawn (or emptied) at `now`.
    pub(crate) fn state(&self, now: u64) -> &'static str {
        match (self.unlock_at, self.remaining) {
            (0, _) => "open",
            (t, _) if now < t => "closing",
            (_, 0) => "withdrawn",
            _ => "withdrawable",
        }
    }
}

/// What a new order needs from its book.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Want {
    /// Base units.
    pub(crate) payment: u128,
    pub(crate) deadline: u64,
    pub(crate) now: u64,
    /// The book asked for (`--book`), else the first that fits.
    pub(crate) book: Option<u32>,
}

/// The chosen book and index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Choice {
    pub(crate) book: u32,
    pub(crate) index: u32,
}

/// Why the given book cannot take the order, or `None` if it can (given a free index).
fn unfit(b: &BookInfo, want: &Want) -> Option<String> {
    let id = b.id;
    if b.per_order_max < want.payment {
        return Some(format!(
            "book {id} pays at most {} TGRID per order, less than the payment {} TGRID",
            fmt(b.per_order_max),
            fmt(want.payment)
        ));
    }
    if b.remaining < want.payment {
        return Some(format!("book {id} holds {} TGRID, less than the payment", fmt(b.remaining)));
    }
    if b.unlock_at != 0 && want.now >= b.unlock_at {
        return Some(format!("book {id} unlocked at unix time {}: it can no longer back orders", b.unlock_at));
    }
    if b.unlock_at != 0 && want.deadline >= b.unlock_at {
        return Some(format!(
            "book {id} is closing and unlocks at unix time {}, not after the deadline {}: choose a shorter \
             --deadline-in or another book",
            b.unlock_at, want.deadline
        ));
    }
    None
}

fn fmt(v: u128) -> String {
    tgrid_chain::format_tgrid(alloy::primitives::U256::from(v))
}

/// Chooses the book and index of a new order of `poster`: the given book, or the first open book
/// whose per-order maximum covers the payment and that has a free index; the index is the book's
/// next one in `state`, skipping indices whose nonce `used` reports used on-chain (and any an
/// order in `state` holds). Errors are bad input naming the book.
pub(crate) async fn choose<F, Fut>(books: &[BookInfo], want: &Want, state: &PosterState, mut used: F) -> Result<Choice>
where
    F: FnMut(u64) -> Fut,
    Fut: Future<Output = Result<bool>>,
{
    let candidates: Vec<&BookInfo> = match want.book {
        Some(id) => {
            let Some(b) = books.iter().find(|b| b.id == id && b.capacity > 0) else {
                return Err(bad_input(anyhow!("the poster has no book {id} (it has {} book(s))", books.len())));
            };
            if let Some(why) = unfit(b, want) {
                return Err(bad_input(anyhow!(why)));
            }
            vec![b]
        }
        None => books.iter().filter(|b| b.unlock_at == 0 && b.capacity > 0 && unfit(b, want).is_none()).collect(),
    };
    for b in &candidates {
        let mut index = state.next_index(b.id);
        while index < b.capacity {
            if !state.knows(b.id, index) && !used(Order::nonce_of(b.id, index)).await? {
                return Ok(Choice { book: b.id, index });
            }
            index += 1;
        }
    }
    Err(bad_input(match want.book {
        Some(id) => anyhow!("book {id} has no free index left (all {} are used)", candidates[0].capacity),
        None => anyhow!(
            "no open book can pay {} TGRID per order with a free index ({} book(s) in all): open one with \
             `tgrid deposit add AMOUNT --per-order {}`",
            fmt(want.payment),
            books.len(),
            fmt(want.payment)
        ),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: u128 = 1_000_000_000_000_000_000;

    fn book(id: u32, per_order: u128, capacity: u32, unlock_at: u64) -> BookInfo {
        BookInfo { id, remaining: per_order * u128::from(capacity), per_order_max: per_order, capacity, unlock_at }
    }

    fn want(payment: u128, book: Option<u32>) -> Want {
        Want { payment, deadline: 5_000, now: 1_000, book }
    }

    fn empty(dir: &Path) -> PosterState {
        PosterState::load(dir, Address::repeat_byte(1), 31337, Address::repeat_byte(2)).unwrap()
    }

    fn block_on<T>(f: impl Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
    }

    fn order(book: u32, index: u32) -> Order {
        Order {
            poster: Address::repeat_byte(1),
            provider: Address::ZERO,
            model_id: B256::ZERO,
            input_commitment: B256::ZERO,
            payment: 2 * ONE,
            collateral: 0,
            deadline: 4_000,
            nonce: Order::nonce_of(book, index),
            slash_bps: 0,
            poster_share_bps: 0,
        }
    }

    #[test]
    fn the_first_open_fitting_book_and_its_next_unused_index_are_chosen() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = empty(dir.path());
        // Book 0 pays too little, book 1 is closing, book 2 fits.
        let books = [book(0, ONE, 4, 0), book(1, 5 * ONE, 4, 9_000), book(2, 5 * ONE, 3, 0)];
        let none_used = |_| async { Ok(false) };
        let c = block_on(choose(&books, &want(2 * ONE, None), &state, none_used)).unwrap();
        assert_eq!(c, Choice { book: 2, index: 0 });
        // Indices 0 and 1 used on-chain (e.g. signed elsewhere, settled): skipped.
        let used = |n: u64| async move { Ok(n == Order::nonce_of(2, 0) || n == Order::nonce_of(2, 1)) };
        let c = block_on(choose(&books, &want(2 * ONE, None), &state, used)).unwrap();
        assert_eq!(c, Choice { book: 2, index: 2 });
        // Recorded orders move the next index on, through a reload of the file.
        state.record(&order(2, 0), B256::repeat_byte(7)).unwrap();
        state.record(&order(2, 1), B256::repeat_byte(8)).unwrap();
        let state = empty(dir.path());
        assert_eq!(state.next_index(2), 2);
        assert_eq!(state.books[&2].orders[1].hash, B256::repeat_byte(8));
        let c = block_on(choose(&books, &want(2 * ONE, None), &state, none_used)).unwrap();
        assert_eq!(c, Choice { book: 2, index: 2 });
        // Book 2 full: nothing fits.
        let all_used = |_| async { Ok(true) };
        let err = block_on(choose(&books, &want(2 * ONE, None), &state, all_used)).unwrap_err();
        assert!(format!("{err:#}").contains("no open book can pay 2 TGRID"), "{err:#}");
        assert!(err.downcast_ref::<tgrid_cli::BadInput>().is_some());
    }

    #[test]
    fn a_given_book_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let state = empty(dir.path());
        let books = [book(0, ONE, 4, 0), book(1, 5 * ONE, 4, 9_000), book(2, 5 * ONE, 4, 4_000)];
        let ok = |_| async { Ok(false) };
        let err = |w: Want| format!("{:#}", block_on(choose(&books, &w, &state, ok)).map(|_| ()).unwrap_err());
        assert!(err(want(ONE, Some(7))).contains("no book 7"));
        assert!(err(want(2 * ONE, Some(0))).contains("at most 1 TGRID per order"));
        // Closing book 1 unlocks at 9,000, after the deadline 5,000: usable.
        let c = block_on(choose(&books, &want(2 * ONE, Some(1)), &state, ok)).unwrap();
        assert_eq!(c, Choice { book: 1, index: 0 });
        // Book 2 unlocks at 4,000, before the deadline.
        assert!(err(want(2 * ONE, Some(2))).contains("shorter --deadline-in"));
        let late = Want { now: 4_000, ..want(2 * ONE, Some(2)) };
        assert!(err(late).contains("can no longer back orders"));
        let full = |_| async { Ok(true) };
        let e = block_on(choose(&books, &want(ONE, Some(0)), &state, full)).unwrap_err();
        assert!(format!("{e:#}").contains("no free index"), "{e:#}");
    }

    #[test]
    fn states_read_from_the_chain() {
        assert_eq!(book(0, ONE, 1, 0).state(10), "open");
        assert_eq!(book(0, ONE, 1, 20).state(10), "closing");
        assert_eq!(book(0, ONE, 1, 20).state(20), "withdrawable");
        assert_eq!(BookInfo { remaining: 0, ..book(0, ONE, 1, 20) }.state(30), "withdrawn");
    }

    #[test]
    fn a_torn_or_foreign_state_file_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = empty(dir.path());
        state.record(&order(0, 3), B256::repeat_byte(9)).unwrap();
        let path = state.file().to_path_buf();
        let full = std::fs::read(&path).unwrap();
        let load = || PosterState::load(dir.path(), Address::repeat_byte(1), 31337, Address::repeat_byte(2));
        assert_eq!(load().unwrap().next_index(0), 4);
        // Another market's books are kept apart.
        let other = PosterState::load(dir.path(), Address::repeat_byte(1), 31337, Address::repeat_byte(3)).unwrap();
        assert_eq!(other.next_index(0), 0);
        for cut in [1, full.len() / 2, full.len() - 2] {
            std::fs::write(&path, &full[..cut]).unwrap();
            let err = load().unwrap_err();
            assert!(format!("{err:#}").contains("is damaged"), "{err:#}");
            assert!(err.downcast_ref::<tgrid_cli::BadInput>().is_some());
        }
        let text = String::from_utf8(full).unwrap();
        for broken in [
            text.replace("\"next_index\": 4", "\"next_index\": -1"),
            text.replace("\"version\": 1", "\"version\": 9"),
            text.replace("\"payment\": \"2000000000000000000\"", "\"payment\": 2"),
            "[]".to_string(),
            "\u{0}\u{ff}garbage".to_string(),
        ] {
            std::fs::write(&path, broken.as_bytes()).unwrap();
            assert!(load().is_err(), "{broken}");
        }
        // Another poster's file under this poster's name is refused.
        std::fs::write(&path, text.replace(&Address::repeat_byte(1).to_string(), &Address::ZERO.to_string())).unwrap();
        assert!(format!("{:#}", load().unwrap_err()).contains("poster"));
    }
}
