//! `tgrid-verifier task ORDER_HASH --rpc` and `batch ROOT --rpc` against a real anvil with the
//! real TaskMarket deployed by Deploy.s.sol. A batch built in Rust settles with the verifier
//! replaced by an accept-all stub (anvil_setCode: a real wrap proof takes minutes; the end-to-end
//! tests under tests/ settle real proofs), so the batch audit recomputes everything but must fail
//! at the key-digest step.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use alloy::network::EthereumWallet;
use alloy::primitives::{Address, B256, U256};
use alloy::providers::{DynProvider, Provider, ProviderBuilder};
use alloy::signers::local::PrivateKeySigner;
use serde_json::Value;
use tgrid_chain::bindings::{ITaskMarket, IERC20};
use tgrid_chain::market::{
    Acceptance, Market, MarketDomain, Order, OrderView, RelayState, SettlementBatch, SettlementItem, SignedOrder,
};
use tgrid_chain::{chain_now, Devnet, DevnetConfig};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn tgrid(n: u64) -> U256 {
    U256::from(n) * U256::from(10u64).pow(U256::from(18u64))
}

fn wallet(devnet: &Devnet, i: usize) -> DynProvider {
    let url: alloy::transports::http::reqwest::Url = devnet.rpc_url().parse().unwrap();
    ProviderBuilder::new().wallet(EthereumWallet::from(devnet.signer(i))).connect_http(url).erased()
}

fn verifier(args: &[&str], deployment: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tgrid-verifier")).args(args).arg("--deployment").arg(deployment).output().unwrap()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not one JSON object ({e}): stdout {} stderr {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// A one-order relay on a local port (`GET /v1/orders/{hash}`: the view, or 404 as the relay
/// answers an unknown order); returns its base URL.
fn serve_relay(view: OrderView) -> String {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request = String::new();
            reader.read_line(&mut request).unwrap();
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap() == 0 || header == "\r\n" {
                    break;
                }
            }
            let (status, body) = if request.starts_with(&format!("GET /v1/orders/{} ", view.hash)) {
                ("200 OK", serde_json::to_string(&view).unwrap())
            } else {
                ("404 Not Found", r#"{"error":"unknown_order","reason":"no such order"}"#.to_string())
            };
            let response = format!(
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes());
        }
    });
    url
}

fn order(poster: Address, model: B256, index: u32, deadline: u64) -> Order {
    Order {
        poster,
        provider: Address::ZERO,
        model_id: model,
        input_commitment: B256::repeat_byte(0x10 + index as u8),
        payment: 20 * 10u128.pow(18),
        collateral: 100 * 10u128.pow(18),
        deadline,
        nonce: Order::nonce_of(0, index),
        slash_bps: 5_000,
        poster_share_bps: 5_000,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn audits_orders_and_a_settled_batch_from_chain_data() {
    let devnet =
        tokio::task::spawn_blocking(|| Devnet::start(&DevnetConfig::new(repo_root()))).await.unwrap().expect("devnet");
    let d = devnet.deployment().clone();
    let domain = MarketDomain::of(&d);
    let rpc = devnet.rpc_url();
    let deployment = devnet.deployment_path().to_path_buf();
    let admin = wallet(&devnet, 0);
    let poster: PrivateKeySigner = devnet.signer(1);
    let provider = devnet.address(3);
    let sent = IERC20::new(d.token, &admin).transfer(poster.address(), tgrid(1_000)).send().await;
    sent.unwrap().get_receipt().await.unwrap();
    Market::new(&d, wallet(&devnet, 1)).open_book(poster.address(), 8, tgrid(20)).await.unwrap();

    // Three orders of one book; the third carries another key's signature (forged: skipped).
    let deadline = chain_now(&admin).await.unwrap() + 1_800;
    let sign = |i: u32| SignedOrder::sign(order(poster.address(), d.devnet_model_id, i, deadline), &poster, &domain);
    let forger = devnet.signer(5);
    let forged_signature =
        SignedOrder::sign(order(forger.address(), d.devnet_model_id, 2, deadline), &forger, &domain).unwrap().signature;
    let forged =
        SignedOrder { order: order(poster.address(), d.devnet_model_id, 2, deadline), signature: forged_signature };
    let outputs: [Vec<i8>; 3] = [vec![1, -2, 3], vec![4, 5, -6, 7], vec![0]];
    let items: Vec<SettlementItem> = [sign(0).unwrap(), sign(1).unwrap(), forged.clone()]
        .into_iter()
        .zip(&outputs)
        .map(|(order, out)| SettlementItem {
            order,
            provider,
            output_commitment: B256::from(tgrid_circuits::commit(out).0),
        })
        .collect();
    let batch = SettlementBatch::build(&items).unwrap();
    let call = batch.call(d.registry_root, [U256::from(1u64); 8]);
    // PUSH1 1 PUSH1 0 MSTORE PUSH1 32 PUSH1 0 RETURN: returns true for any call.
    admin.raw_request::<_, Value>("anvil_setCode".into(), (d.verifier, "0x600160005260206000f3")).await.unwrap();
    let market = Market::new(&d, admin.clone());
    let sent = market.contract().settleBatch(call.header, call.leaves, call.registryRoot, call.proof).send().await;
    let receipt = tgrid_chain::confirm("settleBatch", sent).await.unwrap();
    let settled = receipt
        .inner
        .logs()
        .iter()
        .find_map(|l| l.log_decode::<ITaskMarket::BatchSettled>().ok())
        .expect("BatchSettled")
        .inner
        .data;
    assert_eq!(settled.paidCount, U256::from(2u64));
    let root = settled.batchRoot.to_string();

    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, value: &Value| {
        let path = dir.path().join(name);
        std::fs::write(&path, value.to_string()).unwrap();
        path.to_str().unwrap().to_string()
    };
    let hashes: Vec<String> = items.iter().map(|i| i.order.hash(&domain).to_string()).collect();
    let order0 = write("order-0.json", &serde_json::to_value(&items[0].order).unwrap());
    let forged_file = write("forged.json", &serde_json::to_value(&forged).unwrap());
    let out0 = write("out-0.json", &serde_json::json!({ "output_int8": outputs[0] }));
    let wrong = write("wrong.json", &serde_json::json!({ "output_int8": outputs[1] }));

    // A settled order, from the poster's copy: paid, its output commitment, its batch.
    let out =
        verifier(&["--json", "task", &hashes[0], "--rpc", &rpc, "--order", &order0, "--output", &out0], &deployment);
    let v = json(&out);
    assert!(out.status.success(), "{v}");
    assert_eq!(v["valid"], true);
    assert_eq!(v["status"], "settled");
    assert_eq!(v["paid"], true);
    assert_eq!(v["signature_valid"], true);
    assert_eq!(v["output_commitment"], items[0].output_commitment.to_string());
    assert_eq!(v["output_matches"], true);
    assert_eq!(v["batch_root"], root);
    assert_eq!(v["leaf_index"], 0);
    assert_eq!(v["batch_verified_on_chain"], true);
    assert_eq!(v["provider"].as_str().unwrap().parse::<Address>().unwrap(), provider);
    for check in ["signature", "in_batch", "settlement", "batch_proof", "output"] {
        assert_eq!(v["checks"][check]["ok"], true, "{check}: {v}");
    }
    // Another output file does not match: exit 1, the report says so.
    let out =
        verifier(&["--json", "task", &hashes[0], "--rpc", &rpc, "--order", &order0, "--output", &wrong], &deployment);
    assert_eq!(out.status.code(), Some(1));
    let v = json(&out);
    assert_eq!((v["valid"].as_bool(), v["output_matches"].as_bool()), (Some(false), Some(false)));
    assert!(v["error"].as_str().unwrap().contains("does NOT match"), "{v}");
    // Without a copy: a settled order is read back from the batch's calldata.
    let out = verifier(&["--json", "task", &hashes[1], "--rpc", &rpc], &deployment);
    let v = json(&out);
    assert!(out.status.success(), "{v}");
    assert_eq!(v["status"], "settled");
    assert_eq!(v["leaf_index"], 1);
    assert!(v["source"].as_str().unwrap().contains("settleBatch calldata"), "{v}");

    // The forged copy: signature invalid, skipped by the market, exit 1.
    let out = verifier(&["--json", "task", &hashes[2], "--rpc", &rpc, "--order", &forged_file], &deployment);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json(&out);
    assert_eq!(v["status"], "skipped");
    assert_eq!(v["signature_valid"], false);
    assert_eq!(v["skipped"][0]["reason"], "BadPosterSignature");
    assert_eq!(v["skipped"][0]["transaction"], receipt.transaction_hash.to_string());
    assert!(v["error"].as_str().unwrap().contains("signature"), "{v}");

    // An open order: nothing on-chain yet. A copy whose hash is not the one asked: exit 2.
    let open = write("open.json", &serde_json::to_value(sign(3).unwrap()).unwrap());
    let open_hash = sign(3).unwrap().hash(&domain).to_string();
    let out = verifier(&["--json", "task", &open_hash, "--rpc", &rpc, "--order", &open], &deployment);
    let v = json(&out);
    assert!(out.status.success(), "{v}");
    assert_eq!(v["status"], "open");
    assert!(v["note"].as_str().unwrap().contains("nothing about this order is on-chain"), "{v}");
    let out = verifier(&["task", &hashes[0], "--rpc", &rpc, "--order", &open], &deployment);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("hashes to"));
    let out = verifier(&["task", &open_hash, "--rpc", &rpc], &deployment);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--order FILE or --relay URL"));
    let text = verifier(&["task", &hashes[0], "--rpc", &rpc, "--order", &order0], &deployment);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("settled (paid)") && text.contains(&format!("tgrid-verifier batch {root}")), "{text}");

    // From a relay: its copy, its state and the provider's acceptance (checked); an order the
    // relay does not have is refused (exit 2).
    let acceptance = Acceptance::sign(items[0].order.hash(&domain), &devnet.signer(3), &domain).unwrap();
    let view = OrderView {
        hash: items[0].order.hash(&domain),
        signed: items[0].order.clone(),
        acceptance: Some(acceptance),
        state: RelayState::Closed,
    };
    let relay = serve_relay(view);
    let out = verifier(&["--json", "task", &hashes[0], "--rpc", &rpc, "--relay", &relay], &deployment);
    let v = json(&out);
    assert!(out.status.success(), "{v}");
    assert_eq!((v["status"].as_str(), v["relay_state"].as_str()), (Some("settled"), Some("closed")));
    assert_eq!(v["acceptance"]["valid"], true);
    assert_eq!(v["acceptance"]["provider"].as_str().unwrap().parse::<Address>().unwrap(), provider);
    let out = verifier(&["task", &open_hash, "--rpc", &rpc, "--relay", &relay], &deployment);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no order"));

    // The batch: every leaf rebuilt from calldata, root and public input recomputed and equal to
    // the event's, the forged leaf reported skipped; the stub verifier has no real key, so the
    // key-digest step fails (exit 1) instead of verifying.
    let vk = repo_root()
        .join("contracts/test/fixtures/groth16/wrap-production-r4q21g16-b2040e15e164b7bb-6f990bdc6e64c4c2d710109c5ea949d3ceec7851903ff7a22665a9a12f725714-insecure-devnet.vk.json");
    let out = verifier(&["--json", "batch", &root, "--rpc", &rpc, "--vk", vk.to_str().unwrap()], &deployment);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json(&out);
    assert_eq!(v["valid"], false);
    assert_eq!(v["batch_root"], root);
    assert_eq!(v["public_input"], format!("{:#066x}", settled.publicInput));
    assert_eq!(
        (v["count"].as_u64(), v["paid_count"].as_u64(), v["skipped_count"].as_u64()),
        (Some(3), Some(2), Some(1))
    );
    assert_eq!(v["settler"].as_str().unwrap().parse::<Address>().unwrap(), devnet.address(0));
    assert_eq!(v["verifier"].as_str().unwrap().parse::<Address>().unwrap(), d.verifier);
    for check in ["count", "batch_root", "registry_root", "public_input", "signatures", "outcomes"] {
        assert_eq!(v["checks"][check]["ok"], true, "{check}: {v}");
    }
    assert_eq!(v["checks"]["key_digest"]["ok"], false);
    let error = v["error"].as_str().unwrap();
    assert!(
        error.contains("has digest")
            && error.contains("0x0000000000000000000000000000000000000000000000000000000000000001"),
        "{error}"
    );
    let leaves = v["leaves"].as_array().unwrap();
    assert_eq!(leaves.len(), 3);
    assert_eq!(
        (leaves[0]["outcome"].as_str(), leaves[0]["order_hash"].as_str()),
        (Some("paid"), Some(hashes[0].as_str()))
    );
    assert_eq!(leaves[2]["outcome"], "skipped");
    assert_eq!(leaves[2]["reason"], "BadPosterSignature");
    assert_eq!(leaves[2]["signature_valid"], false);
    assert!(v["gas_used"].as_u64().unwrap() > 0);
    // Without --vk the stub cannot even name its key.
    let out = verifier(&["batch", &root, "--rpc", &rpc], &deployment);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("VERIFYING_KEY_ID"));
    assert!(String::from_utf8_lossy(&out.stdout).contains("FAIL  key_digest"));
    // A root that never settled: exit 2.
    let out = verifier(&["batch", &B256::repeat_byte(7).to_string(), "--rpc", &rpc], &deployment);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no batch with root"));
}
