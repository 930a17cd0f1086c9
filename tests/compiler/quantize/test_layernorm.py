"""The int8 LayerNorm (``reference.layernorm``, ``rules._layernorm``): I-BERT's integer square root
is the exact one, the kernel's constants are the reference's, and the integer method is within
half an output step (its final rounding) of float LayerNorm applied to the same int8 codes."""

import math

import numpy as np
import pytest

from compiler.cpu_fallback import layernorm as kernel
from compiler.frontend import float_ref
from compiler.frontend.graph import Graph, Node
from compiler.quantize import quantize_graph, reference


def test_newton_s_integer_square_root_is_floor_sqrt_below_2_to_the_52():
    rng = np.random.default_rng(0)
    roots = np.concatenate([np.arange(1, 3000), rng.integers(1, 1 << 26, 5000)])
    values = np.concatenate([(roots[:, None] ** 2 + np.array([-1, 0, 1])).reshape(-1),
                             rng.integers(0, 1 << 52, 20000), [0, 1, 2, 3, (1 << 52) - 1],
                             [(1 << b) + e for b in range(52) for e in (-1, 0, 1)]])
    values = values[(values >= 0) & (values < 1 << 52)]
    want = np.array([max(math.isqrt(int(v)), 1) for v in values])
    np.testing.assert_array_equal(reference.isqrt_newton(values), want)


def test_the_kernel_uses_the_reference_s_constants():
    assert (kernel.ROOT_BITS, kernel.RECIP_BITS, kernel.Z_FRAC, kernel.SQRT_STEPS, kernel.MIN_ROOT) == (
        reference.LN_ROOT_BITS, reference.LN_RECIP_BITS, reference.LN_Z_FRAC, reference.LN_SQRT_STEPS,
        reference.LN_MIN_ROOT)


def quantized_layernorm(tokens, channels, rng, eps=1e-5, spread=1.0):
    scale = (1.0 + 0.3 * rng.standard_normal(channels)).astype(np.float32)
    bias = (0.2 * rng.standard_normal(channels)).astype(np.float32)
    shape = (1, tokens, channels)
    graph = Graph("ln", "x", ("y",), [Node("ln", "layernorm", ["x"], "y", {"scale": scale, "bias": bias, "eps": eps})],
                  {"x": shape, "y": shape})
    offset = rng.standard_normal(channels) * 2.0

    def data(n):
        return (offset + spread * rng.standard_normal((n,) + shape[1:])).astype(np.float32)
    return graph, quantize_graph(graph, data(4)), data(1)


@pytest.mark.parametrize("channels", [1, 2, 16, 100, 768])
@pytest.mark.parametrize("spread", [0.01, 1.0, 30.0])
def test_the_int8_layernorm_is_within_half_a_step_of_float_on_the_same_codes(channels, spread):
    graph, q, x = quantized_layernorm(12, channels, np.random.default_rng(channels), spread=spread)
    values = reference.run(q, x)
    node = q.nodes[-1]
    fx, zx, fy, zy = q.fracs[node.inputs[0]], q.zps[node.inputs[0]], q.fracs[node.output], q.zps[node.output]
    a = graph.nodes[0].attrs
    want = float_ref.layernorm((values[node.inputs[0]] - zx) * 2.0 ** -fx, a["scale"], a["bias"], a["eps"])
    want = want * 2.0 ** fy + zy
    got = values[node.output].astype(np.float64)
    inside = (want > -128) & (want < 127)
    assert inside.mean() > 0.5  # (two channels: every z is +-1, and calibration lets some saturate)
    assert np.abs(got - want)[inside].max() <= 0.5 + 2 ** -8
    np.testing.assert_array_equal(got[~inside], np.clip(np.rint(want[~inside]), -128, 127))


def test_a_row_of_equal_values_is_beta_whatever_epsilon():
    """The variance is 0: with epsilon 0 too the square root is clamped to 1 and every deviation is 0."""
    for eps in (0.0, 1e-5):
        graph, q, _ = quantized_layernorm(3, 8, np.random.default_rng(1), eps=eps)
        node = q.nodes[-1]
        codes = np.full((1, 3, 8), 17, np.int8)
        out = reference.layernorm(codes, node.attrs["mul"], node.attrs["add"], node.attrs["eps"], node.attrs["shift"])
        beta = np.clip(np.rint(graph.nodes[0].attrs["bias"] * 2.0 ** q.fracs[node.output]) + q.zps[node.output],
                       -128, 127)
        assert np.abs(out[0, 0].astype(np.int64) - beta).max() <= 1


def test_equalization_factors_around_a_layernorm_keep_its_meaning():
    """dense -> LayerNorm -> dense over tokens: the LayerNorm's input and output take free steps
    (factors folded into the dense layers, ``equalize``), which its multiplier, offset and epsilon
    absorb: the int8 LayerNorm, read back in the model's units, is within half a step (and the
    method's 2**-8) of float LayerNorm of its int8 input read back the same way, where it does not
    saturate."""
    rng = np.random.default_rng(5)
    c = 24
    weight = lambda *shape: (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)  # noqa: E731
    attrs = {"scale": (1.0 + 0.3 * rng.standard_normal(c)).astype(np.float32),
             "bias": (0.2 * rng.standard_normal(c)).astype(np.float32), "eps": 0.5}   # epsilon that matters
    nodes = [Node("d1", "dense", ["x"], "h", {"weight": weight(c, 16), "bias": np.zeros(c, np.float32)}),
             Node("ln", "layernorm", ["h"], "n", attrs),
             Node("d2", "dense", ["n"], "y", {"weight": weight(8, c), "bias": np.zeros(8, np.float32)})]
    graph = Graph("g", "x", ("y",), nodes, {"x": (40, 16), "h": (40, c), "n": (40, c), "y": (40, 8)})
    q = quantize_graph(graph, rng.standard_normal((80, 16)).astype(np.float32))
    assert q.scales["h"] != 1.0 and q.scales["n"] != 1.0
    values = reference.run(q, rng.standard_normal((40, 16)).astype(np.float32))
    want = float_ref.layernorm(q.dequantize("h", values["h"]).astype(np.float64), attrs["scale"], attrs["bias"],
                               attrs["eps"])
    step = 2.0 ** -q.fracs["n"] / q.scales["n"]
    codes = want / step + q.zps["n"]
    inside = (codes > -128) & (codes < 127)
    assert inside.mean() > 0.95
    assert np.abs(values["n"] - codes)[inside].max() <= 0.5 + 2 ** -8
