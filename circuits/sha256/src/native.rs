//! Native (out-of-circuit) helpers: constants of FIPS 180-4, word packing and padding.

/// Initial hash value `H(0)` of SHA-256 (FIPS 180-4, section 5.3.3).
pub const IV: [u32; 8] =
    [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/// Round constants `K` of SHA-256 (FIPS 180-4, section 4.2.2).
pub const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
    0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
    0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
    0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
];

/// Packs bytes into big-endian 32-bit words, the layout [`sha256_words`] expects.
///
/// The last word is padded with zero bytes on the right when `bytes.len()` is not a multiple of
/// 4 (those are exactly the "unused low-order bytes" the gadget proves zero), so
/// `words_be(m).len() == m.len().div_ceil(4)`.
///
/// [`sha256_words`]: crate::CircuitBuilderSha256::sha256_words
pub fn words_be(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks(4)
        .map(|chunk| {
            let mut word = [0u8; 4];
            word[..chunk.len()].copy_from_slice(chunk);
            u32::from_be_bytes(word)
        })
        .collect()
}

/// Serializes a digest given as 8 big-endian words into its 32 bytes.
pub fn digest_bytes(words: &[u32; 8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (chunk, word) in out.chunks_exact_mut(4).zip(words) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    out
}

/// Number of 512-bit blocks (compressions) SHA-256 spends on a message of `len_bits` bits.
pub const fn num_blocks(len_bits: usize) -> usize {
    (len_bits + 1 + 64).div_ceil(512)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_be_pads_the_last_word_with_zero_bytes() {
        assert_eq!(words_be(&[]), Vec::<u32>::new());
        assert_eq!(words_be(&[1, 2, 3, 4, 5]), vec![0x01020304, 0x05000000]);
    }

    #[test]
    fn num_blocks_matches_the_padding_rule() {
        // 55 bytes + 0x80 + 8 length bytes = 64: one block; 56 bytes need two.
        assert_eq!(num_blocks(0), 1);
        assert_eq!(num_blocks(55 * 8), 1);
        assert_eq!(num_blocks(56 * 8), 2);
        assert_eq!(num_blocks(119 * 8), 2);
        assert_eq!(num_blocks(120 * 8), 3);
        assert_eq!(num_blocks(149 * 8), 3);
    }
}
