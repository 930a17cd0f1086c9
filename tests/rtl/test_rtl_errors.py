"""LOAD/STORE range errors in hardware: a transfer whose DRAM rows pass the image (DRAM_BYTES)
or whose SRAM footprint passes the SRAM depth (vdla_hw.program.check_transfer) stops the device
with ERROR dram_range / sram_range and ERROR_INSN = its index, before any beat of it moves,
exactly as the simulator's device model reports it; a token queue overflow likewise stops it with
ERROR token_overflow naming the pushing instruction; a good program after CLEAR still runs."""

from __future__ import annotations

import numpy as np
import pytest

from driver import status as st
from tests.driver.device_cases import out_of_range_bundle
from tests.hw import programs
from tests.hw.programs import ACC, INP, OUT, UOP, WGT
from vdla_hw import isa, regmap
from vdla_hw.bundle import BundleBuilder
from vdla_hw.errors import VdlaError
from driver.rtl_run import run_bundles
from vdla_sim import simulate

pytestmark = pytest.mark.rtl
E = regmap.ERROR_BITS
PRESET = "tiny"


def _build(make):
    """``make(b, elems)`` emits the program given ``elems(mem)``, the image size in elements of
    ``mem``; built twice so a transfer can end exactly at the image end (the instruction count,
    hence the image size, does not depend on field values)."""
    first = BundleBuilder(PRESET)
    make(first, lambda mem: 1000)
    size = first.build().dram.size
    b = BundleBuilder(PRESET)
    make(b, lambda mem: size // b.config.elem_bytes(mem))
    bundle = b.build()
    assert bundle.dram.size == size
    return bundle


def _prefix(b):
    """A few good instructions first, so the failing one is not instruction 0."""
    k = b.uops("k", [(0, 0, 0)])
    w = b.array("w", "wgt", np.ones((2, b.config.block_out, b.config.block_in), dtype=np.int8))
    b.emit("LOAD", memory_type=UOP, dram_base=k, y_size=1, x_size=1, x_stride=1)
    b.emit("LOAD", memory_type=WGT, dram_base=w, y_size=1, x_size=2, x_stride=2)


def wgt_rows_past_image(b, elems):
    _prefix(b)
    # 2 rows of 1 element, stride 1: the second row is the element just past the image
    b.emit("LOAD", memory_type=WGT, dram_base=elems("wgt") - 1, y_size=2, x_size=1, x_stride=1, push_next=1)
    b.emit("FINISH", pop_prev=1)  # FINISH waits for the load module (else it could end the run first)


def acc_load_past_image(b, elems):
    _prefix(b)
    b.emit("LOAD", memory_type=ACC, dram_base=elems("acc") - 2, y_size=1, x_size=3, x_stride=3)


def uop_load_past_image(b, elems):
    b.emit("LOAD", memory_type=UOP, dram_base=elems("uop") - 1, y_size=3, x_size=1, x_stride=7)


def store_rows_past_image(b, elems):
    """A STORE whose first row is inside the image and whose last is not: nothing is written."""
    _prefix(b)
    b.emit("LOAD", memory_type=ACC, push_next=1)
    b.emit("STORE", memory_type=OUT, dram_base=0, y_size=3, x_size=2, x_stride=max(1, elems("out") // 2),
           pop_prev=1, push_prev=1)
    b.emit("FINISH", pop_next=1)


def load_ends_at_image_end(b, elems):
    """Good: the last element read is the image's last."""
    _prefix(b)
    b.emit("LOAD", memory_type=WGT, dram_base=elems("wgt") - 4, y_size=2, x_size=1, x_stride=3)
    b.emit("LOAD", memory_type=INP, dram_base=elems("inp") - 3, y_size=1, x_size=3, x_stride=3, push_next=1)
    b.emit("FINISH", pop_prev=1)


def inp_footprint_past_depth(b, elems):
    """Padding makes the footprint (2+1+1) x (3+2) = 20 elements; sram_base puts it 1 past."""
    _prefix(b)
    depth = b.config.depth("inp")
    b.emit("LOAD", memory_type=INP, sram_base=depth - 19, dram_base=0, y_size=2, x_size=3, x_stride=3,
           y_pad_top=1, y_pad_bottom=1, x_pad_left=1, x_pad_right=1, push_next=1)
    b.emit("FINISH", pop_prev=1)


def inp_footprint_at_depth(b, elems):
    """Good: the same footprint ending exactly at the last SRAM element."""
    _prefix(b)
    depth = b.config.depth("inp")
    b.emit("LOAD", memory_type=INP, sram_base=depth - 20, dram_base=0, y_size=2, x_size=3, x_stride=3,
           y_pad_top=1, y_pad_bottom=1, x_pad_left=1, x_pad_right=1, push_next=1)
    b.emit("FINISH", pop_prev=1)


def store_past_out_depth(b, elems):
    _prefix(b)
    depth = b.config.depth("out")
    b.emit("LOAD", memory_type=ACC, push_next=1)
    b.emit("STORE", memory_type=OUT, sram_base=depth - 5, dram_base=0, y_size=2, x_size=3, x_stride=3,
           pop_prev=1, push_prev=1)
    b.emit("FINISH", pop_next=1)


def both_past(b, elems):
    """SRAM and DRAM both out of range: sram_range, as check_transfer tests it first."""
    depth = b.config.depth("acc")
    b.emit("LOAD", memory_type=ACC, sram_base=depth - 1, dram_base=elems("acc"), y_size=1, x_size=2, x_stride=2)


def token_overflow(queue):
    """The 17th push into a token queue of 16 that nothing pops: ERROR_INSN names the pushing
    instruction, which is the queue's producer's (vdla_hw.isa.TOKEN_ENDS). Only compute's queues:
    FINISH is compute's, after the pushes; a load or store module overflowing after FINISH
    retired (nothing can make FINISH wait for it) finds the device already done."""
    b = BundleBuilder(PRESET)
    pusher, _ = isa.TOKEN_ENDS[queue]
    flag = next(f for (m, f), q in isa.FLAG_QUEUE.items() if m == pusher and q == queue and f.startswith("push"))
    kind, mem = {"load": ("LOAD", INP), "compute": ("LOAD", ACC), "store": ("STORE", OUT)}[pusher]
    b.emit("LOAD", memory_type=INP)
    for _ in range(b.config.TOKEN_QUEUE_DEPTH + 1):
        b.emit(kind, memory_type=mem, **{flag: 1})
    b.emit("FINISH")
    return b.build()


ERRORS = {
    "driver_case": (lambda: out_of_range_bundle(PRESET), "dram_range", 0),
    "wgt_rows_past_image": (lambda: _build(wgt_rows_past_image), "dram_range", 2),
    "acc_load_past_image": (lambda: _build(acc_load_past_image), "dram_range", 2),
    "uop_load_past_image": (lambda: _build(uop_load_past_image), "dram_range", 0),
    "store_rows_past_image": (lambda: _build(store_rows_past_image), "dram_range", 3),
    "inp_footprint_past_depth": (lambda: _build(inp_footprint_past_depth), "sram_range", 2),
    "store_past_out_depth": (lambda: _build(store_past_out_depth), "sram_range", 3),
    "both_past": (lambda: _build(both_past), "sram_range", 0),
    **{f"token_overflow_{q}": (lambda q=q: token_overflow(q), "token_overflow", 17)
       for q, (pusher, _) in isa.TOKEN_ENDS.items() if pusher == "compute"},
}
GOOD = {
    "load_ends_at_image_end": lambda: _build(load_ends_at_image_end),
    "inp_footprint_at_depth": lambda: _build(inp_footprint_at_depth),
    "blocked_matmul": lambda: programs.blocked_matmul(PRESET)[0],
}


def _sim_error(bundle):
    """(ERROR bits, ERROR_INSN) the simulator's device model reports for ``bundle``."""
    try:
        simulate(bundle)
    except VdlaError as err:
        return st.error_bits_for(err)
    return None


@pytest.fixture(scope="module", params=["icarus", "verilator"])
def runs(request):
    """Every error case, each followed by a good program (CLEAR recovers), in one simulation."""
    names, bundles, budgets = [], [], []
    good = list(GOOD.items())
    for k, (name, (make, _, _)) in enumerate(ERRORS.items()):
        gname, gmake = good[k % len(good)]
        for n, bundle in ((name, make()), (f"{name}/then/{gname}", gmake())):
            names.append(n)
            bundles.append(bundle)
            budgets.append(20_000)
    for gname, gmake in good:
        names.append(gname)
        bundles.append(gmake())
        budgets.append(20_000)
    results = run_bundles(bundles, request.param, budgets=budgets)
    return {n: (b, r) for n, b, r in zip(names, bundles, results)}


@pytest.mark.parametrize("name", list(ERRORS))
def test_range_error_stops_the_device_naming_the_instruction(runs, name):
    _, bit, index = ERRORS[name]
    bundle, res = runs[name]
    assert _sim_error(bundle) == (E[bit], index), "the case must be the simulator's error too"
    assert not res.timeout, f"{name}: the device hung"
    assert res.status & regmap.STATUS_ERROR and not res.status & regmap.STATUS_DONE
    assert res.error == E[bit], f"{name}: ERROR {st.describe_error(res.error, res.error_insn)}, expected {bit}"
    assert res.error_insn == index
    # a range error stops the instruction before it retires (a push, and so an overflow, happens
    # in its instruction's retire cycle: docs/rtl.md), and no STORE wrote anything
    assert bit == "token_overflow" or all(r[0] != index for r in res.retire)
    assert np.array_equal(res.dram, bundle.dram)


@pytest.mark.parametrize("name", [n for n in ERRORS] + list(GOOD))
def test_good_programs_run_like_the_simulator(runs, name):
    key = name if name in GOOD else next(n for n in runs if n.startswith(name + "/then/"))
    bundle, res = runs[key]
    sim = simulate(bundle)
    assert not res.timeout and res.done and not res.error, st.describe_error(res.error, res.error_insn)
    assert res.cycles == sim.cycles
    assert np.array_equal(res.dram, sim.dram)
