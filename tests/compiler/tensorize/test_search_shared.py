"""The search shared across buffer sizes (one candidate table per layer and the parameters but the
buffer sizes, estimates kept by schedule) gives exactly the answer of the per-configuration search:
``_ranked``'s candidates, the ``refine`` best by rough cycles (ties in order), timed one by one
with ``plan_estimate``."""

import heapq
import itertools

import pytest
from hypothesis import given, settings, strategies as st

from compiler.layers import Conv2D
from compiler.tensorize import search
from compiler.tensorize.estimate import plan_estimate
from compiler.tensorize.schedule import Plan, ScheduleError
from compiler.tensorize.search import Searched
from vdla_hw.config import Config
from vdla_hw.errors import ConfigError


def reference_search(layer, config, counts, refine=search.REFINE):
    """The search as it was before the sharing: every step for ``config`` alone."""
    found = search._ranked(layer, config, counts)
    if not found:
        raise ScheduleError(layer.name, "schedule", "no tiling fits")
    best, best_key = None, None
    for _, args in heapq.nsmallest(refine, found, key=lambda entry: entry[0]):
        plan = Plan(layer, config, search._schedule(args))
        est, count = plan_estimate(plan)
        if best_key is None or (est.cycles, count) < best_key:
            best, best_key = plan, (est.cycles, count)
    return Searched(best.schedule, best_key[0])


def buffer_configs(block: int, inps=(12, 14, 16, 17), wgts=(12, 15, 17), accs=(12, 14, 16, 17)):
    """Configurations that differ only in their buffer sizes (those the configuration accepts)."""
    out = []
    for inp, wgt, acc in itertools.product(inps, wgts, accs):
        try:
            out.append(Config.from_preset("osdi18", LOG_BLOCK=block, LOG_INP_BUFF_SIZE=inp, LOG_WGT_BUFF_SIZE=wgt,
                                          LOG_ACC_BUFF_SIZE=acc))
        except ConfigError:
            pass
    return out


def outcome(fn):
    try:
        return fn()
    except ScheduleError as err:
        return ("error", type(err).__name__)


layers = st.builds(
    lambda h, w, k, stride, ic, oc, n, shift, pcs: Conv2D(h=max(h, k), w=max(w, k), ic=ic, oc=oc, k=k, stride=stride,
                                                         pad=k // 2, n=n, shift=shift, per_channel_shift=pcs),
    h=st.integers(1, 20), w=st.integers(1, 20), k=st.sampled_from([1, 3, 5]), stride=st.integers(1, 2),
    ic=st.integers(1, 130), oc=st.integers(1, 130), n=st.integers(1, 2), shift=st.sampled_from([0, 7]),
    pcs=st.booleans())


@settings(max_examples=10, deadline=None)
@given(layer=layers, block=st.sampled_from([3, 4, 5]), counts=st.sampled_from([(1, 2), (1,), (2,), (3,)]))
def test_the_shared_search_answers_as_the_search_of_each_configuration(layer, block, counts):
    search._TABLES.clear(), search._ESTIMATES.clear()
    configs = buffer_configs(block)[::5]
    for config in configs:
        assert outcome(lambda: search._search(layer, config, counts, search.REFINE, None)) == \
            outcome(lambda: reference_search(layer, config, counts))
    assert len(search._TABLES) <= 1  # one table served every buffer size


@settings(max_examples=25, deadline=None)
@given(layer=layers, block=st.sampled_from([3, 4, 5]), counts=st.sampled_from([(1, 2), (1,), (3,)]),
       pick=st.integers(0, 10 ** 6))
def test_the_table_ranks_as_ranked_bit_for_bit(layer, block, counts, pick):
    """Every candidate of the table that fits, with its rough cycles (vectorised), equals
    ``_ranked``'s list exactly: the same floats, the same order."""
    configs = buffer_configs(block)
    config = configs[pick % len(configs)]
    try:
        table = search._Table(layer, config, counts)
    except ScheduleError:
        return
    for other in (config, configs[(pick // 7) % len(configs)]):
        try:
            expected = search._ranked(layer, other, counts)
        except ScheduleError:
            continue
        assert table.ranked(other) == expected


@pytest.mark.parametrize("block", [4, 5])
def test_resnet18_layers_on_the_sweeps_buffer_sizes(block):
    """ResNet-18's 3x3 and 1x1 shapes at 224 on the buffer sizes of examples/sweep_resnet18.json."""
    search._TABLES.clear(), search._ESTIMATES.clear()
    convs = [Conv2D(h=28, w=28, ic=128, oc=128, k=3, stride=1, pad=1, shift=8),
             Conv2D(h=14, w=14, ic=256, oc=512, k=1, stride=2, pad=0, shift=8)]
    for conv in convs:
        answers = set()
        for config in buffer_configs(block, (14, 15, 16), (15, 16, 17, 18), (16, 17)):
            got = outcome(lambda: search._search(conv, config, (1, 2), search.REFINE, None))
            assert got == outcome(lambda: reference_search(conv, config, (1, 2)))
            answers.add(got)
        assert search._table(conv, config, (1, 2)).ranked(config) == search._ranked(conv, config, (1, 2))
        assert len(answers) > 1  # the buffer sizes do change the answer: the test compares something
