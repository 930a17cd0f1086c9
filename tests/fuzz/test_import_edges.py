"""The importer's last robustness gaps (issue 45, found after round three's fixes).

Names (node and value names the model chooses): ONNX allows two nodes of one name, and a model
may name a node ``x.quantize`` or a value ``x_q``, the names the quantizer made up for the
input's quantization. Placement, calibration (fused activations, tap means), bundle keys and a
package's ``graph.json`` key on node names, so the old code ended in an internal error (four
nodes named ``c``: ``KeyError``; a value ``x_q``: ``StopIteration``), a package no device loads
("node 'c' repeats a name") or, quietly, another network (two convs named ``c`` shared their
calibration statistics: a different output). Now the importer makes node names distinct
(``compiler.frontend.graph.unique_names``: ``c``, ``c~2``) and every name made up takes one the
model does not use (``fresh_name``); the network runs as the same model with distinct names,
bit for bit.
"""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.fuzz.test_bounds import base_seconds, refused, vdla_run  # noqa: F401 (base_seconds: a fixture)
from tests.fuzz.test_hostile_files import vdla
from tests.fuzz.test_names_and_values import assert_package_runs_exact


def chain(names, values=("a", "r", "b")) -> onnx.ModelProto:
    """x (1x8x8x8) -> Conv ``names[0]`` -> Relu ``names[1]`` -> Conv ``names[2]`` -> Sigmoid
    ``names[3]`` -> y; ``values`` names the three values between them."""
    rng = np.random.default_rng(0)
    w1, w2 = ((rng.normal(size=(8, 8, 3, 3)) * 0.2).astype(np.float32) for _ in range(2))
    a, r, b = values
    nodes = [helper.make_node("Conv", ["x", "w1"], [a], name=names[0], pads=[1] * 4),
             helper.make_node("Relu", [a], [r], name=names[1]),
             helper.make_node("Conv", [r, "w2"], [b], name=names[2], pads=[1] * 4),
             helper.make_node("Sigmoid", [b], ["y"], name=names[3])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])],
                              [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)  # onnx takes every one of these models
    return model


DISTINCT = chain(["c1", "r1", "c2", "s"])
NAMED = {  # the same network under names that collide with each other or with the quantizer's
    "two-convs-c": chain(["c", "r1", "c", "s"]),
    "four-nodes-c": chain(["c", "c", "c", "c"]),
    "conv-x.quantize": chain(["x.quantize", "r1", "c2", "s"]),
    "last-x.quantize": chain(["c1", "r1", "c2", "x.quantize"]),
    "value-x_q": chain(["c1", "r1", "c2", "s"], values=("a", "x_q", "b")),
    "conv-c~2-after-c": chain(["c", "r1", "c", "c~2"]),
}


def _quantized(model: onnx.ModelProto):
    from compiler.frontend import from_model
    from vdla.network import quantize_model

    graph = from_model(model, "m.onnx")
    return graph, quantize_model(graph, "m.onnx")


@pytest.mark.parametrize("case", sorted(NAMED))
def test_colliding_names_quantize_to_the_network_of_distinct_names(case):
    """Every node name distinct after import and after quantization, and the int8 network's
    outputs those of the same model with distinct names, bit for bit."""
    from compiler.quantize import reference
    from vdla.network import synthetic

    graph, q = _quantized(NAMED[case])
    _, want = _quantized(DISTINCT)
    assert len({n.name for n in graph.nodes}) == len(graph.nodes)
    assert len({n.name for n in q.nodes}) == len(q.nodes)
    assert len({n.output for n in q.nodes}) == len(q.nodes)
    inputs = synthetic(graph.shapes[graph.input], 2, 7).array
    got, expected = reference.forward_all(q, inputs), reference.forward_all(want, inputs)
    assert len(got) == len(expected) and all(np.array_equal(g, e) for g, e in zip(got, expected))


def test_a_duplicate_name_becomes_name_tilde_k_and_made_up_names_avoid_the_model_s():
    graph, q = _quantized(NAMED["conv-c~2-after-c"])
    assert [n.name for n in graph.nodes] == ["c", "r1", "c~3", "c~2"]  # the model's own 'c~2' keeps its name
    _, q = _quantized(NAMED["conv-x.quantize"])
    assert q.nodes[0].op == "quantize" and q.nodes[0].name == "x.quantize~2" and q.nodes[1].name == "x.quantize"
    _, q = _quantized(NAMED["value-x_q"])
    assert q.nodes[0].output == "x_q~2"


@pytest.mark.parametrize("case", ["two-convs-c", "conv-x.quantize"])
def test_package_of_colliding_names_loads_and_runs_bit_exact(case, tmp_path):
    """A package (graph.json keyed by node name) of such a model: the old code built one the
    package check refused ("node 'c' repeats a name"); now a sim device runs it, bit exact."""
    from vdla.deploy import build_package
    from vdla.network import prepare

    path = tmp_path / "m.onnx"
    onnx.save(NAMED[case], str(path))
    p = prepare(str(path))
    files = build_package(p, model="m", arm_library=False, progress=lambda m: None)
    assert len(json.loads(files["placements.json"])) == len(p.q.nodes)
    assert_package_runs_exact(files, p)


@pytest.mark.slow  # two CLI runs: about 15 s under load
def test_vdla_run_of_four_nodes_named_c_gives_the_distinct_model_s_output(tmp_path):
    """Old code: 'vdla: internal error: KeyError: 'y''. Now exit 0, bit exact, and the output's
    SHA-256 that of the model with distinct names."""
    sums = []
    for name, model in (("dup", NAMED["four-nodes-c"]), ("ref", DISTINCT)):
        path = tmp_path / f"{name}.onnx"
        onnx.save(model, str(path))
        code, err, _ = vdla("run", path, "--json", "--output", tmp_path / f"{name}.npy")
        assert code == 0 and "vdla: error" not in err, err
        sums.append(np.load(tmp_path / f"{name}.npy").tobytes())
    assert sums[0] == sums[1]


# --- a bad axis of a linear Resize is refused, not wrapped ----------------------------------
def _resize(axes=None, scales=(2, 2), opset=18) -> onnx.ModelProto:
    """x (1x2x4x4) -> linear Resize 'up' by constant ``scales`` over ``axes``."""
    attrs = {} if axes is None else {"axes": list(axes)}
    node = helper.make_node("Resize", ["x", "", "s"], ["y"], mode="linear", name="up", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.array(scales, np.float32), "s")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("axes, words", [([6, 7], "axes entry 6 is outside [-4, 3]"),
                                         ([2, -5], "axes entry -5 is outside [-4, 3]"),
                                         ([3, -1], "name an axis more than once")])
def test_a_linear_resize_refuses_an_axis_it_would_have_wrapped(axes, words):
    """The importer's own reading of ``axes`` (old: ``% 4``, so 6 and 7 were H and W): given the
    node onnx accepted with axes [2, 3], the same node with ``axes`` is one ModelError naming it
    (onnx's shape inference refuses such axes too, but the importer does not lean on it)."""
    from compiler.frontend.graph import ModelError
    from compiler.frontend.onnx_import import _Importer

    model = _resize(axes=[2, 3])
    importer = _Importer(model, "m.onnx")
    node = importer.todo[0]
    importer.op_Resize(node, {"mode": b"linear", "axes": [2, 3]})  # the node as given imports
    with pytest.raises(ModelError) as err:
        importer.op_Resize(node, {"mode": b"linear", "axes": list(axes)})
    assert str(err.value).startswith("m.onnx: node 'up' (Resize): ") and words in str(err.value), str(err.value)


# --- one source for the tensor limit's check and wording -----------------------------------
def test_the_graph_s_tensor_check_is_the_import_s_bound_and_wording():
    """vdla.network's check of an imported graph (after import: a built-in model's or one an
    import step made) is compiler.frontend.fold's, with the same bound and wording as the
    import's refusal of a model's value (only 'tensor'/'value' and the advice differ)."""
    from compiler.frontend import fold
    from compiler.frontend.graph import Graph, ModelError, Node
    from vdla import network
    from vdla_hw.limits import MAX_TENSOR_BYTES

    assert network.check_sizes is fold.check_sizes
    edge = MAX_TENSOR_BYTES // 4
    ok = Graph("g", "x", ("y",), [Node("r", "relu", ["x"], "y")], {"x": (1, edge), "y": (1, edge)})
    assert fold.check_sizes(ok, "m") is ok
    big = Graph("g", "x", ("y",), [Node("r", "relu", ["x"], "y")], {"x": (1, edge), "y": (1, edge + 1)})
    with pytest.raises(ModelError) as err:
        fold.check_sizes(big, "m")
    value = fold.tensor_limit("y", (1, edge + 1), 4 * (edge + 1))
    assert str(err.value) == "m: " + value.replace("value 'y'", "tensor 'y'", 1) + "; use a smaller input"
    assert "MAX_TENSOR_BYTES" in value


# --- Pad and Resize whose pads, scales or sizes are computed in the graph --------------------
# Max of two initializers: a constant onnx's data propagation does not follow, so the whole
# model's shape inference gives the Pad or Resize (and everything after it) no shape. The old
# importer ran the node on numbered inputs before looking at its shape (numpy asked for
# 27-191 GiB), folded a constant one unbounded (13-54 GiB), and refused the small ones ('no static
# shape'). Now the node's shape is inferred alone once folding made its inputs constant
# (compiler.frontend.fold.node_shapes), checked against MAX_TENSOR_BYTES before anything of it
# is allocated, and the network after it imports.
def _i64(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def _f32(name, values):
    return numpy_helper.from_array(np.array(values, np.float32), name)


def _max(out, name, values, neutral):
    """``out`` = Max(``name``, a neutral constant): ``values``, computed in the graph."""
    make = _i64 if isinstance(values[0], int) else _f32
    return [helper.make_node("Max", [name, name + "_k"], [out])], [make(name, values), make(name + "_k", [neutral] * len(values))]


def _model(nodes, inits, shape) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def computed(op: str, values, on_constant: bool = False, mode: str = "nearest") -> onnx.ModelProto:
    """x -> ``op`` 'big' (Pad by pads, Resize by scales or sizes: ``values`` computed by a Max)
    -> y; ``on_constant``: the node pads or resizes a constant (folded), added to x."""
    data = "c" if on_constant else "x"
    if op == "Pad":
        pre, inits = _max("p", "pads", values, 0)
        node = helper.make_node("Pad", [data, "p"], ["t"], name="big")
    else:
        pre, inits = _max("s", "scales" if op == "Resize" else "sizes", values, 1 if op == "Resize" else 1)
        ins = [data, "", "s"] if op == "Resize" else [data, "", "", "s"]
        node = helper.make_node("Resize", ins, ["t"], name="big", mode=mode)
    if on_constant:
        inits.append(_f32("c", np.ones((1, 1, 2, 2))))
        return _model([*pre, node, helper.make_node("Add", ["x", "t"], ["y"], name="add")], inits, [1, 1, 2, 2])
    return _model([*pre, node, helper.make_node("Relu", ["t"], ["y"], name="relu")], inits, [1, 1, 2, 2])


HUGE = {  # each asks for gigabytes (13-191 GiB) through a computed constant
    "Pad": computed("Pad", [0, 0, 30000, 30000, 0, 0, 30000, 30000]),
    "Resize-scales-nearest": computed("Resize", [1.0, 1.0, 30000.0, 30000.0]),
    "Resize-scales-linear": computed("Resize", [1.0, 1.0, 30000.0, 30000.0], mode="linear"),
    "Resize-sizes": computed("Resize-sizes", [1, 1, 80000, 80000]),
    "Pad-of-a-constant": computed("Pad", [0, 0, 30000, 30000, 0, 0, 30000, 30000], on_constant=True),
    "Resize-of-a-constant": computed("Resize", [1.0, 1.0, 30000.0, 30000.0], on_constant=True),
}
SMALL = {  # the same nodes at sizes that fit: imported, computing what onnx's reference does
    "Pad": computed("Pad", [0, 0, 1, 2, 0, 0, 2, 1]),
    "Resize-scales-nearest": computed("Resize", [1.0, 1.0, 2.0, 3.0]),
    "Resize-scales-linear": computed("Resize", [1.0, 1.0, 2.0, 3.0], mode="linear"),
    "Resize-sizes": computed("Resize-sizes", [1, 1, 5, 3], mode="linear"),
    "Pad-of-a-constant": computed("Pad", [0, 0, 0, 0, 0, 0, 0, 0], on_constant=True),
}


@pytest.mark.parametrize("case", sorted(SMALL))
def test_computed_pads_scales_and_sizes_fold_and_import(case):
    from onnx.reference import ReferenceEvaluator

    from compiler.frontend import float_ref, from_model

    model = SMALL[case]
    graph = from_model(model, "m.onnx")
    x = np.random.default_rng(3).normal(size=graph.shapes[graph.input]).astype(np.float32)
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    got = float_ref.forward(graph, x)
    assert got.shape == want.shape and np.allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", sorted(HUGE))
def test_computed_pads_scales_and_sizes_past_the_tensor_limit_are_refused_unallocated(case):
    """One ModelError naming the node and MAX_TENSOR_BYTES, with at most a few MB allocated
    (tracemalloc sees numpy's buffers; the old code asked for 13-191 GiB)."""
    from compiler.frontend import from_model
    from compiler.frontend.graph import ModelError
    from tests.fuzz.harness import outcome

    kind, message = outcome(from_model, HUGE[case], "m.onnx", errors=(ModelError,), memory=64 << 20)
    assert kind == "error" and ("node 'big' (Resize)" in message or "node 'big' (Pad)" in message), message
    assert "GiB as float32" in message and "MAX_TENSOR_BYTES" in message, message


@pytest.mark.parametrize("case", ["Pad", "Resize-scales-linear", "Resize-of-a-constant"])
def test_vdla_run_refuses_a_computed_gigabyte_pad_or_resize_in_one_line(case, tmp_path, base_seconds):
    """The CLI in 512 MiB of address space (tests/fuzz/test_bounds.py's child): exit 2, one line
    naming the node and the limit, within its time bound."""
    path = tmp_path / f"{case.lower()}.onnx"
    onnx.save(HUGE[case], str(path))
    refused(base_seconds, path, words=[f"{path.name}: node 'big'", "GiB as float32", "MAX_TENSOR_BYTES"])


@pytest.mark.slow  # a whole run: about 10 s under load
def test_vdla_run_of_a_computed_pad_and_resize_runs_bit_exact(tmp_path):
    pre_p, inits_p = _max("p", "pads", [0, 0, 1, 2, 0, 0, 2, 1], 0)
    pre_s, inits_s = _max("s", "scales", [1.0, 1.0, 2.0, 2.0], 1.0)
    w = (np.random.default_rng(4).normal(size=(8, 3, 3, 3)) * 0.2).astype(np.float32)
    nodes = [*pre_p, *pre_s, helper.make_node("Pad", ["x", "p"], ["t"], name="pad", mode="reflect"),
             helper.make_node("Conv", ["t", "w"], ["c"], name="conv"), helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Resize", ["r", "", "s"], ["y"], name="up", mode="linear")]
    path = tmp_path / "m.onnx"
    onnx.save(_model(nodes, [*inits_p, *inits_s, _f32("w", w)], [1, 3, 16, 16]), str(path))
    code, out, err, _ = vdla_run(path)
    assert code == 0 and "bit exact vs the quantized numpy reference: True" in out, err


# --- memory after import: a set of inputs and the quantization report -----------------------
# A Relu of 1 x 1 x 5792 x 5792 passes the import's bounds (its input and output are just under
# MAX_TENSOR_BYTES) and needed more than 4 GB after calibration: the quantization report kept
# every test input's output twice as float64 and compared them whole (45 times a tensor's bytes
# for 4 test inputs, growing with their number), and a set of synthetic inputs had no bound.
def _relu(side: int) -> onnx.ModelProto:
    node = helper.make_node("Relu", ["x"], ["y"], name="r")
    return _model([node], [], [1, 1, side, side])


@pytest.mark.parametrize("count", [4, 8])
def test_the_quantization_report_holds_one_input_s_values_not_every_output(count):
    """Peak allocation of quantization_report on a 4 MiB Relu: at most 10 times the tensor
    whatever the number of test inputs (old code: 45 times for 4 inputs, 87 for 8)."""
    import tracemalloc

    from compiler.frontend import from_model
    from vdla.network import quantization_report, quantize_model, synthetic

    graph = from_model(_relu(1024), "m.onnx")
    q = quantize_model(graph, "m.onnx", calibration=1)
    tests = synthetic(graph.shapes[graph.input], count, 2)
    tensor = 4 * 1024 * 1024
    tracemalloc.start()
    try:
        report = quantization_report(graph, q, tests)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 10 * tensor, f"{peak / tensor:.1f} times the tensor"
    assert report["test_inputs"] == count and 0 < report["output_relative_error"] < 0.05


def test_the_report_s_figures_are_the_whole_comparison_s():
    """The errors summed as they come equal (to float64 rounding) those of the outputs compared
    whole, and a classifier's top-1 agreement is the share of equal argmaxes."""
    from compiler.frontend import float_ref, from_model
    from compiler.quantize import reference
    from vdla.network import quantization_report, quantize_model, synthetic

    rng = np.random.default_rng(5)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1] * 4),
             helper.make_node("GlobalAveragePool", ["c"], ["p"], name="pool"),
             helper.make_node("Flatten", ["p"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "g"], ["y"], name="fc", transB=1)]
    model = _model(nodes, [_f32("w", rng.normal(size=(8, 3, 3, 3)) * 0.3), _f32("g", rng.normal(size=(10, 8)))],
                   [1, 3, 16, 16])
    graph = from_model(model, "m.onnx")
    q = quantize_model(graph, "m.onnx")
    tests = synthetic(graph.shapes[graph.input], 6, 2)
    report = quantization_report(graph, q, tests)
    want = float_ref.forward(graph, tests.array).astype(np.float64)
    got = q.dequantize(q.outputs[0], reference.forward_all(q, tests.array)[0]).astype(np.float64)
    rms = np.sqrt(((got - want) ** 2).mean())
    assert np.isclose(report["output_rms_error"], rms, rtol=1e-12)
    assert np.isclose(report["output_relative_error"], rms / np.sqrt((want ** 2).mean()), rtol=1e-12)
    assert report["top1_agreement"] == float((want.argmax(axis=1) == got.argmax(axis=1)).mean())


# The run of such a Relu (issue 45: 2.1 GB peak RSS and 22.7 s for 5792 x 5792): inputs made as
# read, no whole-tensor float64 temporaries, and RUN_MAX_INPUT_BYTES / RUN_MAX_MADE_BYTES
# (vdla_hw/limits.py) refusing, before any input is made, what would not fit 512 MB and 5 s.
MEASURED = r"""
import json, resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True, stdin=subprocess.DEVNULL)
use = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps([done.returncode, done.stdout, done.stderr, use.ru_maxrss * 1024, use.ru_utime + use.ru_stime]))
"""


def _measured_run(model) -> tuple[int, str, str, int, float]:
    """(exit status, stdout, stderr, peak RSS in bytes of the run and any child of it, CPU
    seconds) of ``vdla run model`` (VDLA_CACHE=off) in a fresh process."""
    import os
    import subprocess
    import sys

    from tests.fuzz.test_bounds import VDLA

    cmd = [str(VDLA)] if VDLA.exists() else [sys.executable, "-m", "vdla"]
    done = subprocess.run([sys.executable, "-c", MEASURED, *cmd, "run", str(model)], capture_output=True, text=True,
                          env={**os.environ, "VDLA_CACHE": "off"}, check=True, timeout=300)
    return tuple(json.loads(done.stdout))


@pytest.mark.parametrize("side, limit", [(5792, "MAX_TENSOR_BYTES"), (2897, "MAX_TENSOR_BYTES")])
def test_a_relu_too_large_to_run_within_512_mb_and_5_s_is_refused_before_its_inputs(tmp_path, side, limit):
    """5792 x 5792 (128 MiB inputs) and 2897 x 2897 (32.02 MiB, just past the 32 MiB a run makes of
    one tensor): one line, exit 2, naming the limit and the figure, at import, before any input
    is made (peak RSS: the start-up's). RUN_MAX_MADE_BYTES (nine inputs of at most 32 MiB) is
    checked by tests/vdla/test_synthetic_inputs.py."""
    path = tmp_path / "relu.onnx"
    onnx.save(_relu(side), str(path))
    code, _, err, peak, _ = _measured_run(path)
    lines = err.strip().splitlines()
    assert code == 2 and lines[-1].startswith("vdla: error: ") and "Traceback" not in err, err
    assert limit in lines[-1] and f"(1, 1, {side}, {side})" in lines[-1], lines[-1]
    assert peak <= 256 << 20, f"{peak >> 20} MB"


@pytest.mark.slow
@pytest.mark.parametrize("side", [2896, 1024])
def test_a_relu_the_limits_admit_runs_bit_exact_within_512_mb(tmp_path, side):
    """The largest admitted (2896 x 2896: nine 32 MiB inputs, RUN_MAX_MADE_BYTES) and a smaller
    one run bit for bit within 512 MB of peak RSS (any process of the run: the report's child
    too). benchmarks/run_data_path.py prints their CPU seconds (4.2 s for 2896 at load 5)."""
    from vdla_hw.limits import RUN_MAX_MADE_BYTES

    assert 9 * 4 * side * side <= RUN_MAX_MADE_BYTES
    path = tmp_path / "relu.onnx"
    onnx.save(_relu(side), str(path))
    code, out, err, peak, _ = _measured_run(path)
    assert code == 0 and "bit exact vs the quantized numpy reference: True" in out, err
    assert peak <= 512 << 20, f"{peak >> 20} MB"


@pytest.mark.slow
def test_the_largest_admitted_input_with_the_fewest_inputs_runs_within_512_mb(tmp_path):
    """RUN_MAX_INPUT_BYTES (32 MiB: 2896 x 2896 is the largest square within it) with one
    calibration and one test input (the API allows fewer than the CLI's 4 + 4): bit exact, every
    process of the run within 512 MB."""
    import os
    import subprocess
    import sys

    from vdla_hw.limits import RUN_MAX_INPUT_BYTES

    side = 2896
    assert 4 * side * side <= RUN_MAX_INPUT_BYTES < 4 * (side + 1) ** 2
    path = tmp_path / "relu.onnx"
    onnx.save(_relu(side), str(path))
    run = ("import sys; from vdla.network import run_network; "
           "sys.exit(0 if run_network(sys.argv[1], calibration=1, test_inputs=1).bit_exact else 1)")
    done = subprocess.run([sys.executable, "-c", MEASURED, sys.executable, "-c", run, str(path)], capture_output=True,
                          text=True, env={**os.environ, "VDLA_CACHE": "off"}, check=True, timeout=300)
    code, _, err, peak, _ = json.loads(done.stdout)
    assert code == 0, err
    assert peak <= 512 << 20, f"{peak >> 20} MB"


def test_a_set_of_inputs_past_the_limit_is_refused_before_it_is_made():
    """1,000 synthetic inputs of the 5792 x 5792 Relu (125 GiB): one InputError naming the limit,
    nothing allocated (old code: numpy asked for the 125 GiB)."""
    from tests.fuzz.harness import outcome
    from vdla.inputs import InputError
    from vdla.network import synthetic

    kind, message = outcome(synthetic, (1, 1, 5792, 5792), 1000, 1, errors=(InputError,), memory=1 << 20)
    assert kind == "error" and "1000 synthetic inputs of shape (1, 5792, 5792)" in message, message
    assert "MAX_ARRAY_BYTES" in message and "125.0 GiB" in message, message
    assert len(synthetic((1, 1, 5792, 5792), 1, 1).array) == 1  # one fits (4 would: 512 MiB)
