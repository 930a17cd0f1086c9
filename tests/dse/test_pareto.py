"""Pareto fronts: hand cases and, over generated point sets, the two defining properties."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dse.pareto import front_mask, pareto_rows


def test_hand_case_with_a_tie_and_a_dominated_point():
    values = np.array([[1, 5], [2, 2], [5, 1], [3, 3], [2, 2]])
    assert front_mask(values).tolist() == [True, True, True, False, True]


def test_maximised_objectives_and_models_are_separate():
    rows = [{"model": "a", "status": "ok", "latency_s": 1.0, "speedup": 2.0},
            {"model": "a", "status": "ok", "latency_s": 2.0, "speedup": 3.0},
            {"model": "a", "status": "ok", "latency_s": 2.0, "speedup": 1.0},
            {"model": "b", "status": "ok", "latency_s": 9.0, "speedup": 0.5},
            {"model": "b", "status": "invalid", "latency_s": None, "speedup": None}]
    front = pareto_rows(rows, ("latency_s", "speedup"))
    assert front == [rows[0], rows[1], rows[3]]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(*[st.integers(0, 6)] * 3), min_size=1, max_size=40))
def test_front_is_undominated_and_dominates_the_rest(points):
    values = np.array(points, dtype=float)
    mask = front_mask(values)

    def dominates(a, b):
        return np.all(a <= b) and np.any(a < b)

    front = values[mask]
    assert not any(dominates(a, b) for a in values for b in front)
    assert all(any(dominates(a, b) for a in front) for b in values[~mask])
