"""The scale of one tensor: a power-of-two frac (scale 2**-frac) and, for activations, a zero
point (code of 0), chosen from its float values by one of :data:`METHODS` (:func:`choose_scale`):

- ``mse`` (default): the least mean squared int8 error (rounding plus clipping), searched over
  the frac (from the one whose 256 codes cover the whole range, upward over a few bits) and
  the window's position (zero point);
- ``percentile``: the largest frac whose window holds the 0.01 %..99.99 % range;
- ``minmax``: the largest frac whose window holds the whole range.

The window always holds 0 exactly (padding and ReLU need a code for 0); a ReLU output gets
zero point -128 and all 256 codes for 0..max, as an unsigned value would.

Weights get a frac per output channel where that lowers their quantization error by more
than :data:`PER_CHANNEL_GAIN` (the requantization then shifts each channel by its own amount, on
the CPU and on the accelerator alike), else one per layer (both by MSE) (:func:`weight_fracs`).
Used by the calibration (``calibrate``), the per-node rules (``rules``) and the equalization
(``equalize``), none of which this module imports.
"""

from __future__ import annotations

import functools

import numpy as np

from compiler.quantize.exact import floor_log2

FRAC_MIN, FRAC_MAX = -8, 20
SEARCH_BITS = 4
SAMPLE = 1 << 17  # values a scale is chosen on (a random sample of larger tensors)
PERCENTILE = 99.99
METHODS = ("mse", "percentile", "minmax")


def frac_for(maxabs: float, top: int = 127) -> int:
    """The largest frac with round(maxabs * 2**frac) <= top (127; 255 for unsigned values; 7 for
    an all-zero value)."""
    if not np.isfinite(maxabs):
        raise ValueError("non-finite calibration value")
    if maxabs <= 0:
        return 7
    return int(np.clip(floor_log2(top / maxabs), FRAC_MIN, FRAC_MAX))


def fracs_for(maxabs: np.ndarray, top: int = 127) -> np.ndarray:
    """:func:`frac_for` of every value of ``maxabs`` (int64), vectorised: the same IEEE division
    and binary exponent (``frexp``) per value."""
    peaks = np.asarray(maxabs, dtype=np.float64)
    if not np.all(np.isfinite(peaks)):
        raise ValueError("non-finite calibration value")
    positive = peaks > 0
    with np.errstate(divide="ignore", over="ignore"):
        ratio = top / np.where(positive, peaks, 1.0)
    exponent = np.where(np.isfinite(ratio), np.frexp(ratio)[1].astype(np.int64) - 1, 1024)  # floor_log2
    return np.where(positive, np.clip(exponent, FRAC_MIN, FRAC_MAX), 7).astype(np.int64)


@functools.lru_cache(maxsize=64)
def sample_index(size: int) -> np.ndarray | None:
    """The flat indices (read-only) of the values a scale is chosen on, of a tensor of ``size``
    values (None: all of them), drawn from a generator seeded 0."""
    if size <= SAMPLE:
        return None
    index = np.random.default_rng(0).choice(size, SAMPLE, replace=False)
    index.setflags(write=False)
    return index


def sample(values: np.ndarray) -> np.ndarray:
    """``values`` flattened to float64, or the :data:`SAMPLE` of them at :func:`sample_index`."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    index = sample_index(v.size)
    return v if index is None else v[index]


def quant_error(v: np.ndarray, frac: int, unsigned: bool = False) -> float:
    """Mean squared error of 8-bit quantization of ``v`` at ``frac`` (codes 0..255 if unsigned)."""
    lo, hi = (0, 255) if unsigned else (-128, 127)
    q = np.clip(np.rint(v * 2.0 ** frac), lo, hi) * 2.0 ** -frac
    return float(((q - v) ** 2).mean()) if v.size else 0.0


def choose_frac(values: np.ndarray, method: str = "mse", unsigned: bool = False) -> int:
    """The frac of ``values`` by ``method`` (see the module docstring); ``unsigned`` values (never
    negative) have 256 levels from 0."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    top = 255 if unsigned else 127
    low = frac_for(float(np.abs(v).max()) if v.size else 0.0, top)
    if method == "minmax" or not v.size:
        return low
    if method == "percentile":
        return frac_for(float(np.percentile(np.abs(v), PERCENTILE)), top)
    if method != "mse":
        raise ValueError(f"unknown calibration method {method!r} (known: {', '.join(METHODS)})")
    v = sample(v)
    return min((quant_error(v, f, unsigned), f) for f in range(low, min(low + SEARCH_BITS, FRAC_MAX) + 1))[1]


QUANTILES = (1e-4, 1e-3)  # tails the MSE search may clip


def act_error(v: np.ndarray, frac: int, zp: int) -> float:
    """Mean squared error of int8 codes ``clip(round(v * 2**frac) + zp)`` read back as ``(q - zp) * 2**-frac``."""
    q = np.clip(np.rint(v * 2.0 ** frac) + zp, -128, 127)
    return float((((q - zp) * 2.0 ** -frac - v) ** 2).mean()) if v.size else 0.0


def _zp_low(low: float, frac: int) -> int:
    """The zero point whose lowest code -128 means ``low`` (<= 0)."""
    return int(np.clip(np.rint(-128 - low * 2.0 ** frac), -128, 127))


def _zp_high(high: float, frac: int) -> int:
    """The zero point whose highest code 127 means ``high`` (>= 0)."""
    return int(np.clip(np.rint(127 - high * 2.0 ** frac), -128, 127))


def _zp_shared(low: float, high: float, frac: int) -> int:
    """The zero point of a window of 256 codes at ``frac`` over [low, high] (low <= 0 <= high):
    where the window is wider than the range, the spare codes are shared between its two sides in
    proportion to the range's extent on each (a never-negative value keeps its lowest code at 0;
    a value about 0 gets equal margins), so values a little beyond the calibration's on either
    side are not clipped. A range wider than the window keeps its low end (the high end clips)."""
    spare = 255 * 2.0 ** -frac - (high - low)
    if spare <= 0 or high - low <= 0:
        zp = _zp_low(low, frac)
        return zp if (127 - zp) * 2.0 ** -frac >= high else _zp_high(high, frac)
    return _zp_low(low - spare * (-low) / (high - low), frac)


def value_range(v: np.ndarray, method: str) -> tuple[float, float]:
    """(low <= 0, high >= 0): the window's ends by ``minmax`` (the whole range) or ``percentile``
    (the 0.01 %..99.99 % range) of the (non-empty) values ``v``."""
    if method == "percentile":
        low, high = (float(p) for p in np.percentile(v, (100 - PERCENTILE, PERCENTILE)))
    else:
        low, high = float(v.min()), float(v.max())
    return min(low, 0.0), max(high, 0.0)


def choose_scale(values: np.ndarray, method: str = "mse", frac: int | None = None) -> tuple[int, int]:
    """(frac, zero point) of an activation: 256 codes over a window that holds 0 exactly, placed by
    ``method``: ``minmax`` covers the whole range, ``percentile`` the 0.01..99.99 % range, ``mse``
    searches the frac (from the whole range's up a few bits) and the window's position (its edges
    on the range's ends or on its 1e-4 and 1e-3 tails) for the least squared error.
    ``frac`` fixes the frac and only places the window."""
    if method not in METHODS:
        raise ValueError(f"unknown calibration method {method!r} (known: {', '.join(METHODS)})")
    v = sample(values)
    if not v.size:
        return (7 if frac is None else frac), 0
    low, high = value_range(v, "minmax")
    if method in ("minmax", "percentile"):
        low, high = value_range(v, method)
        f = frac_for(high - low, 255) if frac is None else frac
        return f, _zp_shared(low, high, f)
    first = frac_for(high - low, 255)
    fracs = range(first, min(first + SEARCH_BITS, FRAC_MAX) + 1) if frac is None else (frac,)
    lows = [low] + [min(float(q), 0.0) for q in np.quantile(v, QUANTILES)]
    highs = [high] + [max(float(q), 0.0) for q in np.quantile(v, [1 - q for q in QUANTILES])]
    best = None
    for f in fracs:
        for zp in {0, *(_zp_low(x, f) for x in lows), *(_zp_high(x, f) for x in highs)}:
            key = (act_error(v, f, zp), -f, zp)
            best = key if best is None or key < best else best
    return -best[1], best[2]


PER_CHANNEL_GAIN = 0.9  # per-channel fracs when they cut the weights' squared error below 90 %


def _row_errors(rows: np.ndarray, fracs: np.ndarray) -> np.ndarray:
    """Squared int8 quantization error of each row of ``rows`` at its frac (symmetric weights)."""
    scale = 2.0 ** fracs.reshape(-1, 1)
    q = np.multiply(rows, scale)  # the same operations as clip(rint(rows * scale)) / scale - rows, in place
    np.rint(q, out=q)
    np.clip(q, -127, 127, out=q)
    q /= scale
    q -= rows
    np.square(q, out=q)
    return q.sum(axis=1)


def weight_fracs(w: np.ndarray, per_channel_ok: bool) -> np.ndarray:
    """One frac per output channel (all equal unless per-channel scales help and are allowed),
    each chosen by MSE like ``choose_frac`` (vectorised over the channels)."""
    layer = choose_frac(w)
    fracs = np.full(w.shape[0], layer, dtype=np.int64)
    if not per_channel_ok:
        return fracs
    rows = w.reshape(w.shape[0], -1).astype(np.float64)
    peaks = np.abs(rows).max(axis=1)
    low = fracs_for(peaks)
    candidates = [np.minimum(low + k, FRAC_MAX) for k in range(SEARCH_BITS + 1)]
    errors = np.stack([_row_errors(rows, c) for c in candidates])  # (candidates, channels)
    channel = np.stack(candidates)[errors.argmin(axis=0), np.arange(len(rows))]
    return channel if errors.min(axis=0).sum() < PER_CHANNEL_GAIN * _row_errors(rows, fracs).sum() else fracs
