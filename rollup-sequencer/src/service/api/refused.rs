//! Deliveries refused for what they are (a proof that does not verify, or proves another task,
//! provider, model, input or output): a replay of the same signed delivery gets the same answer
//! before the rate limit and without a second proof check, so whoever saw a provider's refused
//! delivery cannot spend that provider's submission budget, or the verification slots, by
//! resending it.

use std::collections::{HashMap, VecDeque};

use alloy::primitives::{Address, B256};

use super::ApiError;

/// What identifies a delivery: the signed fields and the provider who signed them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct DeliveryKey {
    pub order_hash: B256,
    pub output_commitment: B256,
    pub proof_digest: B256,
    pub provider: Address,
}

/// The last `capacity` refusals, oldest evicted first.
#[derive(Debug)]
pub(crate) struct RefusedDeliveries {
    capacity: usize,
    answers: HashMap<DeliveryKey, ApiError>,
    order: VecDeque<DeliveryKey>,
}

impl RefusedDeliveries {
    pub(crate) fn new(capacity: usize) -> Self {
        Self { capacity: capacity.max(1), answers: HashMap::new(), order: VecDeque::new() }
    }

    /// The answer given to this delivery before, if it was refused.
    pub(crate) fn get(&self, key: &DeliveryKey) -> Option<ApiError> {
        self.answers.get(key).cloned()
    }

    pub(crate) fn remember(&mut self, key: DeliveryKey, answer: &ApiError) {
        if self.answers.insert(key, answer.clone()).is_none() {
            self.order.push_back(key);
            if self.order.len() > self.capacity {
                if let Some(oldest) = self.order.pop_front() {
                    self.answers.remove(&oldest);
                }
            }
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.answers.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u8) -> DeliveryKey {
        DeliveryKey {
            order_hash: B256::repeat_byte(n),
            output_commitment: B256::ZERO,
            proof_digest: B256::ZERO,
            provider: Address::ZERO,
        }
    }

    #[test]
    fn remembers_refusals_up_to_its_capacity_oldest_out_first() {
        let mut refused = RefusedDeliveries::new(2);
        refused.remember(key(1), &ApiError::rejected("one"));
        refused.remember(key(2), &ApiError::rejected("two"));
        refused.remember(key(2), &ApiError::rejected("two again"));
        assert_eq!(refused.len(), 2);
        refused.remember(key(3), &ApiError::rejected("three"));
        assert_eq!(refused.len(), 2);
        assert!(refused.get(&key(1)).is_none());
        assert_eq!(refused.get(&key(3)).unwrap().reason, "three");
        // Another provider's identical fields are another delivery.
        assert!(refused.get(&DeliveryKey { provider: Address::repeat_byte(9), ..key(3) }).is_none());
    }
}
