//! Decoding never panics and never trusts the file; the full wrap is tested end to end by the
//! CLI tests (tgrid-sequencer wrap, tgrid-verifier groth16).

use crate::file::{parse_hex, KeyJson, LeafJson, SettlementProofFile, FORMAT, MAX_FILE_BYTES};
use crate::{Error, WrapKeyId};
use tgrid_aggregation::TaskLeaf;
use tgrid_wrap::FinalFri;

fn leaf(i: u8) -> TaskLeaf {
    TaskLeaf {
        task_id: [i; 32],
        model_id: [2; 32],
        input_commitment: [3; 32],
        output_commitment: [4; 32],
        provider: [5; 20],
    }
}

/// A key id of the test FRI parameters for a final circuit whose digest starts with 0x11….
fn sample_key_id() -> String {
    WrapKeyId {
        fri: FinalFri::INSECURE_TEST,
        final_circuit_prefix: [0x11; 8],
        r1cs_digest: [0x66; 32],
        public_seed: false,
    }
    .to_string()
}

fn sample() -> SettlementProofFile {
    SettlementProofFile {
        format: FORMAT.into(),
        key: KeyJson { id: sample_key_id(), insecure: true, verifying_key_digest: format!("0x{}", "00".repeat(32)) },
        fri: "insecure-test".into(),
        final_circuit_digest: format!("0x{}", "11".repeat(32)),
        batch_root: format!("0x{}", "22".repeat(32)),
        registry_root: format!("0x{}", "33".repeat(32)),
        count: 2,
        public_input: format!("0x{}", "04".repeat(32)),
        proof: vec![format!("0x{}", "01".repeat(32)); 8],
        leaves: vec![LeafJson::of(&leaf(1)), LeafJson::of(&leaf(2))],
    }
}

#[test]
fn json_round_trip() {
    let file = sample();
    let back = SettlementProofFile::from_json_bytes(&file.to_json_bytes()).unwrap();
    assert_eq!(back, file);
    assert_eq!(back.task_leaves().unwrap(), vec![leaf(1), leaf(2)]);
    assert_eq!(back.proof_words().unwrap().len(), 8);
}

#[test]
fn malformed_files_are_errors() {
    let bad = |bytes: &[u8]| matches!(SettlementProofFile::from_json_bytes(bytes), Err(Error::Malformed(_)));
    assert!(bad(b""));
    assert!(bad(b"\x00\xff random bytes"));
    assert!(bad(b"{}"));
    assert!(bad(&vec![b' '; MAX_FILE_BYTES + 1]));
    let mut v: serde_json::Value = serde_json::from_slice(&sample().to_json_bytes()).unwrap();
    v["format"] = "tgrid-settlement-proof/0".into();
    assert!(bad(&serde_json::to_vec(&v).unwrap()));
    let mut v: serde_json::Value = serde_json::from_slice(&sample().to_json_bytes()).unwrap();
    v["extra"] = 1.into();
    assert!(bad(&serde_json::to_vec(&v).unwrap()), "unknown fields are rejected");
    let mut v: serde_json::Value = serde_json::from_slice(&sample().to_json_bytes()).unwrap();
    v["count"] = (-1).into();
    assert!(bad(&serde_json::to_vec(&v).unwrap()));
}

/// The key id is parsed on load and the file's other claims about the circuit must agree.
#[test]
fn key_claims_are_checked_on_load() {
    let bad = |edit: &dyn Fn(&mut SettlementProofFile)| {
        let mut file = sample();
        edit(&mut file);
        matches!(SettlementProofFile::from_json_bytes(&file.to_json_bytes()), Err(Error::Malformed(_)))
    };
    assert!(!bad(&|_| {}));
    assert!(bad(&|f| f.key.id = "wrap-production-5ef98bd092609bcb-ff9c623f-insecure-devnet".into()), "old ids");
    assert!(bad(&|f| f.fri = "production".into()), "fri label against the id");
    assert!(bad(&|f| f.final_circuit_digest = format!("0x{}", "12".repeat(32))), "final circuit against the id");
    assert!(bad(&|f| f.key.insecure = false), "a 10-bit key claimed secure");
    let production = WrapKeyId {
        fri: FinalFri::PRODUCTION,
        final_circuit_prefix: [0x11; 8],
        r1cs_digest: [0x66; 32],
        public_seed: false,
    };
    let secure = |f: &mut SettlementProofFile| {
        f.key.id = production.to_string();
        f.fri = "production".into();
        f.key.insecure = false;
    };
    assert!(!bad(&secure), "a production key may be secure");
    assert!(bad(&|f| {
        secure(f);
        f.key.id = WrapKeyId { public_seed: true, ..production }.to_string();
    }));
}

#[test]
fn bad_fields_are_errors() {
    let mut file = sample();
    file.proof.pop();
    assert!(matches!(file.proof_words(), Err(Error::Malformed(_))));
    let mut file = sample();
    file.proof[3] = "0x12".into();
    assert!(matches!(file.proof_words(), Err(Error::Malformed(_))));
    let mut file = sample();
    file.leaves[1].provider = format!("0x{}", "zz".repeat(20));
    assert!(matches!(file.task_leaves(), Err(Error::Malformed(_))));
    let mut file = sample();
    file.leaves[0].task_id = "11".repeat(32);
    assert!(matches!(file.task_leaves(), Err(Error::Malformed(_))));
    assert!(parse_hex::<2>("0x0102", "x").is_ok());
    assert!(parse_hex::<2>("0x01020", "x").is_err());
    assert!(parse_hex::<2>("0x€1", "x").is_err());
}

/// The devnet verifier the contracts deploy (contracts/verifier/WrapVerifierDevnetInsecure.sol)
/// was generated from this key and this batch: both must still fit the current circuits.
mod committed_devnet_key {
    use std::path::PathBuf;
    use std::sync::OnceLock;

    use tgrid_wrap::FinalFri;

    use crate::file::parse_hex;
    use crate::{insecure_devnet_key_id, BatchWrapper, Error, SettlementProofFile};

    const KEY_ID: &str = "wrap-production-r4q21g16-b2040e15e164b7bb-6f990bdc6e64c4c2d710109c5ea949d3ceec7851903ff7a22665a9a12f725714-insecure-devnet";

    fn fixture(suffix: &str) -> Vec<u8> {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../contracts/test/fixtures/groth16")
            .join(format!("{KEY_ID}{suffix}"));
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Built once for the module's tests (the aggregation and wrap circuits take seconds).
    fn production_wrapper() -> &'static BatchWrapper {
        static WRAPPER: OnceLock<BatchWrapper> = OnceLock::new();
        WRAPPER.get_or_init(|| BatchWrapper::build(FinalFri::PRODUCTION).unwrap())
    }

    fn vk() -> ark_groth16::VerifyingKey<ark_bn254::Bn254> {
        let json: serde_json::Value = serde_json::from_slice(&fixture(".vk.json")).unwrap();
        assert_eq!(json["tgrid_key_id"], KEY_ID, "the verifying key file names its key");
        tgrid_groth16::evm::verifying_key_from_json(&json).unwrap()
    }

    /// The Rust list of public-seed key digests is the one the generated verifiers carry, and
    /// the committed devnet key is on it.
    #[test]
    fn public_seed_key_digests_match_the_generated_verifiers() {
        let contracts = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../contracts/verifier");
        for (file, expected) in ["WrapVerifierDevnetInsecure.sol", "WrapVerifierInsecureTest.sol"]
            .iter()
            .zip(crate::PUBLIC_SEED_KEY_DIGESTS)
        {
            let source = std::fs::read_to_string(contracts.join(file)).unwrap();
            let line = source.lines().find(|l| l.contains("bytes32 public constant VERIFYING_KEY_DIGEST")).unwrap();
            assert!(line.contains(expected), "{file}: {line}");
        }
        let digest = tgrid_groth16::evm::verifying_key_digest(&vk()).unwrap();
        assert!(crate::is_public_seed_key_digest(&digest));
        assert!(!crate::is_public_seed_key_digest(&[7; 32]));
    }

    #[test]
    fn the_committed_key_id_names_the_current_production_final_circuit() {
        let wrapper = production_wrapper();
        assert_eq!(
            insecure_devnet_key_id(wrapper).unwrap().to_string(),
            KEY_ID,
            "the final circuit or its R1CS verifier changed: regenerate the devnet key, verifier and fixtures (docs/contracts.md)"
        );
        let file = SettlementProofFile::from_json_bytes(&fixture(".batch.g16.json")).unwrap();
        assert_eq!(file.final_circuit_digest, format!("0x{}", hex::encode(wrapper.final_circuit_digest())));
        // An aggregator of the same process (a sequencer's, a self-settling provider's) proves
        // with the wrapper's aggregation circuits rather than a second copy of them.
        let aggregator =
            crate::Aggregator::with_registry(tgrid_aggregation::Registry::new([]).unwrap(), vec![]).unwrap();
        assert!(std::ptr::eq(aggregator.circuits(), wrapper.aggregation()));
    }

    #[test]
    fn the_committed_batch_verifies_and_tampering_does_not() {
        let file = SettlementProofFile::from_json_bytes(&fixture(".batch.g16.json")).unwrap();
        let vk = vk();
        let verified = file.verify(&vk).unwrap();
        assert_eq!(verified.leaves.len(), 3);
        assert_eq!(file.key.id, KEY_ID);
        assert!(file.key.insecure);

        let mut bad = file.clone();
        bad.proof.swap(0, 6);
        assert!(matches!(bad.verify(&vk), Err(Error::Invalid(_))));
        let mut bad = file.clone();
        bad.leaves.swap(1, 2);
        assert!(matches!(bad.verify(&vk), Err(Error::Invalid(_))), "reordered leaves change the root");
        let mut bad = file.clone();
        bad.count = 2;
        assert!(matches!(bad.verify(&vk), Err(Error::Invalid(_))));
        let mut bad = file.clone();
        bad.key.verifying_key_digest = format!("0x{}", "00".repeat(32));
        assert!(matches!(bad.verify(&vk), Err(Error::KeyMismatch(_))));
    }

    /// A Groth16 proof made elsewhere (a wrap worker on the job queue) is adopted only for the
    /// batch and key it proves: the file is rebuilt from the batch's own leaves and registry
    /// root, and only the worker's proof words are taken.
    #[test]
    fn a_proof_made_elsewhere_is_adopted_only_for_its_batch_and_key() {
        let file = SettlementProofFile::from_json_bytes(&fixture(".batch.g16.json")).unwrap();
        let (leaves, words) = (file.task_leaves().unwrap(), file.proof_words().unwrap());
        let registry_root = parse_hex::<32>(&file.registry_root, "registry_root").unwrap();
        let (wrapper, vk) = (production_wrapper(), vk());
        let adopt =
            |leaves: &[tgrid_aggregation::TaskLeaf], registry_root: &[u8; 32], words, key: &crate::file::KeyJson| {
                wrapper.adopt(&vk, key.clone(), leaves, registry_root, words)
            };
        assert_eq!(adopt(&leaves, &registry_root, words, &file.key).unwrap(), file, "the same file as the prover's");

        let mut forged = words;
        forged.swap(0, 6);
        assert!(matches!(adopt(&leaves, &registry_root, forged, &file.key), Err(Error::Invalid(_))));
        let mut reordered = leaves.clone();
        reordered.swap(1, 2);
        assert!(matches!(adopt(&reordered, &registry_root, words, &file.key), Err(Error::Invalid(_))));
        assert!(matches!(adopt(&leaves[..2], &registry_root, words, &file.key), Err(Error::Invalid(_))));
        assert!(matches!(adopt(&leaves, &[0x11; 32], words, &file.key), Err(Error::Invalid(_))));
        assert!(matches!(adopt(&[], &registry_root, words, &file.key), Err(Error::Invalid(_))));
        let other_key =
            crate::file::KeyJson { verifying_key_digest: format!("0x{}", "00".repeat(32)), ..file.key.clone() };
        assert!(matches!(adopt(&leaves, &registry_root, words, &other_key), Err(Error::KeyMismatch(_))));
    }
}
