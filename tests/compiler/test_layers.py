"""Layer descriptions: validation errors name the layer and the field; derived shapes."""

import pytest

from compiler.layers import Conv2D, Dense, LayerError, layer_from_dict
from vdla_hw.config import load_config


def test_conv2d_shapes():
    layer = Conv2D(h=56, w=56, ic=64, oc=128, k=3, stride=2, pad=1)
    assert (layer.oh, layer.ow) == (28, 28)
    assert layer.output_shape == (1, 128, 28, 28) and layer.weight_shape == (128, 64, 3, 3)
    assert layer.macs == 28 * 28 * 128 * 64 * 9 and layer.lo == -128


@pytest.mark.parametrize("field, value", [("h", 0), ("ic", -1), ("k", 1.5), ("stride", True), ("pad", -1),
                                          ("shift", 32)])
def test_conv2d_bad_field_named(field, value):
    kw = dict(name="convA", h=8, w=8, ic=4, oc=4, k=3)
    kw[field] = value
    with pytest.raises(LayerError, match=rf"layer convA: {field}: "):
        Conv2D(**kw)


def test_kernel_larger_than_padded_input():
    with pytest.raises(LayerError, match="layer c: k: kernel 5 is larger"):
        Conv2D(name="c", h=2, w=2, ic=1, oc=1, k=5, pad=1)


def test_pad_beyond_load_pad_field():
    with pytest.raises(LayerError, match="pad: 16 exceeds the 4-bit LOAD pad fields"):
        Conv2D(h=4, w=4, ic=1, oc=1, k=1, pad=16).check(load_config("tiny"))


def test_dense_as_conv_and_roundtrip():
    fc = Dense(name="fc", n=3, ic=512, oc=1000, shift=7, relu=True)
    conv = fc.as_conv2d()
    assert (conv.h, conv.w, conv.k, conv.ic, conv.oc) == (1, 3, 1, 512, 1000)
    assert layer_from_dict(fc.describe()) == fc
    with pytest.raises(LayerError, match="layer fc: oc: must be a positive integer"):
        Dense(name="fc", ic=4, oc=0)
