"""Schedules and plans: clear errors for bad schedules; any feasible tiling stores every output
element exactly once and keeps each thread inside its buffer slices."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from compiler.accel import compile_layer
from compiler.layers import Conv2D
from compiler.tensorize.schedule import Plan, Schedule, ScheduleError
from compiler.tensorize.search import candidates
from vdla_hw.config import load_config

LAYER = Conv2D(name="convS", h=10, w=9, ic=20, oc=40, k=3, stride=1, pad=1)


@pytest.mark.parametrize("text, field", [
    ("th=0,tw=1,toc=1,tic=1", "schedule.th"), ("th=1,tw=1,toc=11,tic=1", "schedule.toc"), ("th=1,tw=1,toc=1,tic=1,tky=2", "schedule.tky"),
    ("th=1,tw=1,toc=1,tic=1,vthreads=0", "schedule.vthreads"), ("th=1,tw=1,toc=1,tic=1,order=zigzag", "schedule.order"),
    ("th=x,tw=1,toc=1,tic=1", "schedule.th"), ("th=10,tw=9,toc=10,tic=5,vthreads=4", "schedule")])
def test_bad_schedule_names_layer_and_field(text, field):
    with pytest.raises(ScheduleError, match=rf"layer convS: {field}"):
        Plan(LAYER, load_config("tiny"), Schedule.parse(text, "convS"))


def test_schedule_text_roundtrip():
    s = Schedule(th=3, tw=4, toc=2, tic=1, vthreads=2, order="oc")
    assert Schedule.parse(s.text()) == s


def stored_elements(bundle):
    """Output element indices written by every STORE, with multiplicity."""
    out = bundle.symbols["out"]
    hits = []
    for insn in bundle.insns():
        if insn.kind == "STORE" and insn.x_size:
            for r in range(insn.y_size):
                start = insn.dram_base + r * insn.x_stride - out.index
                hits.extend(range(start, start + insn.x_size))
    return np.array(hits), out.count


@settings(max_examples=30)
@given(h=st.integers(1, 9), w=st.integers(1, 9), k=st.sampled_from([1, 3]), stride=st.integers(1, 2),
       ic=st.integers(1, 24), oc=st.integers(1, 24), config=st.sampled_from(["tiny", "osdi18"]), pick=st.randoms())
def test_every_output_stored_exactly_once(h, w, k, stride, ic, oc, config, pick):
    layer = Conv2D(h=h, w=w, ic=ic, oc=oc, k=k, stride=stride, pad=k // 2)
    plans = candidates(layer, load_config(config), (1, 2, 3))
    plan = pick.choice(plans)
    bundle = compile_layer(layer, config, schedule=plan.schedule)
    hits, count = stored_elements(bundle)
    assert (np.bincount(hits, minlength=count) == 1).all(), plan.schedule


def test_thread_slices_are_disjoint():
    plan = Plan(LAYER, load_config("osdi18"), Schedule(th=5, tw=9, toc=2, tic=1, vthreads=3))
    for mem, part in (("inp", plan.inp_part), ("wgt", plan.wgt_part), ("acc", plan.acc_part)):
        assert 3 * part <= plan.config.depth(mem)
