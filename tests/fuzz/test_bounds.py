"""Small models that asked the host for gigabytes or minutes before any bound (issue 45, finding
2): a ConstantOfShape, Expand, Pad, Tile or nearest/linear Resize of a few hundred bytes whose
output onnx's shape inference says is gigabytes (numpy was asked for 6-22 GiB), a linear Resize
whose index map was 6 GB, dilated convolutions whose kernel was built whole before it was trimmed
(5.9 GB) or whose zero taps made minutes of work. Each runs ``vdla run`` in a child process of at
most :data:`MEMORY` bytes of address space and must end within :data:`SECONDS` (beyond the CLI's
start-up) with exit status 2 and one error line naming the node and the limit of
vdla_hw/limits.py, or run correctly. A normal small model runs within :data:`MEMORY` (checked
here too), so it is not the address-space limit that refuses them; on the old code the cases ended
in a MemoryError from numpy (or took minutes), not in the limit's refusal.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.fuzz.harness import one_refusal

ROOT = Path(__file__).resolve().parents[2]
VDLA = ROOT / ".venv" / "bin" / "vdla"
# Address space: `vdla run` of a 3 -> 16 channel conv at 32 x 32 ran in 310 MB and failed in 300 MB
# (2 cores; numpy's BLAS maps buffers per thread, so more cores need more); 512 MiB, the issue's
# bound, leaves that room. test_a_small_model_runs_within_the_memory_limit checks it is enough.
MEMORY = 512 << 20
SECONDS = 5.0
STARTUP = 40.0  # the CLI's own start (imports) on a loaded test machine, on top of SECONDS


def _limited():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def vdla_run(model: Path) -> tuple[int, str, str, float]:
    """(exit status, stdout, stderr, seconds) of ``vdla run model`` in a child of at most MEMORY
    bytes, without the disk cache; a child still running after the limit fails the test."""
    env = {**os.environ, "VDLA_CACHE": "off"}
    cmd = [str(VDLA)] if VDLA.exists() else [sys.executable, "-m", "vdla"]
    start = time.monotonic()
    try:
        done = subprocess.run([*cmd, "run", str(model)], capture_output=True, text=True, env=env,
                              timeout=SECONDS + STARTUP, preexec_fn=_limited, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"vdla run {model.name} did not end within {SECONDS + STARTUP} s")
    return done.returncode, done.stdout, done.stderr, time.monotonic() - start


def _save(folder: Path, name: str, nodes, shape, inits=()) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_model(helper.make_graph(nodes, name, [x], [y], list(inits)),
                              opset_imports=[helper.make_opsetid("", 17)])
    path = folder / f"{name}.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def _conv(folder: Path, name: str, shape, dilation: int, pad: int, weight=(64, 64, 3, 3)) -> Path:
    """A conv of a random ``weight`` (64 -> 64 3x3: a 147 kB file) at ``dilation``."""
    w = np.random.default_rng(0).standard_normal(weight).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w"], ["y"], dilations=[dilation, dilation], pads=[pad] * 4, name="conv")
    return _save(folder, name, [node], shape, [numpy_helper.from_array(w, "w")])


def _int64(name: str, values) -> TensorProto:
    return numpy_helper.from_array(np.array(values, np.int64), name)


def _float(name: str, values) -> TensorProto:
    return numpy_helper.from_array(np.array(values, np.float32), name)


# name -> (nodes, input shape, initializers): the hostile models (each a few hundred bytes)
HOSTILE = {
    "ConstantOfShape": ([helper.make_node("ConstantOfShape", ["s"], ["c"], name="big"),
                         helper.make_node("Add", ["x", "c"], ["y"])], [1], [_int64("s", [1, 1, 60000, 60000])]),
    "Expand": ([helper.make_node("Expand", ["x", "s"], ["y"], name="big")], [1, 1, 1, 1],
               [_int64("s", [1, 1, 60000, 60000])]),
    "Pad": ([helper.make_node("Pad", ["x", "p"], ["y"], name="big")], [1, 1, 1, 1],
            [_int64("p", [0, 0, 30000, 30000, 0, 0, 30000, 30000])]),
    "Tile": ([helper.make_node("Tile", ["x", "r"], ["y"], name="big")], [1, 1, 1, 1], [_int64("r", [1, 1, 60000, 60000])]),
    "Resize-nearest": ([helper.make_node("Resize", ["x", "", "s"], ["y"], mode="nearest", name="big")], [1, 1, 2, 2],
                       [_float("s", [1, 1, 20000, 20000])]),
    # a shape computed by Max, which onnx's data propagation does not follow: no inferred shape
    "ConstantOfShape-of-Max": ([helper.make_node("Max", ["s", "k"], ["s2"]),
                                helper.make_node("ConstantOfShape", ["s2"], ["c"], name="big"),
                                helper.make_node("Add", ["x", "c"], ["y"])], [1],
                               [_int64("s", [1, 1, 60000, 1]), _int64("k", [1, 1, 1, 60000])]),
    # onnx's shape inference computes a Range's values (data propagation): refused before it
    "Range": ([helper.make_node("Range", ["a", "b", "d"], ["r"], name="big"), helper.make_node("Cast", ["r"], ["c"], to=1),
               helper.make_node("Add", ["x", "c"], ["y"])], [1], [_int64("a", 0), _int64("b", 3_000_000_000), _int64("d", 1)]),
    "Resize-linear": ([helper.make_node("Resize", ["x", "", "s"], ["y"], mode="linear", name="big")], [1, 1, 2, 2],
                      [_float("s", [1, 1, 20000, 20000])]),
}


@pytest.fixture(scope="module")
def base_seconds(tmp_path_factory):
    """Seconds the CLI takes to start and refuse a missing model (subtracted from the timings)."""
    code, _, err, seconds = vdla_run(tmp_path_factory.mktemp("none") / "missing.onnx")
    assert code == 2, err
    return seconds


def refused(base_seconds, model: Path, words) -> str:
    code, _, err, seconds = vdla_run(model)
    return one_refusal(code, err, seconds, base_seconds, words, SECONDS)


def test_a_small_model_runs_within_the_memory_limit(tmp_path):
    """The limit the hostile cases run under lets a normal model run (so it is not what refuses them)."""
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((16, 3, 3, 3)).astype(np.float32), "w")
    model = _save(tmp_path, "small", [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                                      helper.make_node("Relu", ["c"], ["y"])], [1, 3, 32, 32], [w])
    code, out, err, _ = vdla_run(model)
    assert code == 0 and "bit exact vs the quantized numpy reference: True" in out, err


@pytest.mark.parametrize("op", HOSTILE)
def test_a_gigabyte_output_is_refused_by_the_tensor_limit(base_seconds, tmp_path, op):
    nodes, shape, inits = HOSTILE[op]
    model = _save(tmp_path, op.lower(), nodes, shape, inits)
    assert model.stat().st_size < 300
    refused(base_seconds, model, words=[f"{model.name}: node 'big'", "GiB as float32", "MAX_TENSOR_BYTES"])


@pytest.mark.parametrize("op", ["Expand", "Tile", "Pad"])
def test_a_tensor_just_past_what_a_run_makes_is_refused_at_import(base_seconds, tmp_path, op):
    """A 1 x 1 x 1 x 1 input made into 2897 x 2897 (32.02 MiB): past MAX_TENSOR_BYTES, the most a
    run makes of one tensor within the memory limit (a data-movement op's index map is built at
    import). Under the 128 MiB limit before, 5792 x 5792 ran 21 s in 1.7 GB, and 2897 x 2897 ran
    out of this memory limit in the executor."""
    n = 2897
    args = {"Expand": [_int64("s", [1, 1, n, n])], "Tile": [_int64("s", [1, 1, n, n])],
            "Pad": [_int64("s", [0, 0, 0, 0, 0, 0, n - 1, n - 1])]}[op]
    model = _save(tmp_path, op.lower(), [helper.make_node(op, ["x", "s"], ["y"], name="big")], [1, 1, 1, 1], args)
    refused(base_seconds, model, words=[f"{model.name}: node 'big'", "(1, 1, 2897, 2897) needs 32.02 MiB as float32",
                                        "more than the 32 MiB limit", "MAX_TENSOR_BYTES"])


def test_a_linear_resize_index_map_is_bounded(base_seconds, tmp_path):
    """2x2 -> 2048x2048: the output (16 MiB) is within the tensor limit; its (P, 4) index map
    (128 MiB, and the float64 weights and temporaries: 1.5 GB) is not."""
    node = helper.make_node("Resize", ["x", "", "s"], ["y"], mode="linear", name="big")
    model = _save(tmp_path, "resize", [node], [1, 1, 2, 2], [_float("s", [1, 1, 1024, 1024])])
    refused(base_seconds, model, words=["node 'big'", "2048x2048", "MAX_RESIZE_MAP_BYTES"])


def test_a_dilated_conv_is_sized_from_the_taps_that_read_its_input(base_seconds, tmp_path):
    """Dilation 300 on a 32 x 32 map: only the centre tap reads the input. The old importer built
    the 601 x 601 kernel whole first (64 x 64 x 601 x 601 floats, 5.9 GB); now it runs as the
    1x1 conv it is."""
    model = _conv(tmp_path, "dilated", [1, 64, 32, 32], dilation=300, pad=300)
    assert model.stat().st_size < 150_000
    code, out, err, seconds = vdla_run(model)
    assert code == 0 and "bit exact vs the quantized numpy reference: True" in out, err
    assert seconds - base_seconds < SECONDS, f"took {seconds:.1f} s (start-up {base_seconds:.1f} s)"


def test_a_dilated_conv_past_the_work_bound_is_refused(base_seconds, tmp_path):
    """Dilation 20 on a 128 x 128 map: every tap reads the input, a 41 x 41 kernel (27.5 MB, within
    MAX_KERNEL_BYTES), 113 G multiply-accumulates with the zero taps: refused before calibration
    spends minutes on it."""
    model = _conv(tmp_path, "work", [1, 64, 128, 128], dilation=20, pad=20)
    refused(base_seconds, model, words=["node 'conv'", "G multiply-accumulates", "with its dilation zeros",
                                        "MAX_LAYER_MACS"])


def test_a_dilated_kernel_past_the_tensor_limit_is_refused_before_it_is_built(base_seconds, tmp_path):
    """Dilation 64 on a 128 x 128 map: a 129 x 129 kernel of 64 x 64 channels, 273 MB."""
    model = _conv(tmp_path, "kernel", [1, 64, 128, 128], dilation=64, pad=64)
    refused(base_seconds, model, words=["node 'conv'", "129x129", "MAX_KERNEL_BYTES"])


def test_an_undilated_conv_past_the_work_bound_is_refused(base_seconds, tmp_path):
    """A 1.2 MB 9x9 conv of 64 -> 64 channels at 256 x 256 (its input and output 16 MiB, within the
    tensor limit): 21.7 G multiply-accumulates, minutes of the float reference per image."""
    model = _conv(tmp_path, "wide", [1, 64, 256, 256], dilation=1, pad=4, weight=(64, 64, 9, 9))
    refused(base_seconds, model, words=["node 'conv'", "G multiply-accumulates", "MAX_LAYER_MACS"])


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_a_pooling_window_past_the_work_bound_is_refused(base_seconds, tmp_path, op):
    """A 512 x 512 window over a 4-channel 1024 x 1024 map: 275 G window steps (the references
    loop over the 262,144 taps in Python)."""
    model = _save(tmp_path, op.lower(), [helper.make_node(op, ["x"], ["y"], kernel_shape=[512, 512], name="big")],
                  [1, 4, 1024, 1024])
    refused(base_seconds, model, words=["node 'big'", "G window steps", "MAX_LAYER_MACS"])


def test_a_window_of_many_taps_over_padding_is_refused(base_seconds, tmp_path):
    """A 5000 x 5000 MaxPool over a 1 x 1 input padded by 2500: 4 outputs but 25 M taps, each a
    Python step of the references (WINDOW_TAP_OPS)."""
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[5000, 5000], pads=[2500] * 4, name="big")
    model = _save(tmp_path, "taps", [node], [1, 1, 1, 1])
    refused(base_seconds, model, words=["node 'big'", "5000x5000 kernel", "MAX_LAYER_MACS"])


def _relu_chain(folder: Path, length: int) -> Path:
    """``length`` Relus in a row on a 1 x 3 x 8 x 8 input: each op is cheap, their number is not."""
    nodes = [helper.make_node("Relu", ["x" if i == 0 else f"t{i - 1}"], ["y" if i == length - 1 else f"t{i}"])
             for i in range(length)]
    return _save(folder, f"chain{length}", nodes, [1, 3, 8, 8])


@pytest.mark.parametrize("length, words", [(4097, ["4097 ops after import", "MAX_GRAPH_OPS"]),
                                           (20_000, ["20000 nodes, more than the 16384", "MAX_MODEL_NODES"])])
def test_a_model_of_too_many_ops_is_refused_before_calibration(base_seconds, tmp_path, length, words):
    """Before: every stage of a run cost a millisecond or more per op, so 20,000 Relus (a 0.5 MB
    file) ran bit exact in 52 CPU s (measured on the code before the bounds, load 1-2), and
    100,000 ran 42 s and out of 512 MB. The import's own bound on the file's nodes
    (MAX_MODEL_NODES) and the run's on the imported ops (MAX_GRAPH_OPS) refuse them."""
    refused(base_seconds, _relu_chain(tmp_path, length), words=words)


def test_a_chain_within_the_op_bound_runs(tmp_path):
    """1,000 Relus (a quarter of MAX_GRAPH_OPS): bit exact within the memory limit."""
    code, out, err, _ = vdla_run(_relu_chain(tmp_path, 1000))
    assert code == 0 and "bit exact vs the quantized numpy reference: True" in out, err[-2000:]


@pytest.mark.parametrize("seq, hidden, words", [
    (1 << 20, 1, ["1048576 steps x 1 direction(s)", "MAX_UNROLLED_STEPS"]),
    (64, 1024, ["recurrent weights copied for each of 63 steps", "1008 MiB", "MAX_UNROLLED_WEIGHT_BYTES"]),
])
def test_an_lstm_is_bounded_before_it_is_unrolled(base_seconds, tmp_path, seq, hidden, words):
    """An LSTM unrolls into nodes per step, each step with the recurrent weights: a million steps
    of one feature (a 4 MiB input) would be millions of nodes, 64 steps of a 1024-hidden layer
    (16 MiB of R, given as a ConstantOfShape) a GiB of weights; both are refused before unrolling."""
    shapes = [_int64("ws", [1, 4 * hidden, 1]), _int64("rs", [1, 4 * hidden, hidden])]
    nodes = [helper.make_node("ConstantOfShape", ["ws"], ["W"]), helper.make_node("ConstantOfShape", ["rs"], ["R"]),
             helper.make_node("LSTM", ["x", "W", "R"], ["y"], hidden_size=hidden, name="big")]
    model = _save(tmp_path, "lstm", nodes, [seq, 1, 1], shapes)
    refused(base_seconds, model, words=["node 'big'", *words])
