"""Layout pack/unpack: host JIT vs numpy reshape/transpose, and the round-trip property."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import compiler.cpu_fallback as cf

from . import numpy_ref as ref


@pytest.mark.parametrize("shape", [(1, 3, 224, 224), (1, 64, 56, 56), (1, 512, 7, 7)])
def test_pack_resnet18_jit_vs_numpy(shape):
    """Stem input (3 channels padded to 16) and two inner activations, BATCH 1, BLOCK 16."""
    x = np.random.default_rng(0).integers(-128, 128, shape, dtype=np.int8)
    packed = cf.pack(x, batch=1, block=16)
    np.testing.assert_array_equal(packed, ref.pack(x, 1, 16))
    np.testing.assert_array_equal(cf.unpack(packed, n=shape[0], c=shape[1]), x)


def test_pack_zero_pads_channels_and_batch():
    x = np.ones((3, 5, 2, 2), np.int8)
    packed = cf.pack(x, batch=2, block=4)
    assert packed.shape == (2, 2, 2, 2, 2, 4)
    assert packed.sum() == x.sum()
    assert np.all(packed[1, :, :, :, 1, :] == 0)  # padded batch row 3
    assert np.all(packed[:, 1, :, :, :, 1:] == 0)  # padded channels 5..7


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 5), c=st.integers(1, 40), h=st.integers(1, 6), w=st.integers(1, 6),
       batch=st.sampled_from([1, 2, 4]), block=st.sampled_from([1, 4, 8, 16]),
       dtype=st.sampled_from(["int8", "int32"]), seed=st.integers(0, 2**32 - 1))
def test_pack_unpack_generated_jit_vs_numpy(n, c, h, w, batch, block, dtype, seed):
    info = np.iinfo(dtype)
    x = np.random.default_rng(seed).integers(info.min, info.max, (n, c, h, w), dtype=dtype,
                                             endpoint=True)
    packed = cf.pack(x, batch=batch, block=block)
    np.testing.assert_array_equal(packed, ref.pack(x, batch, block))
    np.testing.assert_array_equal(cf.unpack(packed, n=n, c=c), ref.unpack(packed, n, c))
    np.testing.assert_array_equal(cf.unpack(packed, n=n, c=c), x)  # round trip


def test_layout_rejects_bad_input():
    with pytest.raises(cf.KernelDtypeError, match="pack: 'inp' must be int8 or int32, got float32"):
        cf.pack(np.zeros((1, 1, 1, 1), np.float32), batch=1, block=16)
    with pytest.raises(cf.KernelParamError, match="pack: parameter block=0"):
        cf.pack(np.zeros((1, 1, 1, 1), np.int8), batch=1, block=0)
    with pytest.raises(cf.KernelShapeError,
                       match=r"unpack: blocked shape .* does not hold n=1, c=40"):
        cf.unpack(np.zeros((1, 2, 3, 3, 1, 16), np.int8), n=1, c=40)
