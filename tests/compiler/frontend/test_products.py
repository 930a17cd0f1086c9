"""Products of two computed tensors (issue 27): exporter-style SiLU (x * sigmoid(x)) and
squeeze-excitation blocks (x * sigmoid(conv(relu(conv(gap(x)))))) import, match onnxruntime in
float, quantize, and run through the executor and ``vdla run``'s path bit for bit against the
int8 reference, close to the float model; broadcasts the product does not take are refused."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from compiler.frontend import ModelError, float_ref, from_model
from compiler.frontend.graph import mul_extents
from compiler.network import execute, partition
from compiler.quantize import quantize_graph, reference
from driver import open_device

from .exporter_graphs import Builder

SHAPE = (1, 8, 10, 12)


def squeeze_excitation(b: Builder, x: str, c: int, gate: str = "Sigmoid", gate_first: bool = False) -> str:
    """torchvision's SqueezeExcitation: GlobalAveragePool, Conv 1x1, Relu, Conv 1x1, the gate, Mul."""
    s = b.op("GlobalAveragePool", [x])
    s = b.op("Relu", [b.conv(s, c, c // 4, 1, pads=[0] * 4)])
    s = b.op(gate, [b.conv(s, c // 4, c, 1, pads=[0] * 4)])
    return b.op("Mul", [s, x] if gate_first else [x, s])


def silu_model(seed=0):
    """Conv, then SiLU as the exporter writes it (Sigmoid and Mul), twice."""
    b = Builder(seed)
    x = b.conv("input", 8, 16, 3)
    x = b.op("Mul", [x, b.op("Sigmoid", [x])])
    x = b.conv(x, 16, 16, 3, stride=2)
    x = b.op("Mul", [b.op("Sigmoid", [x]), x])
    return b.model(SHAPE, x, [1, 16, 5, 6])


def se_model(seed=1):
    """EfficientNet's MBConv tail: conv, SiLU, a Sigmoid-gated SE block, a 1x1 projection; then a
    MobileNetV3-style Hardsigmoid-gated SE block with the gate as Mul's first input."""
    b = Builder(seed)
    x = b.conv("input", 8, 16, 3)
    x = b.op("Mul", [x, b.op("Sigmoid", [x])])
    x = squeeze_excitation(b, x, 16)
    x = b.conv(x, 16, 16, 1, pads=[0] * 4)
    x = squeeze_excitation(b, b.op("Relu", [x]), 16, gate="HardSigmoid", gate_first=True)
    return b.model(SHAPE, x, [1, 16, 10, 12])


MODELS = {"silu": silu_model, "se": se_model}
PRODUCTS = {"silu": 2, "se": 3}


@pytest.fixture(scope="module", params=sorted(MODELS))
def imported(request):
    model = MODELS[request.param]()
    onnx.checker.check_model(model, full_check=True)
    return model, from_model(model, request.param), PRODUCTS[request.param]


def test_float_model_matches_onnxruntime(imported):
    model, graph, products = imported
    assert sum(n.op == "mul" for n in graph.nodes) == products
    x = np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = session.run(None, {"input": x})[0]
    np.testing.assert_allclose(float_ref.forward(graph, x), want, rtol=0, atol=1e-5 * float(np.abs(want).max()))


def test_quantized_products_run_bit_exact_close_to_float(imported):
    model, graph, count = imported
    rng = np.random.default_rng(1)
    q = quantize_graph(graph, rng.standard_normal((8,) + SHAPE[1:]).astype(np.float32))
    products = [n for n in q.nodes if n.op == "mul"]
    assert len(products) == count and all(0 < n.attrs["mul"] <= 1 << 14 and n.attrs["shift"] <= 31 for n in products)
    device = open_device("sim", "osdi18")
    placements = partition(q, device.config)
    for n in products:
        assert placements[n.name].target == "cpu" and placements[n.name].reason.startswith("CPU: the ALU has MUL")
    x = rng.standard_normal((4,) + SHAPE[1:]).astype(np.float32)
    want = float_ref.forward(graph, x)
    for i in range(2):  # the executor (host JIT kernels) equals the reference, bit for bit
        np.testing.assert_array_equal(execute(q, x[i:i + 1], placements, device).output,
                                      reference.forward(q, x[i:i + 1]))
    values = reference.run(q, x)
    # free steps (compiler.quantize.equalize) where a product reaches only layers: then its multiplier is
    # not a power of two, and the product is within half a step and the 14-bit multiplier's rounding of
    # the real product of its int8 inputs
    assert all(n.output in q.scales for n in products if n.output not in q.outputs)
    for n in products:
        a, b = (q.dequantize(i, values[i]).astype(np.float64) for i in n.inputs)
        step = 2.0 ** -q.fracs[n.output] / q.scales.get(n.output, 1.0)
        got, ideal = q.dequantize(n.output, values[n.output]).astype(np.float64), a * b
        inside = (ideal >= (-128 - q.zps[n.output]) * step) & (ideal <= (127 - q.zps[n.output]) * step)
        assert inside.mean() > 0.99
        assert np.all(np.abs(got - ideal)[inside] <= step * (0.5 + 1e-6) + np.abs(ideal[inside]) * 2.0 ** -13)
    pow2 = quantize_graph(graph, rng.standard_normal((8,) + SHAPE[1:]).astype(np.float32), equalize_scales=False)
    values2 = reference.run(pow2, x)
    for n in (n for n in pow2.nodes if n.op == "mul"):  # power-of-two steps: the multiplier is exact, the product
        a, b = (pow2.dequantize(i, values2[i]).astype(np.float64) for i in n.inputs)  # the real one rounded once
        assert not any(v in pow2.scales for v in (*n.inputs, n.output))
        ideal = np.clip(np.floor(a * b * 2.0 ** pow2.fracs[n.output] + 0.5) + pow2.zps[n.output], -128, 127)
        np.testing.assert_array_equal(values2[n.output], ideal)
    got = q.dequantize_output(values[q.output])
    rms = float(np.sqrt(((got - want) ** 2).mean()) / np.sqrt((want ** 2).mean()))
    assert rms < 0.1, rms  # (measured 0.029 and 0.071: mostly the calibrated scales' clipping)


def test_vdla_run_path_on_an_onnx_file(tmp_path, cache_folder):
    from vdla.network import run_network

    path = tmp_path / "se.onnx"
    onnx.save(se_model(), str(path))
    report = run_network(str(path), placement="all", calibration=4, test_inputs=2)
    assert report.bit_exact
    rows = [r for r in report.as_dict()["layers"] if r["op"] == "mul"]
    assert len(rows) == 3 and all(r["placement"] == "cpu" for r in rows), rows


def _broadcast_model(other_shape):
    """Mul of a conv's output (1, 8, 4, 4) and a computed tensor of ``other_shape`` (a Slice of it)."""
    b = Builder(2)
    x = b.conv("input", 3, 8, 3)
    ends = b.init("ends", np.array(other_shape, np.int64))
    y = b.op("Slice", [x, b.init("starts", np.zeros(4, np.int64)), ends])
    return b.model((1, 3, 4, 4), b.op("Mul", [x, y]), [1, 8, 4, 4])


@pytest.mark.parametrize("other", [(1, 8, 4, 4), (1, 8, 1, 1), (1, 1, 1, 1), (1, 1, 4, 4)])
def test_the_broadcasts_a_product_takes(other):
    graph = from_model(_broadcast_model(other))
    assert [n.op for n in graph.nodes][-1] == "mul"


@pytest.mark.parametrize("other", [(1, 8, 4, 1), (1, 1, 1, 4), (1, 8, 1, 4)])
def test_other_broadcasts_are_refused_naming_the_node_and_shapes(other):
    with pytest.raises(ModelError) as err:
        from_model(_broadcast_model(other), "b.onnx")
    message = str(err.value)
    assert message.startswith("b.onnx: node 'node_Mul_3' (Mul): Mul inputs have shapes (1, 8, 4, 4) and "
                               f"{other}"), message


def test_both_sides_broadcast_is_refused():
    b = Builder(3)
    x = b.conv("input", 3, 8, 3)
    gate = b.op("GlobalAveragePool", [x])
    plane = b.op("Slice", [x, b.init("starts", np.zeros(4, np.int64)), b.init("ends", np.array([1, 1, 4, 4]))])
    with pytest.raises(ModelError, match=r"shapes \(1, 8, 1, 1\) and \(1, 1, 4, 4\)"):
        from_model(b.model((1, 3, 4, 4), b.op("Mul", [gate, plane]), [1, 8, 4, 4]))


def test_mul_by_a_constant_stays_an_affine():
    b = Builder(4)
    x = b.op("Mul", [b.conv("input", 3, 8, 3), b.init("k", np.full((1, 8, 1, 1), 0.5, np.float32))])
    graph = from_model(b.model((1, 3, 4, 4), b.op("Sigmoid", [x]), [1, 8, 4, 4]))
    assert [n.op for n in graph.nodes] == ["conv", "sigmoid"]  # the affine folded into the conv


def test_mul_extents():
    assert mul_extents((1, 16, 1, 1), (2, 16, 7, 7)) == (1, 16, 1)
    assert mul_extents((16, 1, 1), (2, 16, 7, 7)) == (1, 16, 1)
    assert mul_extents((2, 16, 7, 7), (2, 16, 7, 7)) == (2, 16, 49)
    assert mul_extents((1,), (2, 16, 7, 7)) == (1, 1, 1)
    assert mul_extents((2, 1, 7, 7), (2, 16, 7, 7)) == (2, 1, 49)
    assert mul_extents((1, 16, 7, 1), (2, 16, 7, 7)) is None
    assert mul_extents((3, 2, 16, 7, 7), (2, 16, 7, 7)) is None
