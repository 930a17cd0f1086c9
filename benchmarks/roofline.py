"""Roofline of ResNet-18's convolutions on the simulated accelerator, next to TVM Fig. 10.

For every layer of the paper's Fig. 10 (compiler/data/tvm_fig10_roofline.csv) and on each
preset: compile with one virtual thread ("no latency hiding") and with the search's choice of
two ("latency hiding"), simulate under the timing contract, check the output bit for bit
against a plain numpy convolution, and print GOPS (the layer's useful ops / simulated time)
beside the paper's numbers and the memory-model parameters, and each layer's compile time (target:
under 2 s a layer, the largest included; a speed target, so measured here, not in the tests).

    .venv/bin/python benchmarks/roofline.py [--config vta-pynq --config osdi18] [--layers C1,C5]
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from importlib import resources

import numpy as np

from compiler.accel import compile_layer, layer_output, random_tensors
from compiler.layers import Conv2D
from vdla_hw import timing
from vdla_hw.config import load_config

MEMORY_PARAMS = ("CLOCK_MHZ", "MEM_BYTES_PER_BEAT", "MEM_MAX_BURST", "MEM_LATENCY", "MEM_WRITE_LATENCY",
                 "MEM_READ_OUTSTANDING", "MEM_WRITE_OUTSTANDING", "MEM_BURST_GAP", "DDR_BYTES_PER_CYCLE_CAP",
                 "CMD_QUEUE_DEPTH", "TOKEN_QUEUE_DEPTH")
SHIFT = 10
COMPILE_TARGET_S = 2.0    # a layer's compile (schedule search included), the largest of Fig. 10 too


def fig10_layers() -> list[dict]:
    text = resources.files("compiler").joinpath("data/tvm_fig10_roofline.csv").read_text()
    rows = [line for line in text.splitlines() if line and not line.startswith("#")]
    return list(csv.DictReader(rows))


def numpy_conv(x, w, b, stride, pad, shift, relu):
    """Plain quantized convolution (independent of the compiler) for the bit-exact check."""
    n, _, h, wd = x.shape
    o, _, k, _ = w.shape
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    acc = np.zeros((n, o, oh, ow), dtype=np.int64)
    for ky in range(k):
        for kx in range(k):
            patch = xp[:, :, ky:ky + stride * (oh - 1) + 1:stride, kx:kx + stride * (ow - 1) + 1:stride]
            acc += np.einsum("nchw,oc->nohw", patch, w[:, :, ky, kx].astype(np.int64))
    y = (acc + b[None, :, None, None]) >> shift
    return np.clip(y, 0 if relu else -128, 127).astype(np.int8)


def run(layer: Conv2D, config, vthreads: int, tensors, expected) -> dict:
    import vdla_sim

    start = time.perf_counter()
    bundle = compile_layer(layer, config, tensors=tensors, vthreads=vthreads)
    compile_s = time.perf_counter() - start
    result = vdla_sim.simulate(bundle)
    exact = bool((layer_output(bundle, result.dram) == expected).all())
    return {"gops": layer.ops / result.seconds / 1e9, "cycles": result.cycles, "exact": exact,
            "schedule": bundle.meta["schedule"], "compile_s": compile_s, "insns": bundle.insn_count}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", action="append", help="preset(s) (default: vta-pynq and osdi18)")
    parser.add_argument("--layers", default=None, help="comma-separated labels (default: all of Fig. 10)")
    args = parser.parse_args(argv)
    configs = args.config or ["vta-pynq", "osdi18"]
    rows = fig10_layers()
    if args.layers:
        wanted = set(args.layers.split(","))
        rows = [r for r in rows if r["label"] in wanted]
    failures = 0
    for name in configs:
        config = load_config(name)
        peak = config.peak_ops_per_s / 1e9
        print(f"\n== {name}: roofs {peak:.1f} GOPS, {config.mem_bytes_per_s / 1e9:.2f} GB/s "
              f"(fingerprint {config.fingerprint})")
        print("   memory model: " + ", ".join(f"{k}={config.params[k]}" for k in MEMORY_PARAMS)
              + f", ARBITRATION={'>'.join(timing.ARBITRATION_ORDER)}")
        print(f"{'layer':<6}{'shape (HxW IC->OC kK sS pP)':<30}{'paper no-LH':>12}{'paper LH':>10}"
              f"{'sim 1 thr':>11}{'sim LH':>9}{'util':>7}{'vs paper':>9}  {'exact':<6}{'compile':>8}  schedule (LH)")
        best_util, slowest = 0.0, (0.0, "")
        for row in rows:
            layer = Conv2D(name=row["label"], h=int(row["H"]), w=int(row["W"]), ic=int(row["IC"]),
                           oc=int(row["OC"]), k=int(row["K"]), stride=int(row["stride"]), pad=int(row["pad"]),
                           shift=SHIFT, relu=True)
            tensors = random_tensors(layer, seed=1)
            expected = numpy_conv(tensors["input"], tensors["weight"], tensors["bias"], layer.stride,
                                  layer.pad, layer.shift, layer.relu)
            one = run(layer, config, 1, tensors, expected)
            lh = run(layer, config, None, tensors, expected)
            paper_lh = float(row["gops_latency_hiding"])
            util = lh["gops"] / peak
            best_util = max(best_util, util)
            slowest = max(slowest, (lh["compile_s"], row["label"]))
            exact = one["exact"] and lh["exact"]
            failures += not exact
            shape = f"{layer.h}x{layer.w} {layer.ic}->{layer.oc} k{layer.k} s{layer.stride} p{layer.pad}"
            print(f"{row['label']:<6}{shape:<30}{float(row['gops_no_latency_hiding']):>12.1f}{paper_lh:>10.1f}"
                  f"{one['gops']:>11.1f}{lh['gops']:>9.1f}{util:>7.0%}{lh['gops'] / paper_lh:>8.2f}x  "
                  f"{'yes' if exact else 'NO':<6}{lh['compile_s']:>7.2f}s  {lh['schedule']}")
            sys.stdout.flush()
        print(f"peak utilisation (best layer, latency hiding): {best_util:.0%} of {peak:.1f} GOPS (paper: 88%)")
        verdict = "met" if slowest[0] < COMPILE_TARGET_S else "missed"
        print(f"slowest compile: {slowest[1]} {slowest[0]:.2f} s (target < {COMPILE_TARGET_S:.0f} s a layer: {verdict})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
