"""Benchmark of the CPU fallback kernels.

Prints (1) host JIT time against a straightforward numpy implementation for the stem conv,
ResNet-18's max pool and a residual add, (2) host compile time per kernel, (3) the code-level
CPU model's MODELLED seconds for ResNet-18's CPU kernels next to the TVM paper's Fig. 21
CPU-only bars (validation, nothing fitted), with the time the analysis took cold and cached.

    .venv/bin/python benchmarks/cpu_fallback.py [--repeat N] [--cpu cortex-a9] [--cpu-baseline int8|fp32]
                                                [--cpu-threads 1|2]
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import compiler.cpu_fallback as cf  # noqa: E402
from compiler.cpu_fallback import resnet18  # noqa: E402
from compiler.cpu_fallback.arm import compile_arm_object  # noqa: E402
from compiler.cpu_fallback.call import timed  # noqa: E402


def numpy_conv2d(inp, wgt, bias, stride, pad, shift, relu):
    """im2col (sliding windows) + int32 matmul + requantization: straightforward numpy."""
    n, c, _, _ = inp.shape
    oc, _, kh, kw = wgt.shape
    padded = np.pad(inp, ((0, 0), (0, 0), (pad, pad), (pad, pad))).astype(np.int32)
    windows = np.lib.stride_tricks.sliding_window_view(padded, (kh, kw), axis=(2, 3))
    windows = windows[:, :, ::stride, ::stride]  # (n, c, oh, ow, kh, kw)
    oh, ow = windows.shape[2:4]
    cols = windows.transpose(0, 2, 3, 1, 4, 5).reshape(n * oh * ow, c * kh * kw)
    acc = cols @ wgt.reshape(oc, -1).astype(np.int32).T + bias
    acc = acc.reshape(n, oh, ow, oc).transpose(0, 3, 1, 2)
    return np.clip(acc >> shift, 0 if relu else -128, 127).astype(np.int8)


def numpy_max_pool(inp, kernel, stride, pad):
    """Pad with -128 and take the max of the kernel*kernel strided views."""
    padded = np.pad(inp, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=-128)
    oh = (inp.shape[2] + 2 * pad - kernel) // stride + 1
    ow = (inp.shape[3] + 2 * pad - kernel) // stride + 1
    out = np.full(inp.shape[:2] + (oh, ow), -128, np.int8)
    for i in range(kernel):
        for j in range(kernel):
            view = padded[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
            np.maximum(out, view, out=out)
    return out


def numpy_add(a, b, a_shift, b_shift, shift, relu):
    total = (a.astype(np.int32) << a_shift) + (b.astype(np.int32) << b_shift)
    return np.clip(total >> shift, 0 if relu else -128, 127).astype(np.int8)


def host_vs_numpy(repeat):
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (1, 3, 224, 224), dtype=np.int8)
    w = rng.integers(-128, 128, (64, 3, 7, 7), dtype=np.int8)
    bias = rng.integers(-5000, 5000, 64, dtype=np.int32)
    pool_in = rng.integers(-128, 128, (1, 64, 112, 112), dtype=np.int8)
    a = rng.integers(-128, 128, (1, 64, 56, 56), dtype=np.int8)
    b = rng.integers(-128, 128, (1, 64, 56, 56), dtype=np.int8)
    cases = [
        ("stem conv 3x224x224 -> 64, 7x7 s2 p3",
         lambda: cf.conv2d(x, w, bias, stride=2, pad=3, shift=9, relu=True),
         lambda: numpy_conv2d(x, w, bias, 2, 3, 9, True)),
        ("max pool 64x112x112, 3x3 s2 p1",
         lambda: cf.max_pool2d(pool_in, kernel=3, stride=2, pad=1),
         lambda: numpy_max_pool(pool_in, 3, 2, 1)),
        ("residual add 64x56x56 (+ReLU, requant)",
         lambda: cf.add(a, b, a_shift=1, shift=1, relu=True),
         lambda: numpy_add(a, b, 1, 0, 1, True)),
    ]
    print("== Host JIT vs straightforward numpy (measured on this machine, best of "
          f"{repeat}) ==")
    print(f"{'kernel':42s} {'JIT ms':>9s} {'numpy ms':>9s} {'speedup':>8s}  same")
    for name, jit_fn, numpy_fn in cases:
        same = np.array_equal(jit_fn(), numpy_fn())  # also compiles the kernel
        t_jit, t_np = timed(jit_fn, repeat=repeat), timed(numpy_fn, repeat=repeat)
        print(f"{name:42s} {t_jit * 1e3:9.3f} {t_np * 1e3:9.3f} {t_np / t_jit:7.1f}x  {same}")


def compile_times():
    workload = resnet18.cpu_workload()
    specs = [workload["layer0"][0], workload["conv"][0], *workload["other"],
             cf.ReluSpec(size=64 * 112 * 112), cf.DequantizeSpec(size=1000, frac=3),
             cf.PackSpec(n=1, c=3, h=224, w=224), cf.UnpackSpec(n=1, c=64, h=56, w=56)]
    specs = list(dict.fromkeys(specs))
    jit = cf.HostJit()
    print("\n== Compile time per kernel (IR generation + O3 + machine code) ==")
    print(f"{'kernel':62s} {'host JIT ms':>11s} {'A9 object ms':>12s}")
    for spec in specs:
        kernel = jit.kernel(spec)
        start = time.perf_counter()
        compile_arm_object([spec])
        arm_s = time.perf_counter() - start
        print(f"{short(spec):62s} {kernel.compile_seconds * 1e3:11.1f} {arm_s * 1e3:12.1f}")


def short(spec):
    text = spec.describe()
    return text if len(text) <= 62 else text[:59] + "..."


def model_predictions(cpu, baseline="int8", threads=1):
    import os
    import tempfile

    from compiler.cpu_fallback.cost import CpuModel, analysis

    model = CpuModel(cpu, baseline=baseline, threads=threads)
    with tempfile.TemporaryDirectory() as cache:
        os.environ[analysis.CACHE_ENV] = cache
        start = time.perf_counter()
        groups = resnet18.cpu_only_seconds(model)
        cold = time.perf_counter() - start
        analysis._memo.clear()
        start = time.perf_counter()
        resnet18.cpu_only_seconds(model)
        warm = time.perf_counter() - start
        paper = resnet18.fig21_cpu_only()
        print(f"\n== {model.basis} (MODELLED, {model.cpu.clock_hz / 1e6:g} MHz) vs TVM paper Fig. 21 "
              "CPU-only bars ==")
        print(f"{'group':10s} {'modelled s':>11s} {'paper s':>8s} {'error':>8s}")
        for group in ("layer0", "conv", "other", "total"):
            print(f"{group:10s} {groups[group]:11.3f} {paper[group]:8.3f} {groups[group] / paper[group] - 1:+8.1%}")
        print("modelled per kernel (other group):")
        for spec in resnet18.cpu_workload()["other"]:
            cost = model.kernel_cost(spec)
            print(f"  {short(spec):62s} {cost.seconds * 1e3:8.3f} ms ({cost.bound}-bound)")
        print(f"analysis of {sum(len(v) for v in resnet18.cpu_workload().values())} kernels: {cold:.1f} s cold, "
              f"{warm:.2f} s from the disk cache")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10, help="timing repetitions (best of)")
    parser.add_argument("--cpu", default="cortex-a9", help="CPU data file to model (cortex-a9, cortex-a53)")
    parser.add_argument("--cpu-baseline", default="int8", choices=("int8", "fp32"),
                        help="kernels that price the CPU ops (fp32: TVM-style FP32 kernels)")
    parser.add_argument("--cpu-threads", type=int, default=1, choices=(1, 2), help="cores per kernel")
    args = parser.parse_args()
    host_vs_numpy(args.repeat)
    compile_times()
    model_predictions(args.cpu, args.cpu_baseline, args.cpu_threads)


if __name__ == "__main__":
    main()
