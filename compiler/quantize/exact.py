"""Exact integer logarithms of floats, for the decisions that pick a shift or a frac.

``math.log2``/``np.log2`` may differ in the last bit between C libraries and numpy's SIMD
variants, and a floor or ceil of a result that lands next to an integer then flips; these read
the exponent of the float instead (``math.frexp``), which is exact everywhere.
"""

from __future__ import annotations

import math


def floor_log2(x: float) -> int:
    """floor(log2(x)) of a positive float; a value past float64's range (inf) counts as 2**1024."""
    return math.frexp(x)[1] - 1 if math.isfinite(x) else 1024


def ceil_log2(x: float) -> int:
    """ceil(log2(x)) of a positive finite float."""
    mantissa, exponent = math.frexp(x)
    return exponent - 1 if mantissa == 0.5 else exponent
