"""Plain numpy quantized conv2d and dense, written independently of the compiler: the top of the
chain compiler -> reference semantics / simulator -> numpy."""

import numpy as np


def requantize(acc: np.ndarray, shift: int, relu: bool) -> np.ndarray:
    """clip((acc) >> shift, lo, 127) with an arithmetic shift; lo = 0 with relu, else -128."""
    return np.clip(acc >> shift, 0 if relu else -128, 127).astype(np.int8)


def conv2d(x, w, b, *, stride, pad, shift, relu):
    """NCHW int8 x, OIHW int8 w, (O,) int32 b -> NCHW int8, by direct summation over the window."""
    n, c, h, wd = x.shape
    o, _, k, _ = w.shape
    xp = np.zeros((n, c, h + 2 * pad, wd + 2 * pad), dtype=np.int64)
    xp[:, :, pad:pad + h, pad:pad + wd] = x
    oh, ow = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    acc = np.zeros((n, o, oh, ow), dtype=np.int64)
    w64 = w.astype(np.int64)
    for y in range(oh):
        for xx in range(ow):
            window = xp[:, :, y * stride:y * stride + k, xx * stride:xx * stride + k]
            acc[:, :, y, xx] = np.tensordot(window, w64, axes=([1, 2, 3], [1, 2, 3]))
    return requantize(acc + b.astype(np.int64)[None, :, None, None], shift, relu)


def dense(x, w, b, *, shift, relu):
    """(N, I) int8 x, (O, I) int8 w, (O,) int32 b -> (N, O) int8."""
    acc = x.astype(np.int64) @ w.astype(np.int64).T + b.astype(np.int64)[None, :]
    return requantize(acc, shift, relu)
