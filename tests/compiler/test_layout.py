"""Blocked layouts: pack/unpack round trips and the element formulas of compiler/layout.py."""

import numpy as np
from hypothesis import given, strategies as st

from compiler import layout


@given(n=st.integers(1, 3), c=st.integers(1, 20), h=st.integers(1, 4), w=st.integers(1, 4),
       batch=st.sampled_from([1, 2]), block=st.sampled_from([4, 16]))
def test_activation_roundtrip_and_formula(n, c, h, w, batch, block):
    x = np.random.default_rng(0).integers(-128, 128, (n, c, h, w), dtype=np.int8)
    packed = layout.pack_activations(x, batch, block)
    assert packed.shape == (-(-n // batch), -(-c // block), h, w, batch, block)
    assert (layout.unpack_activations(packed, n, c) == x).all()
    nb, cb, y, xx, b, ci = (s - 1 for s in packed.shape)
    value = x[nb * batch + b, cb * block + ci, y, xx] if nb * batch + b < n and cb * block + ci < c else 0
    assert packed[nb, cb, y, xx, b, ci] == value


@given(o=st.integers(1, 20), i=st.integers(1, 20), k=st.sampled_from([1, 3]), block=st.sampled_from([4, 16]))
def test_weight_formula_and_padding(o, i, k, block):
    wgt = np.random.default_rng(1).integers(-128, 128, (o, i, k, k), dtype=np.int8)
    packed = layout.pack_weights(wgt, block, block)
    full = packed.transpose(0, 4, 1, 5, 2, 3).reshape(packed.shape[0] * block, packed.shape[1] * block, k, k)
    assert (full[:o, :i] == wgt).all() and not full[o:].any() and not full[:, i:].any()


def test_bias_repeated_over_batch_rows():
    packed = layout.pack_bias(np.arange(5, dtype=np.int32), batch=2, block_out=4)
    assert packed.shape == (2, 2, 4)
    assert (packed[1, 1] == [4, 0, 0, 0]).all() and (packed[0, 0] == packed[0, 1]).all()
