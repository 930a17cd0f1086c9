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
            assert 0 <= node.attrs["shift"] <= 31
        if node.op == "add":
            assert 0 <= node.attrs["shift"] <= 31 and 0 <= node.attrs["a_shift"] <= 16
    assert not any(n.op == "relu" for n in q.nodes)  # every ReLU fused into its conv or add
    assert sum(n.attrs.get("relu", False) for n in q.nodes) == 17


def test_first_layers_are_close_to_float(resnet18):
    graph, q = resnet18
    x = synthetic_images(4, 64, seed=20)
    fv, qv = float_ref.run(graph, x), reference.run(q, x)
    # Measured: about 3 % and 8 %; int8 error compounds by about 3 % per layer in a random network.
    for name, bound in (("conv1", 0.05), ("layer1.0.conv1", 0.12)):
        node = q.node(name)
        f, d = fv[node.output], qv[node.output] * 2.0 ** -q.fracs[node.output]
        assert np.sqrt(((f - d) ** 2).mean()) / np.sqrt((f ** 2).mean()) < bound, name


def test_requantization_rounds_to_nearest():
    acc = np.array([5, 6, 7, -5, -6, -7], dtype=np.int64)
    # shift 2 with the half-step bias (+2) folded in: 5/4=1.25->1, 6/4=1.5->2, 7/4->2, -1.25->-1, -1.5->-1, -1.75->-2
    assert reference.requantize(acc + 2, 2, relu=False).tolist() == [1, 2, 2, -1, -1, -2]


def test_calibration_shape_is_checked(resnet18):
    graph, _ = resnet18
    with pytest.raises(Exception, match="calibration inputs of shape"):
        quantize_graph(graph, np.zeros((1, 3, 32, 32), np.float32))
