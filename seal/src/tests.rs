//! Sealing round trips, and every way a sealed input can be for someone or something else.

use proptest::prelude::*;

use super::*;

const MODEL: [u8; 32] = [0x5e; 32];

fn tensor(n: usize) -> Vec<i8> {
    (0..n).map(|i| (i * 37 % 256) as u8 as i8).collect()
}

#[test]
fn a_sealed_input_opens_for_its_recipient_and_commitment() {
    let (provider_key, provider) = OpeningKey::generate();
    let x = tensor(64);
    let salt = Salt::random();
    let (sealed, commitment) = seal_input(&provider, &MODEL, &x, &salt).unwrap();
    assert_eq!(commitment, commit_salted(&x, &salt));
    let decoded = Sealed::from_bytes(&sealed.to_bytes()).unwrap();
    assert_eq!(decoded, sealed);
    let opened = open_input(&provider_key, &decoded, &MODEL, &commitment).unwrap();
    assert_eq!(opened, OpenedInput { tensor: x.clone(), salt });
    // The ciphertext hides the tensor: no run of its bytes appears in the file.
    assert!(!sealed.to_bytes().windows(16).any(|w| w == &x[..16].iter().map(|&v| v as u8).collect::<Vec<_>>()[..]));
    // An empty tensor seals too.
    let (empty, c) = seal_input(&provider, &MODEL, &[], &salt).unwrap();
    assert_eq!(open_input(&provider_key, &empty, &MODEL, &c).unwrap().tensor, Vec::<i8>::new());
}

#[test]
fn another_key_commitment_or_model_does_not_open() {
    let (provider_key, provider) = OpeningKey::generate();
    let (someone_else, _) = OpeningKey::generate();
    let x = tensor(40);
    let (sealed, commitment) = seal_input(&provider, &MODEL, &x, &Salt::random()).unwrap();
    assert!(matches!(open_input(&someone_else, &sealed, &MODEL, &commitment), Err(Error::Open)));
    let other = commit_salted(&x, &Salt::random());
    assert!(matches!(open_input(&provider_key, &sealed, &MODEL, &other), Err(Error::Open)));
    assert!(matches!(open_input(&provider_key, &sealed, &[0x5f; 32], &commitment), Err(Error::Open)));
    // Any flipped ciphertext or key-share bit.
    for i in [0, sealed.ciphertext.len() / 2, sealed.ciphertext.len() - 1] {
        let mut bent = sealed.clone();
        bent.ciphertext[i] ^= 1;
        assert!(matches!(open_input(&provider_key, &bent, &MODEL, &commitment), Err(Error::Open)));
    }
    let mut bent = sealed;
    bent.encapped[3] ^= 1;
    assert!(open_input(&provider_key, &bent, &MODEL, &commitment).is_err());
}

/// The plaintext layout of [`seal_input`], with a length field that may lie.
fn plaintext(tensor: &[i8], salt: &Salt, claimed_len: u32) -> Vec<u8> {
    let mut out = salt.to_bytes().to_vec();
    out.extend_from_slice(&claimed_len.to_le_bytes());
    out.extend(tensor.iter().map(|&x| x as u8));
    out
}

/// Seals `plaintext` bound to `commitment`, whatever it holds (a dishonest sender's ciphertext).
fn seal_under(recipient: &SealingKey, commitment: &Commitment, plaintext: &[u8]) -> Sealed {
    let (encapped, ciphertext) = hpke::single_shot_seal::<ChaCha20Poly1305, HkdfSha256, Kem>(
        &OpModeS::Base,
        &recipient.0,
        INFO,
        plaintext,
        &aad(&MODEL, commitment),
    )
    .unwrap();
    Sealed { encapped: encapped.to_bytes().as_slice().try_into().unwrap(), ciphertext }
}

#[test]
fn a_poster_cannot_seal_another_input_than_it_committed_to() {
    let (provider_key, provider) = OpeningKey::generate();
    let (x, salt) = (tensor(30), Salt::random());
    let committed = commit_salted(&x, &salt);
    let mut other = x.clone();
    other[7] = other[7].wrapping_add(1);
    for (t, s) in [(other, salt), (x.clone(), Salt::random())] {
        let sealed = seal_under(&provider, &committed, &plaintext(&t, &s, t.len() as u32));
        assert!(
            matches!(open_input(&provider_key, &sealed, &MODEL, &committed), Err(Error::CommitmentMismatch(c)) if c == committed)
        );
    }
    // A plaintext whose length field lies is malformed, not a panic.
    let sealed = seal_under(&provider, &committed, &plaintext(&x, &salt, 1000));
    assert!(matches!(open_input(&provider_key, &sealed, &MODEL, &committed), Err(Error::Format(_))));
    // Too short to hold a length.
    let sealed = seal_under(&provider, &committed, &salt.to_bytes());
    assert!(matches!(open_input(&provider_key, &sealed, &MODEL, &committed), Err(Error::Format(_))));
}

#[test]
fn keys_round_trip_and_the_private_key_never_prints() {
    let (key, public) = OpeningKey::generate();
    assert_eq!(key.sealing_key(), public);
    assert_eq!(SealingKey::from_hex(&public.to_hex()).unwrap(), public);
    assert_eq!(OpeningKey::from_hex(&key.to_hex()).unwrap().sealing_key(), public);
    assert_eq!(format!("{key:?}"), "OpeningKey(..)");
    assert!(SealingKey::from_hex("0x1234").is_err());
    assert!(OpeningKey::from_hex(&"g".repeat(64)).is_err());
    assert!(matches!(
        seal_input(&public, &MODEL, &vec![0; MAX_TENSOR_LEN + 1], &Salt::random()),
        Err(Error::TooLarge(_))
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = Sealed::from_bytes(&bytes);
        let mut prefixed = SEALED_MAGIC.to_vec();
        prefixed.extend_from_slice(&SEALED_VERSION.to_le_bytes());
        prefixed.extend_from_slice(&bytes);
        let _ = Sealed::from_bytes(&prefixed);
    }

    #[test]
    fn a_mutated_file_is_refused_or_does_not_open(pos in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let (key, public) = OpeningKey::generate();
        let x = tensor(20);
        let (sealed, commitment) = seal_input(&public, &MODEL, &x, &Salt::random()).unwrap();
        let mut bytes = sealed.to_bytes();
        let i = pos.index(bytes.len());
        prop_assume!(bytes[i] != byte);
        bytes[i] = byte;
        if let Ok(decoded) = Sealed::from_bytes(&bytes) {
            prop_assert!(open_input(&key, &decoded, &MODEL, &commitment).is_err());
        }
    }
}
