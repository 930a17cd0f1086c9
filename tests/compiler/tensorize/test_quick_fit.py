"""The search's buffer pre-filter (``search._quick_fit``) by hand: each buffer's need, the
accumulator's including one vector per output-channel block for the bias and, with per-channel
shifts, one more for the shifts (``Plan.vectors``)."""

import dataclasses

import pytest

from compiler.layers import Conv2D
from compiler.tensorize import search
from compiler.tensorize.schedule import Plan, Schedule
from vdla_hw.config import load_config

LAYER = Conv2D(h=8, w=8, ic=16, oc=16, k=3, stride=1, pad=1, n=1, shift=0)
BIG = 10 ** 6


def _probe(layer):
    return Plan(layer, load_config("tiny"), Schedule(th=1, tw=1, toc=1, tic=1, tky=1))


@pytest.mark.parametrize("per_channel, acc_need", [(False, 1 + 4), (True, 2 + 4)])
def test_accumulator_need_counts_the_bias_and_shift_vectors(per_channel, acc_need):
    probe = _probe(dataclasses.replace(LAYER, per_channel_shift=per_channel))
    assert probe.vectors == (2 if per_channel else 1)
    fits = lambda acc, t=1, toc=1: search._quick_fit(probe, 2, 2, toc, 1, t, 3, {"inp": BIG, "wgt": BIG, "acc": acc})
    assert fits(acc_need) and not fits(acc_need - 1)                 # th * tw = 4 accumulators + the vectors
    assert fits(2 * 3 * acc_need, t=2, toc=3) and not fits(2 * 3 * acc_need - 1, t=2, toc=3)


def test_input_and_weight_needs():
    probe = _probe(LAYER)
    # inp: t * tic * rows * cols = 1 * 2 * (2 - 1 + 3) * (2 - 1 + 3); wgt: t * toc * tic * tky * k = 1 * 1 * 2 * 3 * 3
    fits = lambda inp, wgt: search._quick_fit(probe, 2, 2, 1, 2, 1, 3, {"inp": inp, "wgt": wgt, "acc": BIG})
    assert fits(32, 18) and not fits(31, 18) and not fits(32, 17)
