"""The same answer on every machine: the job's front end (model build, calibration, quantization)
and `vdla run`'s output_sha256 and cycles do not depend on the BLAS thread count, the BLAS
kernels (OpenBLAS's core type) or numpy's SIMD level (docs/onnx.md, "Determinism").

Each configuration runs in its own process (thread counts and kernels are fixed when numpy loads).
"""

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Digests of everything the front end decides, at a resolution where float32 BLAS sums used to
# differ between 1 and 2 OpenBLAS threads (the BatchNorm statistics, hence every scale after them).
FRONT_END = r"""
import hashlib, json, sys
import numpy as np
from onnx import numpy_helper
from compiler.frontend import float_ref, from_model
from compiler.frontend.resnet import build_resnet
from compiler.quantize import reference
from vdla.inputs import synthetic
from vdla.network import TEST_SEED, quantization_report, quantize_model

def digest(*arrays):
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes() if isinstance(a, np.ndarray) else repr(a).encode())
    return h.hexdigest()[:16]

resolution = int(sys.argv[1])
model = build_resnet(18, resolution)
out = {"model": digest(*(numpy_helper.to_array(t) for t in model.graph.initializer))}
graph = from_model(model, "resnet18")
q = quantize_model(graph, "resnet18")
out["fracs"] = digest(sorted(q.fracs.items()), sorted(q.zps.items()), sorted(q.scales.items()))
out["nodes"] = {n.name: digest(*(v for k in sorted(n.attrs) for v in (k, n.attrs[k]))) for n in q.nodes}
tests = synthetic(graph.shapes[graph.input], 2, TEST_SEED)
out["float_output"] = digest(float_ref.forward(graph, tests.array))
out["int8_output"] = digest(reference.forward(q, tests.array))
report = quantization_report(graph, q, tests)
out["report"] = digest(sorted(report["per_layer_error"].items()), report["output_rms_error"])
print(json.dumps(out))
"""


def configurations() -> dict[str, dict[str, str]]:
    """Environments that change how a BLAS or numpy float sum is ordered."""
    def threads(n):
        return {k: str(n) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}

    configs = {"1 thread": threads(1), "2 threads": threads(2)}
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    if platform.machine() in ("x86_64", "AMD64") and "X86_V3" in __cpu_dispatch__ and __cpu_features__.get("X86_V3"):
        # other kernels: OpenBLAS's Sandybridge GEMM (no FMA), numpy's loops without AVX2 (X86_V3)
        configs["other kernels"] = {**threads(2), "OPENBLAS_CORETYPE": "Sandybridge",
                                    "NPY_DISABLE_CPU_FEATURES": "X86_V3"}
    return configs


def run_in(env: dict[str, str], *argv: str, root: Path = ROOT) -> str:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("OPENBLAS_", "OMP_", "MKL_", "NPY_"))}
    full.update(env, PYTHONPATH=str(root), VDLA_CACHE="off")
    done = subprocess.run([sys.executable, *argv], cwd=root, env=full, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def front_end(env: dict[str, str], resolution: int, root: Path = ROOT) -> dict:
    return json.loads(run_in(env, "-c", FRONT_END, str(resolution), root=root))


def test_front_end_is_the_same_for_any_blas_threads_and_kernels():
    results = {name: front_end(env, 32) for name, env in configurations().items()}
    first_name, first = next(iter(results.items()))
    for name, result in results.items():
        differing = [k for k in first if result[k] != first[k]]
        nodes = [n for n in first["nodes"] if result["nodes"][n] != first["nodes"][n]]
        assert not differing, f"{name} differs from {first_name} in {differing} (nodes {nodes[:5]})"


@pytest.mark.slow
def test_run_output_sha256_and_cycles_are_the_same_for_any_blas_threads():
    def run(env):
        report = json.loads(run_in(env, "-m", "vdla", "run", "resnet18", "--resolution", "64", "--json"))
        return report["output_sha256"], [layer["cycles"] for layer in report["layers"]], report["quantization"]

    configs = configurations()
    one, two = run(configs["1 thread"]), run(configs["2 threads"])
    assert one[0] == two[0] and one[1] == two[1]
    assert one[2] == two[2]  # the quantization report too (errors, top-1 agreement)
