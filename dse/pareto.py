"""Pareto fronts of a sweep's points.

A point is on the front when no other point of the same model is at least as good in every
objective and strictly better in one (:data:`dse.metrics.OBJECTIVES` says which are
minimised and which maximised). Only points with status ``ok`` and a value for every objective
take part (a configuration the RTL does not implement has no resources, so it cannot be on a
front that includes one).
"""

from __future__ import annotations

import numpy as np

from dse.metrics import OBJECTIVES


def _usable(row: dict, objectives) -> bool:
    return row.get("status") == "ok" and all(isinstance(row.get(o), (int, float)) and not isinstance(row.get(o), bool)
                                             and np.isfinite(row[o]) for o in objectives)


def front_mask(values: np.ndarray) -> np.ndarray:
    """Boolean mask of the non-dominated rows of ``values`` (n x k, every column minimised)."""
    n = len(values)
    keep = np.ones(n, dtype=bool)
    for i in range(n):
        others = values[np.arange(n) != i]
        dominated = np.any(np.all(others <= values[i], axis=1) & np.any(others < values[i], axis=1))
        keep[i] = not dominated
    return keep


def pareto_rows(rows: list[dict], objectives) -> list[dict]:
    """The rows on the Pareto front of ``objectives``, per model, in their original order."""
    out = []
    for model in dict.fromkeys(r.get("model") for r in rows):
        mine = [r for r in rows if r.get("model") == model and _usable(r, objectives)]
        if not mine:
            continue
        values = np.array([[OBJECTIVES[o] * float(r[o]) for o in objectives] for r in mine])
        out += [r for r, keep in zip(mine, front_mask(values)) if keep]
    return out
