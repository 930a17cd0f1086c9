"""Refusals naming every unsupported node (compiler.frontend.refusal): unknown op types,
attributes and inputs of every node checked in one pass, grouped by reason, common patterns read
from the graph's structure; readable at 200 nodes (``vdla run --json``: tests/vdla/test_json_errors.py)."""

import re
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.frontend import ModelError, from_model
from compiler.frontend.refusal import UnsupportedNodes, _Graph, pattern


class Net:
    def __init__(self):
        self.nodes, self.inits = [], []
        self.rng = np.random.default_rng(0)

    def init(self, name, value, dtype=np.float32):
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype), name))
        return name

    def op(self, op, inputs, name, outputs=None, **attrs):
        self.nodes.append(helper.make_node(op, inputs, outputs or [name], name=name, **attrs))
        return name

    def conv(self, x, name, c=8, **attrs):
        w = self.init(f"{name}.w", self.rng.standard_normal((c, c, 3, 3)) * 0.1)
        return self.op("Conv", [x, w], name, kernel_shape=[3, 3], pads=[1, 1, 1, 1], **attrs)

    def dilated_pool(self, x, name, d=2):
        return self.op("MaxPool", [x], name, kernel_shape=[3, 3], pads=[d] * 4, dilations=[d, d])

    def model(self, out, shape=(1, 8, 8, 8)):
        graph = helper.make_graph(self.nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                                  [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def fcn_and_attention():
    """A dilated pooling, an LpNormalization, a bicubic Resize, an attention MatMul whose batch
    axes broadcast (by a Transpose and a Slice to one channel of its input) and an Erf: each
    refused for its own reason, none hidden behind the first."""
    n = Net()
    x = n.conv("x", "conv1")
    x = n.dilated_pool(x, "aspp")
    x = n.op("LpNormalization", [x], "norm", axis=1)
    x = n.op("Resize", [x, "", n.init("scales", [1, 1, 2, 2])], "up", mode="cubic")
    x = n.dilated_pool(x, "head")
    k = n.op("Transpose", [x], "keys", perm=[0, 1, 3, 2])
    k = n.op("Slice", [k] + [n.init(f"one_head.{i}", [v], np.int64) for i, v in enumerate((0, 1, 1))], "one_head")
    x = n.op("MatMul", [x, k], "scores")
    return n.model(n.op("Erf", [x], "erf"))


def refusal(model, where: str = "m.onnx") -> UnsupportedNodes:
    with pytest.raises(UnsupportedNodes) as err:
        from_model(model, where)
    return err.value


def test_every_unsupported_node_is_named_with_its_reason():
    err = refusal(fcn_and_attention())
    assert [(r.node, r.op) for r in err.refused] == [("aspp", "MaxPool"), ("norm", "LpNormalization"), ("up", "Resize"),
                                                     ("head", "MaxPool"), ("scores", "MatMul"), ("erf", "Erf")]
    assert str(err) == (
        "m.onnx: 6 nodes cannot be imported (see docs/onnx.md for what is supported): "
        "dilated pooling (dilations [2, 2]) (2 nodes: 'aspp', 'head'); unsupported op LpNormalization (1 node: 'norm'); "
        "Resize mode 'cubic' is not supported (only 'nearest', a copy, and 'linear' over height and width) (1 node: 'up'); attention: MatMul of two computed tensors (1 node: 'scores'); "
        "unsupported op Erf (1 node: 'erf')")
    reasons = {r.node: r.reason for r in err.refused}
    assert reasons["aspp"] == "dilation [2, 2] is not supported"
    assert reasons["scores"] == ("MatMul of two computed tensors of shapes (1, 8, 16, 16) and (1, 1, 16, 16): their "
                                 "batch axes (1, 8) and (1, 1) differ (broadcasting them is not supported)")


def test_a_two_hundred_node_refusal_stays_readable():
    n = Net()
    x = "x"
    for d in range(2, 12):  # ten more reasons, one node each: dilations [2, 2] to [11, 11]
        x = n.dilated_pool(x, f"c{d}", d)
    for i in range(200):
        x = n.op("Erf" if i % 2 else "Sign", [x], f"n{i}")
    err = refusal(n.model(x))
    text = str(err)
    assert len(err.refused) == 210 and len(text) < 700, text
    assert text == ("m.onnx: 210 nodes cannot be imported (see docs/onnx.md for what is supported): unsupported op "
                    "Sign (100 nodes: 'n0', 'n2', 'n4', 'n6', 'n8' and 95 more); unsupported op Erf (100 nodes: 'n1', "
                    "'n3', 'n5', 'n7', 'n9' and 95 more); "
                    + "; ".join(f"dilated pooling (dilations [{d}, {d}]) (1 node: 'c{d}')" for d in range(2, 8))
                    + "; and 4 more reasons (4 nodes)")
    info = err.as_dict()
    assert len(info["nodes"]) == 210 and len(info["groups"]) == 12
    assert info["groups"][0] == {"group": "unsupported op Sign", "count": 100, "nodes": [f"n{i}" for i in range(0, 200, 2)]}


def gate_graph(gate_of):
    """Mul(x, Sigmoid(gate_of(x))) as an onnx node list; the pattern of the Mul."""
    n = Net()
    x = n.conv("x", "conv")
    s = n.op("Sigmoid", [gate_of(n, x)], "sig")
    mul = n.op("Mul", [s, x], "mul")
    model = n.model(mul)
    return pattern(model.graph.node[-1], _Graph(model.graph.node, {t.name for t in model.graph.initializer}))


def squeeze_excitation(n, x):
    pooled = n.op("GlobalAveragePool", [x], "gap")
    hidden = n.op("Relu", [n.op("Conv", [pooled, n.init("fc1", np.ones((2, 8, 1, 1)))], "fc1c")], "fc1r")
    return n.op("Conv", [hidden, n.init("fc2", np.ones((8, 2, 1, 1)))], "fc2c")


@pytest.mark.parametrize("gate_of, want", [
    (lambda n, x: x, "SiLU: Mul(x, Sigmoid(x))"),
    (lambda n, x: n.op("Identity", [x], "same"), "SiLU: Mul(x, Sigmoid(x))"),
    (squeeze_excitation, "squeeze-excitation gate: Mul(x, Sigmoid(f(GlobalAveragePool(x))))"),
    (lambda n, x: n.conv(x, "other"), "gate: Mul(x, Sigmoid(y))"),
], ids=["silu", "silu-through-identity", "squeeze-excitation", "gate"])
def test_mul_patterns_are_read_from_the_graph(gate_of, want):
    """Named by structure, not by the names of the nodes (which say nothing here)."""
    assert gate_graph(gate_of) == want


def test_patterns_need_the_structure():
    n = Net()
    x = n.conv("x", "conv")
    y = n.conv(x, "conv2")
    model = n.model(n.op("Mul", [x, y], "mul"))
    assert pattern(model.graph.node[-1], _Graph(model.graph.node, set())) is None  # no gate: the reason (its shapes) says it all
    conv = helper.make_node("Conv", ["x", "w"], ["y"], name="c", dilations=[1, 1])
    assert pattern(conv, _Graph([conv], {"w"})) is None
    matmul = helper.make_node("MatMul", ["x", "w"], ["y"], name="fc")
    assert pattern(matmul, _Graph([matmul], {"w"})) is None


def test_a_single_refusal_reads_as_before():
    n = Net()
    r = n.op("Slice", [n.op("Relu", ["x"], "r")] + [n.init(f"s{i}", [v], np.int64) for i, v in enumerate((0, 1, 1))],
             "head")
    model = n.model(n.op("MatMul", ["x", r], "attn"))
    with pytest.raises(ModelError, match=r"^m.onnx: node 'attn' \(MatMul\): attention: MatMul of two computed "
                                         r"tensors: MatMul of two computed tensors of shapes \(1, 8, 8, 8\) and "
                                         r"\(1, 1, 8, 8\): their batch axes"):
        from_model(model, "m.onnx")


def test_the_docs_show_the_message():
    """docs/onnx.md's example refusal is what the importer prints for fcn_and_attention()."""
    text = (Path(__file__).parents[3] / "docs" / "onnx.md").read_text()
    after = text[text.index("test_refusal.py::test_the_docs_show_the_message"):]
    shown = re.search(r"```\n\s*(vdla: error: .*)\n\s*```", after).group(1)
    assert shown == f"vdla: error: {refusal(fcn_and_attention(), 'fcn.onnx')}"
