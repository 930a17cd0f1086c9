"""A deployment package's graph is checked before any kernel runs (issue 22, item 2): hostile
indices, sizes and attributes end in one clear refusal naming the node, the field and the value,
never in heap bytes in the output or a crashed server. The reproductions run the server's path
(``vdla.deploy.run_package`` on a sim device) in a subprocess, where a crash fails the test."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import compiler.cpu_fallback.spec as kernel_spec
from compiler.network.cpu_ops import NodeError, check_graph
from compiler.network.package import graph_from_files, run_files
from compiler.quantize import reference
from compiler.quantize.qgraph import QNode
from driver import open_device
from tests.compiler.network import tiny_packages as tiny

ROOT = Path(__file__).resolve().parents[3]


def _served(*args):
    """What the server's run of a reproduction answers, from a subprocess (a crash is a failure)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "tests.compiler.network.tiny_packages", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"the run died (status {proc.returncode}): {proc.stderr[-2000:]}"
    return json.loads(proc.stdout)


@pytest.mark.parametrize("first", [16, 2**31 - 1])
def test_gather_index_past_the_input_is_refused_not_read(first):
    """Indices 16..4111 on a 16-byte input returned 4 KB of the server's heap; 2**31-1 killed it."""
    answer = _served("gather", str(first))
    assert "output" not in answer, "the package's gather read outside its input"
    assert answer["refused"] == "NodeError" and answer["vdla_error"]
    assert answer["message"] == (f"node 'g' (gather): index: holds {first} at element 0, outside "
                                 "[-2147483648, 15] (4096 such elements)")


def test_gather_within_the_input_runs_as_the_reference():
    answer = _served("gather", str(16 - 4096))  # indices -4080 .. 15: fill, then the input
    q = tiny.gather_graph(16 - 4096)
    want = reference.forward(q, np.full(q.shapes["x"], 1.0, dtype=np.float32))
    assert answer["output"] == want.reshape(-1).tolist() and answer["output"][-16:] == [16] * 16


@pytest.fixture(scope="module")
def device():
    dev = open_device("sim", tiny.CONFIG)
    yield dev
    dev.close()


def _refusal(q, device, x=None):
    x = np.ones(q.shapes["x"], np.float32) if x is None else x
    with pytest.raises(NodeError) as info:
        run_files(tiny.package(q, x, sealed=False), device)
    return str(info.value)


def _one(op, attrs, out_shape, x_shape=(1, 2, 4, 4), inputs=("xq",)):
    return tiny.graph(x_shape, [QNode("n", op, list(inputs), "y", attrs)], {"y": out_shape})


def _conv(**changes):
    attrs = {"weight": np.ones((3, 2, 3, 3), np.int8), "bias": np.zeros(3, np.int32), "stride": (1, 1),
             "pad": (1, 1, 1, 1), "groups": 1, "pad_value": 0, "shift": 2, "lo": -128, "hi": 127, "wide": False}
    return _one("conv", {**attrs, **changes}, (1, 3, 4, 4))


def test_a_valid_conv_package_runs(device):
    q = _conv()
    x = np.linspace(-2, 2, 32, dtype=np.float32).reshape(1, 2, 4, 4)
    _, out = run_files(tiny.package(q, x, sealed=False), device)
    assert np.array_equal(np.load(__import__("io").BytesIO(out["output.npy"])), reference.forward(q, x))


@pytest.mark.parametrize("changes, message", [
    ({"shift": np.array([1, 2, 40], np.int64)}, "node 'n' (conv): shift: holds 40, outside [0, 31]"),
    ({"weight": np.ones((3, 2, 3, 3), np.int16)}, "node 'n' (conv): weight: an array of int16, not int8"),
    ({"bias": np.zeros(4, np.int32)}, "node 'n' (conv): bias: int32 (4,), the kernel takes int32 (3,)"),
    ({"stride": (1, 65)}, "node 'n' (conv): attributes: conv2d: stride_w=65 is more than the 64"),
    ({"stride": (1, 2**31)}, "conv2d: parameter stride_w=2147483648 is out of range [1, 2147483647]"),
    ({"stride": (1,)}, "node 'n' (conv): stride: (1,) is not 2 integers"),
    ({"wide": 1}, "node 'n' (conv): wide: 1 is not a boolean"),
    ({"groups": 1.5}, "node 'n' (conv): groups: 1.5 is not an integer"),
    ({"weight": np.ones((3, 2, 1, 65), np.int8), "pad": (0, 0, 0, 0)}, "conv2d: kw=65 is more than the 64"),
])
def test_conv_attributes_are_checked_before_running(device, changes, message):
    assert message in _refusal(_conv(**changes), device)


def test_a_kernel_writing_other_than_the_declared_output_is_refused(device):
    """A gather declared (1, 4096) whose kernel writes 8 bytes: nothing would fill the rest."""
    node = QNode("g", "gather", ["xq"], "y", {"index": np.zeros(8, np.int32), "fill": np.zeros(8, np.int8),
                                              "shape": (1, 8)})
    q = tiny.graph((1, 16), [node], {"y": (1, 4096)})
    assert _refusal(q, device) == "node 'g' (gather): output: its kernel writes (1, 8), the graph declares (1, 4096)"


@pytest.mark.parametrize("op, attrs, out_shape, message", [
    ("avgpool2d", {"kernel": (2, 2), "stride": (2, 2), "pad": (0, 0, 0, 0), "ceil": (0, 0), "pad_value": 0, "up": 0,
                   "lo": -128, "hi": 127, "count": np.zeros((2, 2), np.int32), "add": np.zeros((2, 2), np.int32)},
     (1, 2, 2, 2), "node 'n' (avgpool2d): count: holds 0 at element 0, outside [1, 4] (4 such elements)"),
    ("softmax", {"axis": 3, "table": np.zeros(256, np.int32)}, (1, 2, 4, 4),
     "node 'n' (softmax): table: holds 0 as its last entry (exp(0)), below 1"),
    ("softmax", {"axis": 3, "table": np.full(256, 2**20, np.int64)}, (1, 2, 4, 4),
     "node 'n' (softmax): table: holds 1048576 at element 0, outside [0, 65536] (256 such elements)"),
    ("softmax", {"axis": 4, "table": np.ones(256, np.int32)}, (1, 2, 4, 4),
     "node 'n' (softmax): axis: 4 is not an axis of its 4-D input"),
    ("concat", {"axis": -1, "shifts": (0,), "zps": (0,), "zp": 0}, (1, 2, 4, 4),
     "node 'n' (concat): axis: -1 is not an axis of its 4-D input"),
    ("lut", {"table": np.zeros(255, np.int8)}, (1, 2, 4, 4),
     "node 'n' (lut): table: int8 (255,), the kernel takes int8 (256,)"),
    ("gather", {"index": np.array([0, 2**32], np.int64), "fill": np.zeros(2, np.int8), "shape": (1, 2)}, (1, 2),
     "node 'n' (gather): index: holds 4294967296, outside [-2147483648, 2147483647]"),
    ("maxpool", {"kernel": (3, 3), "stride": (1, 1), "pad": (3, 0, 0, 0)}, (1, 2, 5, 2),
     "maxpool2d: a window lies entirely in the padding"),
    ("reshape", {"shape": (1, 64)}, (1, 64), "node 'n' (reshape): shape: reshapes [(1, 2, 4, 4)] to (1, 64)"),
    ("muladd", {"mul": np.ones((2, 4, 4), np.int32), "add": np.ones((2, 4, 4), np.int32), "shift": 32, "lo": -128,
                "hi": 127}, (1, 2, 4, 4), "node 'n' (muladd): attributes: muladd: parameter shift=32"),
    ("frobnicate", {}, (1, 2, 4, 4), "node 'n' (frobnicate): op: no CPU kernel for op 'frobnicate'"),
])
def test_hostile_attributes_are_refused_naming_node_and_field(device, op, attrs, out_shape, message):
    assert message in _refusal(_one(op, attrs, out_shape), device)


def test_an_add_of_two_sizes_is_refused(device):
    nodes = [QNode("h", "gather", ["xq"], "half", {"index": np.zeros(16, np.int32), "fill": np.zeros(16, np.int8),
                                                    "shape": (1, 16)}),
             QNode("n", "add", ["xq", "half"], "y", {"a_shift": 0, "b_shift": 0, "shift": 0, "offset": 0, "lo": -128,
                                                      "hi": 127})]
    q = tiny.graph((1, 32), nodes, {"half": (1, 16), "y": (1, 32)})
    assert _refusal(q, device) == "node 'n' (add): input 'b': shape (1, 16) does not have the 32 elements the kernel takes"


def test_cpu_ops_beyond_the_work_bound_are_refused_before_running(device, monkeypatch):
    monkeypatch.setattr(kernel_spec, "MAX_CPU_KERNEL_OPS", 300)
    message = _refusal(_conv(), device)
    assert message.startswith("node 'n' (conv): work: conv2d: one call does ") and "more than the 300 " in message


def test_the_work_bound_applies_to_cpu_ops_only(monkeypatch):
    """An op on the accelerator is not run by a CPU kernel: its CPU spec only models its time."""
    graph = graph_from_files(tiny.package(_conv(), np.ones((1, 2, 4, 4), np.float32), sealed=False))
    monkeypatch.setattr(kernel_spec, "MAX_CPU_KERNEL_OPS", 300)
    check_graph(graph, cpu_nodes={"q"})
    with pytest.raises(NodeError, match="work"):
        check_graph(graph, cpu_nodes={"q", "n"})


def test_declared_shapes_must_be_the_ones_the_reference_gives(device):
    """Found by the fuzz target: a dense declared (3, 1) instead of (1, 3), and a reshape whose
    attribute is not its declared output, ran with the kernels' element order but another shape
    than the numpy reference's."""
    dense = {"weight": np.ones((3, 16), np.int8), "bias": np.zeros(3, np.int32), "shift": 0, "lo": -128, "hi": 127,
             "wide": False}
    q = tiny.graph((1, 16), [QNode("n", "dense", ["xq"], "y", dense)], {"y": (3, 1)})
    assert _refusal(q, device) == "node 'n' (dense): output: its kernel writes (1, 3), the graph declares (3, 1)"
    q = _one("reshape", {"shape": (1, 2, 16)}, (1, 32))
    assert _refusal(q, device) == "node 'n' (reshape): shape: (1, 2, 16) is not the declared output (1, 32)"


def test_constants_keep_the_shape_the_reference_reads(device):
    """Found by the fuzz target: a 0-D bias of a one-channel conv became (1,) on the way to the
    kernel (np.ascontiguousarray); a muladd's mul of another shape and a 2-D gather index were
    flattened, where the numpy reference broadcasts them (or fails)."""
    one = {"weight": np.ones((1, 2, 1, 1), np.int8), "bias": np.array(5, np.int32), "stride": (1, 1),
           "pad": (0, 0, 0, 0), "groups": 1, "pad_value": 0, "shift": 0, "lo": -128, "hi": 127, "wide": False}
    assert _refusal(_one("conv", one, (1, 1, 4, 4)), device) == \
        "node 'n' (conv): bias: int32 (), the kernel takes int32 (1,)"
    muladd = {"mul": np.ones((4, 2, 4), np.int32), "add": np.ones((2, 4, 4), np.int32), "shift": 0, "lo": -128,
              "hi": 127}
    assert _refusal(_one("muladd", muladd, (1, 2, 4, 4)), device) == \
        "node 'n' (muladd): mul: shape (4, 2, 4) is not one sample's (2, 4, 4)"
    gather = {"index": np.zeros((2, 3), np.int32), "fill": np.zeros(6, np.int8), "shape": (1, 6)}
    assert _refusal(_one("gather", gather, (1, 6)), device) == \
        "node 'n' (gather): index: shape (2, 3) is not one-dimensional"
