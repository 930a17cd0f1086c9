"""Bilinear Resize (ONNX ``Resize`` in ``linear`` mode over H and W) as a constant weighted gather.

Each output pixel of a plane is a weighted sum of at most four input pixels of the same plane
(the same for every sample and channel): ``index`` (P, 4) holds their flat positions in an
H x W plane and ``weight`` (P, 4) their weights, P = H' x W'. Bilinear interpolation is
separable: along each axis an output coordinate ``o`` maps to the input coordinate ``x`` of the
node's ``coordinate_transformation_mode`` (ONNX operator spec, Resize)::

    half_pixel          (o + 0.5) / scale - 0.5
    pytorch_half_pixel  (o + 0.5) / scale - 0.5, or 0 when the output has one element
    align_corners       o * (in - 1) / (out - 1), or 0 when the output has one element
    asymmetric          o / scale

``x`` is clamped to [0, in - 1] (onnx pads the edge), its neighbours are ``floor(x)`` and the next
(the last for the last) with weights ``1 - r`` and ``r``, ``r = x - floor(x)``. ``scale`` is the
``scales`` input's when the node gives scales, else ``out / in``. torch exports
``F.interpolate(mode="bilinear")`` as half_pixel (``align_corners=False``) or align_corners.
tests/compiler/frontend/test_resize.py checks every mode, by sizes and by scales, against
onnxruntime.
"""

from __future__ import annotations

import numpy as np

MODES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric")


def axis_weights(size_in: int, size_out: int, scale: float, mode: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(low neighbour, high neighbour, weight of the high one) of each output coordinate along one axis."""
    o = np.arange(size_out, dtype=np.float64)
    if mode == "half_pixel":
        x = (o + 0.5) / scale - 0.5
    elif mode == "pytorch_half_pixel":
        x = (o + 0.5) / scale - 0.5 if size_out > 1 else np.zeros(1)
    elif mode == "align_corners":
        x = o * (size_in - 1) / (size_out - 1) if size_out > 1 else np.zeros(1)
    elif mode == "asymmetric":
        x = o / scale
    else:
        raise ValueError(f"coordinate transformation {mode!r} (known: {', '.join(MODES)})")
    x = np.clip(x, 0, size_in - 1)
    lo = np.floor(x).astype(np.int64)
    hi = np.minimum(lo + 1, size_in - 1)
    return lo, hi, x - lo


def bilinear_map(plane_in: tuple[int, int], plane_out: tuple[int, int], scales: tuple[float, float],
                 mode: str) -> tuple[np.ndarray, np.ndarray]:
    """(index int64 (P, 4), weight float64 (P, 4)) of an H x W to H' x W' bilinear resize; each
    row's weights are non-negative and sum to 1."""
    (h, w), (oh, ow) = plane_in, plane_out
    lo_h, hi_h, rh = axis_weights(h, oh, scales[0], mode)
    lo_w, hi_w, rw = axis_weights(w, ow, scales[1], mode)
    rows = [(lo_h, 1 - rh), (hi_h, rh)]
    cols = [(lo_w, 1 - rw), (hi_w, rw)]
    index = np.stack([(r[:, None] * w + c[None, :]).reshape(-1) for r, _ in rows for c, _ in cols], axis=1)
    weight = np.stack([(a[:, None] * b[None, :]).reshape(-1) for _, a in rows for _, b in cols], axis=1)
    return index, weight
