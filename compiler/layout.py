"""Blocked tensor layouts of the accelerator, and packing between them and NCHW / OIHW.

Activations (VTA's layout; one INP/OUT element is the trailing ``(BATCH, BLOCK)``)::

    packed[nb, cb, y, x, b, c] = nchw[nb*BATCH + b, cb*BLOCK_IN + c, y, x]

Weights (one WGT element is the trailing ``(BLOCK_OUT, BLOCK_IN)``)::

    packed[ob, ib, ky, kx, o, i] = oihw[ob*BLOCK_OUT + o, ib*BLOCK_IN + i, ky, kx]

Bias: one ACC element per output-channel block, the block's values repeated on every batch
row: ``packed[ob, b, o] = bias[ob*BLOCK_OUT + o]``. Batch and channels are zero-padded up to
whole blocks; padded channels have zero weights and bias, so they compute zeros and are
dropped on unpacking.
"""

from __future__ import annotations

import numpy as np


def blocks(n: int, size: int) -> int:
    """Whole blocks of ``size`` covering ``n``."""
    return -(-n // size)


def pack_activations(x: np.ndarray, batch: int, block: int, dtype=np.int8) -> np.ndarray:
    """NCHW -> (N/BATCH, C/BLOCK, H, W, BATCH, BLOCK), zero-padded."""
    n, c, h, w = x.shape
    padded = np.zeros((blocks(n, batch) * batch, blocks(c, block) * block, h, w), dtype=dtype)
    padded[:n, :c] = x
    nb, cb = padded.shape[0] // batch, padded.shape[1] // block
    return np.ascontiguousarray(padded.reshape(nb, batch, cb, block, h, w).transpose(0, 2, 4, 5, 1, 3))


def unpack_activations(packed: np.ndarray, n: int, c: int) -> np.ndarray:
    """(N/BATCH, C/BLOCK, H, W, BATCH, BLOCK) -> NCHW, dropping the padding."""
    nb, cb, h, w, batch, block = packed.shape
    full = packed.transpose(0, 4, 1, 5, 2, 3).reshape(nb * batch, cb * block, h, w)
    return np.ascontiguousarray(full[:n, :c])


def pack_weights(wgt: np.ndarray, block_out: int, block_in: int) -> np.ndarray:
    """OIHW -> (O/BLOCK_OUT, I/BLOCK_IN, KH, KW, BLOCK_OUT, BLOCK_IN), zero-padded."""
    o, i, kh, kw = wgt.shape
    padded = np.zeros((blocks(o, block_out) * block_out, blocks(i, block_in) * block_in, kh, kw), dtype=np.int8)
    padded[:o, :i] = wgt
    ob, ib = padded.shape[0] // block_out, padded.shape[1] // block_in
    return np.ascontiguousarray(padded.reshape(ob, block_out, ib, block_in, kh, kw).transpose(0, 2, 4, 5, 1, 3))


def pack_bias(bias: np.ndarray, batch: int, block_out: int) -> np.ndarray:
    """(O,) int32 -> (O/BLOCK_OUT, BATCH, BLOCK_OUT) int32, zero-padded."""
    o = bias.shape[0]
    padded = np.zeros(blocks(o, block_out) * block_out, dtype=np.int32)
    padded[:o] = bias
    per_block = padded.reshape(-1, 1, block_out)
    return np.ascontiguousarray(np.broadcast_to(per_block, (per_block.shape[0], batch, block_out)))
