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

import io
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.fuzz.test_hostile_files import vdla


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
    from compiler.quantize import reference
    from driver import open_device
    from vdla.deploy import build_package, run_package
    from vdla.network import prepare

    path = tmp_path / "m.onnx"
    onnx.save(NAMED[case], str(path))
    p = prepare(str(path))
    files = build_package(p, model="m", arm_library=False, progress=lambda m: None)
    assert len(json.loads(files["placements.json"])) == len(p.q.nodes)
    device = open_device("sim", p.config)
    try:
        _, blobs = run_package(files, device)
    finally:
        device.close()
    got = np.load(io.BytesIO(blobs["output.npy"]), allow_pickle=False)
    assert np.array_equal(got, reference.forward_all(p.q, p.tests[:1])[0])


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
