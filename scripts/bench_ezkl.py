"""EZKL against tgrid-prover on the same ONNX model and input, in one run on one machine.

EZKL (PyPI `ezkl`, Halo2/KZG): settings from the ONNX, calibrated on the fixture's calibration
set, compiled, a test SRS generated locally (`gen_srs`: this machine has no internet to fetch a
public one; the prover's work is the same), keys set up, the witness generated once; then
`ezkl.prove` is timed with its keys on disk, as a user of its Python API runs it. tgrid-prover is
timed as a one-shot `tgrid-prover prove` (a cold process that builds the circuit), interleaved
with EZKL's runs so both see the same machine state. Prints one JSON object.

If EZKL fails at a step (an unsupported operator, memory), `ezkl_error` names the step and the
message, and tgrid-prover is still timed.

Usage: python bench_ezkl.py MODEL.onnx CALIBRATION.json MODEL.tgm TGRID_PROVER [--runs N] [--scale BITS]
"""

import argparse
import asyncio
import atexit
import inspect
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

import ezkl


def call(f, *args, **kwargs):
    """Runs an ezkl function, awaiting it if this version made it async."""
    r = f(*args, **kwargs)
    return asyncio.run(r) if inspect.isawaitable(r) else r


def main():
    p = argparse.ArgumentParser()
    p.add_argument("onnx")
    p.add_argument("calibration")
    p.add_argument("tgm")
    p.add_argument("tgrid_prover")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--scale", type=int, help="EZKL's input and parameter scale (bits) instead of its default")
    a = p.parse_args()

    work = tempfile.mkdtemp(prefix="tgrid-ezkl-")
    # EZKL's keys take gigabytes (4 GB for a 2^18-row circuit): gone with the run.
    atexit.register(shutil.rmtree, work, True)
    path = lambda name: os.path.join(work, name)
    with open(a.calibration) as f:
        calibration = json.load(f)
    with open(path("input.json"), "w") as f:
        json.dump({"input_data": [calibration["input_data"][0]]}, f)

    # A public task: input and output public, weights fixed (as in a tgrid public task).
    args = ezkl.PyRunArgs()
    args.input_visibility = "public"
    args.output_visibility = "public"
    args.param_visibility = "fixed"
    if a.scale is not None:
        args.input_scale = a.scale
        args.param_scale = a.scale
    started = time.perf_counter()
    # EZKL may refuse a model (an operator, memory): the step and its message are the result.
    step, logrows, ezkl_error = "gen_settings", None, None
    try:
        call(ezkl.gen_settings, a.onnx, path("settings.json"), py_run_args=args)
        step = "calibrate_settings"
        call(ezkl.calibrate_settings, a.calibration, a.onnx, path("settings.json"), "resources")
        step = "compile_circuit"
        call(ezkl.compile_circuit, a.onnx, path("model.compiled"), path("settings.json"))
        with open(path("settings.json")) as f:
            settings = json.load(f)
        logrows = settings["run_args"]["logrows"]
        step = "gen_srs"
        call(ezkl.gen_srs, path("kzg.srs"), logrows)
        step = "gen_witness"
        call(ezkl.gen_witness, path("input.json"), path("model.compiled"), path("witness.json"))
        step = "setup"
        call(ezkl.setup, path("model.compiled"), path("vk.key"), path("pk.key"), path("kzg.srs"))
    except Exception as e:  # noqa: BLE001 - any EZKL failure is reported, not raised
        ezkl_error = f"{step}: {type(e).__name__}: {e}"
    ezkl_setup_s = time.perf_counter() - started

    ezkl_prove, tgrid_prove = [], []
    for i in range(a.runs):
        if ezkl_error is None:
            t = time.perf_counter()
            try:
                call(ezkl.prove, path("witness.json"), path("model.compiled"), path("pk.key"), path("proof.json"), path("kzg.srs"))
                ezkl_prove.append(time.perf_counter() - t)
            except Exception as e:  # noqa: BLE001
                ezkl_error = f"prove: {type(e).__name__}: {e}"
        t = time.perf_counter()
        subprocess.run(
            [
                a.tgrid_prover,
                "--json",
                "prove",
                a.tgm,
                "--input",
                path("input.json"),
                "--task-id",
                "0x" + f"{i + 1:064x}",
                "--provider",
                "0x" + "42" * 20,
                "--out",
                path("task.tgp"),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        tgrid_prove.append(time.perf_counter() - t)
    ok, proof_bytes = False, None
    if ezkl_error is None:
        ok = call(ezkl.verify, path("proof.json"), path("settings.json"), path("vk.key"), path("kzg.srs"))
        proof_bytes = os.path.getsize(path("proof.json"))
    speedup = round(statistics.median(ezkl_prove) / statistics.median(tgrid_prove), 1) if ezkl_prove else None
    print(
        json.dumps(
            {
                "model": a.onnx,
                "ezkl_version": getattr(ezkl, "__version__", "?"),
                "ezkl_error": ezkl_error,
                "ezkl_logrows": logrows,
                "ezkl_setup_seconds": round(ezkl_setup_s, 2),
                "ezkl_prove_seconds": [round(x, 3) for x in ezkl_prove],
                "ezkl_proof_verified": bool(ok),
                "ezkl_proof_json_bytes": proof_bytes,
                "tgrid_one_shot_prove_seconds": [round(x, 3) for x in tgrid_prove],
                "tgrid_proof_bytes": os.path.getsize(path("task.tgp")),
                "speedup_median": speedup,
                "runs": a.runs,
            }
        )
    )


if __name__ == "__main__":
    main()
