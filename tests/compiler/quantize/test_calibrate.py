"""Quantization: power-of-two scales, shifts in range, error against the float model."""

import numpy as np
import onnx
import pytest

from compiler.frontend import float_ref, load_onnx
from compiler.frontend.inputs import synthetic_images
from compiler.frontend.resnet import build_resnet
from compiler.quantize import calibrate, quantize_graph, reference


@pytest.fixture(scope="module")
def resnet18(tmp_path_factory):
    path = tmp_path_factory.mktemp("q") / "r18.onnx"
    onnx.save(build_resnet(18, 64), str(path))
    graph = load_onnx(path)
    return graph, quantize_graph(graph, synthetic_images(4, 64, seed=10))


@pytest.mark.parametrize("maxabs,frac", [(127.0, 0), (1.0, 6), (0.5, 7), (300.0, -2), (0.0, 7)])
def test_frac_for_keeps_the_maximum_in_int8(maxabs, frac):
    assert calibrate.frac_for(maxabs) == frac
    assert round(maxabs * 2.0 ** frac) <= 127


def test_choose_frac_trades_clipping_for_resolution():
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.standard_normal(100_000), [40.0]])  # one outlier
    assert calibrate.choose_frac(values) > calibrate.frac_for(40.0)


def test_quantized_graph_is_int8_with_shifts_in_range(resnet18):
    _, q = resnet18
    for node in q.nodes:
        if node.op in ("conv", "dense"):
            assert node.attrs["weight"].dtype == np.int8 and node.attrs["bias"].dtype == np.int32
            assert 0 <= np.min(node.attrs["shift"]) and np.max(node.attrs["shift"]) <= 31
        if node.op == "add":
            assert 0 <= node.attrs["shift"] <= 31 and 0 <= node.attrs["a_shift"] <= 16
    assert not any(n.op in ("relu", "lut") for n in q.nodes)  # every ReLU fused into its conv or add
    # ReLU outputs are unsigned: zero point -128, all 256 codes for 0..255 steps
    assert sum(q.zp(n.output) == -128 for n in q.nodes) == 17 + 3  # + max pool, average pool, flatten
    assert q.nodes[-1].attrs["wide"] and q.nodes[-1].attrs["hi"] == 2**31 - 1


def test_first_layers_are_close_to_float(resnet18):
    graph, q = resnet18
    x = synthetic_images(4, 64, seed=20)
    fv, qv = float_ref.run(graph, x), reference.run(q, x)
    # Measured: about 1.5 % and 4 %; int8 error compounds by about 1.5 % per layer in a random network.
    for name, bound in (("conv1", 0.05), ("layer1.0.conv1", 0.12)):
        node = q.node(name)
        f, d = fv[node.output], q.dequantize(node.output, qv[node.output])
        assert np.sqrt(((f - d) ** 2).mean()) / np.sqrt((f ** 2).mean()) < bound, name


def test_requantization_rounds_to_nearest():
    acc = np.array([5, 6, 7, -5, -6, -7], dtype=np.int64)
    # shift 2 with the half-step bias (+2) folded in: 5/4=1.25->1, 6/4=1.5->2, 7/4->2, -1.25->-1, -1.5->-1, -1.75->-2
    assert reference.requantize(acc + 2, 2, relu=False).tolist() == [1, 2, 2, -1, -1, -2]


def test_unsigned_values_use_all_256_codes():
    """A ReLU output at frac f spans 0..255 steps: code q means (q + 128) * 2**-f."""
    assert calibrate.choose_frac(np.linspace(0, 10, 1000), "minmax", unsigned=True) == 4  # 255/16 = 15.9 > 10
    assert calibrate.choose_frac(np.linspace(0, 10, 1000), "minmax", unsigned=False) == 3


@pytest.mark.parametrize("method", ["mse", "percentile", "minmax"])
def test_calibration_methods(method):
    values = np.append(np.random.default_rng(1).laplace(size=200_000), 100.0)  # a heavy tail: clipping pays
    frac = calibrate.choose_frac(values, method)
    top = calibrate.frac_for(float(np.abs(values).max()))
    assert frac == top if method == "minmax" else frac > top


def test_calibration_shape_is_checked(resnet18):
    graph, _ = resnet18
    with pytest.raises(Exception, match="calibration inputs of shape"):
        quantize_graph(graph, np.zeros((1, 3, 32, 32), np.float32))


def test_equalized_scales_keep_the_function_and_use_all_codes():
    """A ReLU6 output between two convs gets the step 6/255 (a factor folded into the weights
    around it); the float function is unchanged and the int8 network still follows it."""
    from compiler.frontend import from_model
    from compiler.quantize.equalize import equalize
    from tests.compiler.frontend.exporter_graphs import mobilenet_like

    graph = from_model(mobilenet_like(), "m")
    x = np.random.default_rng(0).standard_normal((4, 3, 16, 16)).astype(np.float32)
    values = float_ref.run(graph, x)
    rewritten, scales = equalize(graph, dict(values))
    assert scales and all(0.5 < s <= 1 for s in scales.values())
    np.testing.assert_allclose(float_ref.forward(rewritten, x), float_ref.forward(graph, x), rtol=1e-4, atol=1e-5)
    q = quantize_graph(graph, x)
    relu6 = next(n for n in q.nodes if n.op == "conv" and n.output in q.scales)
    assert relu6.attrs["hi"] > 100  # 6.0 near the last code (a power-of-two step alone: 64, 192 codes)
    out = reference.run(q, x)
    for node in q.nodes[1:]:  # dequantize() undoes the folded factor
        f, d = values[node.output], q.dequantize(node.output, out[node.output])
        assert np.sqrt(((f - d) ** 2).mean()) < 0.1 * np.sqrt((f ** 2).mean()) + 1e-3, node.name
