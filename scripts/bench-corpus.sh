#!/usr/bin/env bash
# Proving benchmark of the third-party corpus (fixtures/corpus) beside our own fixtures of
# similar size, one `tgrid-prover bench` run so that the figures compare: one JSON line per
# model. Each corpus model is staged as a fixture directory (its opset-17 file, or the only file
# its exporters produced; its calibration; its first held-out input).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${TGRID_PROVER:-target/release/tgrid-prover}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
python3 - "$stage" <<'PY'
import json, os, shutil, sys
stage, root = sys.argv[1], "fixtures/corpus"
manifest = json.load(open(f"{root}/manifest.json"))
for name, entry in sorted(manifest["models"].items()):
    files = sorted(entry["files"])
    file = "opset17.onnx" if "opset17.onnx" in files else files[0]
    os.makedirs(f"{stage}/{name}")
    shutil.copy(f"{root}/{name}/{file}", f"{stage}/{name}/model.onnx")
    shutil.copy(f"{root}/{name}/calibration.json", f"{stage}/{name}/calibration.json")
    reference = json.load(open(f"{root}/{name}/reference.json"))
    json.dump({"input_data": [reference["inputs"][0]]}, open(f"{stage}/{name}/input.json", "w"))
PY
"$BIN" bench --json fixtures/cnn fixtures/lenet fixtures/vit "$stage"/*
