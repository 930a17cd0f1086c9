"""Fuzzing the ONNX front end: exporter-style graphs (onnx.helper) with random chains of
supported and unsupported ops, attributes and initializers that may not fit, and byte-level
damage to a valid file. Import ends in a clean ModelError or a graph whose float reference
runs and produces the shapes the importer promised."""

import numpy as np
import onnx
from hypothesis import event, given, strategies as st
from onnx import TensorProto, helper, numpy_helper

from compiler.frontend import float_ref, load_onnx
from tests.fuzz.harness import FUZZ, outcome



@st.composite
def onnx_model(draw):
    """A chain of nodes that is well formed as long as ``draw`` keeps it so (most often), with a
    random defect now and then: a wrong or NaN initializer, a window larger than its input, a
    missing attribute or input, an unsupported op, a tensor of another rank."""
    c, h = draw(st.integers(1, 4)), draw(st.integers(1, 9))
    dims = draw(st.sampled_from([[1, c, h, h]] * 6 + [[1, c, h], [2, c, h, h]]))
    nodes, inits, names = [], [], ["x"]
    flat = False

    def bad() -> bool:
        return draw(st.integers(0, 11)) == 0

    def init(name, array):
        if bad():
            array = np.full(draw(st.lists(st.integers(0, 5), max_size=4)), draw(st.sampled_from([np.nan, 1.0])),
                            np.float32)
        inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    for k in range(draw(st.integers(0, 6))):
        out, src = f"t{k}", names[-1]
        op = draw(st.sampled_from(["Gemm", "Relu"] if flat else
                                  ["Conv", "Conv", "Relu", "MaxPool", "Add", "Identity", "BatchNormalization",
                                   "GlobalAveragePool", "Flatten", "Clip", "Sigmoid"]))
        attrs, ins = {}, [src]
        if op == "Conv":
            oc, kk = draw(st.integers(1, 4)), draw(st.integers(1, 3))
            ins.append(init(f"w{k}", np.random.default_rng(k).standard_normal((oc, c, kk, kk)).astype(np.float32)))
            attrs = {"kernel_shape": [kk, kk], "strides": [draw(st.integers(1, 2))] * 2,
                     "pads": [draw(st.integers(0, 1))] * 4}
            c = oc
        elif op == "MaxPool":
            kk = draw(st.integers(1, 3))
            attrs = {"kernel_shape": [kk, kk], "strides": [draw(st.integers(1, 2))] * 2}
        elif op == "Add":
            ins.append(draw(st.sampled_from(names)))
        elif op == "BatchNormalization":
            ins += [init(f"b{k}{j}", np.ones(c, np.float32)) for j in range(4)]
        elif op == "Clip":
            ins.append(init(f"lo{k}", np.array(0.0, np.float32)))
        elif op == "Flatten":
            flat = True
        elif op == "Gemm":
            n = draw(st.integers(1, 5))
            ins.append(init(f"fc{k}", np.ones((n, c * 64), np.float32)))
            attrs = {"transB": 1}
        if bad():
            key = draw(st.sampled_from(["kernel_shape", "strides", "pads", "axis"]))
            attrs[key] = draw(st.lists(st.integers(-1, 12), min_size=1, max_size=5))
        if bad():
            ins = ins[:draw(st.integers(0, len(ins)))]
        nodes.append(helper.make_node(op, ins, [out], name=f"n{k}", **attrs))
        names.append(out)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)]
    output = helper.make_tensor_value_info(names[-1] if not bad() else "nowhere", TensorProto.FLOAT, None)
    graph = helper.make_graph(nodes, "fuzz", inputs, [output], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def check(path):
    kind, graph = outcome(load_onnx, path)
    event(f"import: {kind}")
    if kind == "ok":
        x = np.random.default_rng(0).standard_normal(graph.shapes[graph.input]).astype(np.float32)
        values = float_ref.run(graph, x)
        for name, shape in graph.shapes.items():
            assert min(shape) > 0 and values[name].shape == tuple(shape), (name, shape, values[name].shape)


@FUZZ
@given(onnx_model())
def test_generated_models(tmp_path_factory, model):
    path = tmp_path_factory.mktemp("m") / "m.onnx"
    onnx.save(model, str(path))
    check(path)


def small_valid_model() -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    fc = numpy_helper.from_array(np.ones((4, 4), np.float32), "fc")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool"),
             helper.make_node("Flatten", ["p"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "fc"], ["y"], name="fc", transB=1)]
    graph = helper.make_graph(nodes, "small", [x], [y], [w, fc])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


VALID = small_valid_model()


@FUZZ
@given(edits=st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), min_size=1, max_size=8),
       cut=st.integers(0, len(VALID)))
def test_damaged_files(tmp_path_factory, edits, cut):
    raw = bytearray(VALID)
    for pos, value in edits:
        raw[pos] = value
    path = tmp_path_factory.mktemp("d") / "d.onnx"
    path.write_bytes(bytes(raw[: len(raw) - cut // 4]))
    check(path)
