"""The simulator's work bound priced from the GEMM plan that will run (vdla_sim/cost.py; issue
45): real layers that the slowest-plan price refused are within it, the pricing never calls a
loop a product plan that GemmPlan would run per uop, uops a STORE may overwrite and uops past
the pricing's budget get the slowest price, and hostile long loops are still refused at once."""

from __future__ import annotations

import time

import numpy as np
import pytest

from compiler.accel import compile_layer
from compiler.layers import Conv2D
from vdla_hw import isa, limits, program
from vdla_hw.bundle import BundleBuilder
from vdla_hw.config import load_config
from vdla_hw.errors import LimitError
from vdla_sim import cost, datapath, gemm, simulate
from vdla_sim.prepared import prepare

# The heaviest accelerator programs of torchvision's VGG-11 (BatchNorm) at 224 and fcn_resnet50 at
# 160 (its layer3/layer4 dilated by 2 and 4 at 20 x 20, compiled as 5x5 and 9x9 kernels with
# zero taps; its FCN head 3x3 2048 -> 512), on vdla run's default configuration.
HEAVIEST = {"vgg11_bn 3x3 256->256 at 56": dict(h=56, ic=256, oc=256, k=3, pad=1),
            "vgg11_bn 3x3 512->512 at 28": dict(h=28, ic=512, oc=512, k=3, pad=1),
            "fcn_resnet50 head 3x3 2048->512 at 20": dict(h=20, ic=2048, oc=512, k=3, pad=1),
            "fcn_resnet50 layer4 3x3 dilation 4 512->512 at 20": dict(h=20, ic=512, oc=512, k=9, pad=4)}


@pytest.mark.slow
@pytest.mark.parametrize("name", HEAVIEST)
def test_the_heaviest_layers_are_within_the_bound_priced_by_their_plan(name):
    """Each is within the bound priced by its plans (every GEMM a product plan); at the slowest
    plan they pass it (fcn's) or come close (VGG's, which the old ALU price of 2,048 per uop
    took past it)."""
    shape = HEAVIEST[name]
    bundle = compile_layer(Conv2D(n=1, w=shape["h"], **shape), "osdi18")
    insns = prepare(bundle).insns
    worst = cost.worst_units(insns, bundle.config)
    assert worst > (limits.SIM_MAX_WORK if "fcn" in name else 1 << 30)
    per = cost.units(bundle, insns)
    prices = cost.Prices(bundle.config)
    gemms = [(i, u) for i, u in zip(insns, per) if i.kind == "GEMM" and not i.reset]
    assert gemms and all(u == prices.gemm(i, "product") for i, u in gemms)
    assert sum(per) <= limits.SIM_MAX_WORK
    assert cost.program_work(bundle) == sum(per)


def _random_loop(rng, config, shape: str):
    """A GEMM (fields) and its uop rows: conv-like, dense-like or irregular."""
    acc, inp, wgt = config.depth("acc"), config.depth("inp"), config.depth("wgt")
    if shape == "conv":
        taps, oc = int(rng.integers(1, 5)), int(rng.integers(1, 6))
        pixels = int(rng.integers(4, max(5, acc // (2 * oc))))
        rows = [(p, p + t, t) for t in range(taps) for p in range(pixels)]
        fields = dict(iter_out=oc, iter_in=int(rng.integers(1, 4)), dst_factor_out=pixels + int(rng.integers(-1, 2)),
                      wgt_factor_out=taps * int(rng.integers(0, 2)), src_factor_in=int(rng.integers(0, 3)),
                      wgt_factor_in=int(rng.integers(0, 2)))
    elif shape == "dense":
        width = int(rng.integers(4, 12))
        rows = [(u, 0, u) for u in range(width)]
        fields = dict(iter_out=int(rng.integers(1, 5)), iter_in=int(rng.integers(1, 5)),
                      dst_factor_out=width + int(rng.integers(-2, 2)), src_factor_out=1, src_factor_in=int(rng.integers(0, 2)),
                      wgt_factor_in=width * int(rng.integers(0, 2)), dst_factor_in=int(rng.integers(0, 2)) * width)
    else:
        n = int(rng.integers(4, 90))
        rows = [(int(rng.integers(0, min(acc, 128))), int(rng.integers(0, inp)), int(rng.integers(0, wgt)))
                for _ in range(n)]
        fields = {f: int(rng.integers(0, 3)) for f in ("dst_factor_out", "dst_factor_in", "src_factor_out",
                                                        "src_factor_in", "wgt_factor_out", "wgt_factor_in")}
        fields.update(iter_out=int(rng.integers(1, 6)), iter_in=int(rng.integers(1, 6)))
    insn = isa.Insn("GEMM", uop_bgn=0, uop_end=len(rows), **fields)
    return insn, np.asarray(rows, dtype=np.int64)


@pytest.mark.parametrize("config", ["tiny", "osdi18"])
def test_a_loop_priced_as_products_is_planned_as_products_whole_and_in_pieces(config):
    """vdla_sim/cost.py's product_plan is sufficient: whenever it says 'product', GemmPlan plans
    the loop, and every piece loop_chunks cuts it into, as dense or grouped products."""
    cfg = load_config(config)
    rng = np.random.default_rng(45)
    said = {True: 0, False: 0}
    for k in range(150):
        insn, rows = _random_loop(rng, cfg, ("conv", "dense", "irregular")[k % 3])
        product = cost.product_plan(insn, rows)
        said[product] += 1
        if product:
            assert gemm.GemmPlan(insn, rows, cfg).kind in ("dense", "grouped"), (insn, rows)
            for piece, piece_rows, _ in program.loop_chunks(insn, rows, max(len(rows), 7)):
                assert gemm.GemmPlan(piece, piece_rows, cfg).kind in ("dense", "grouped"), (insn, rows)
    assert min(said.values()) > 10, said  # both answers are exercised


def _conv_program(store_over_uops: bool):
    """A conv-like GEMM after its uop LOAD; with ``store_over_uops`` a STORE writes the uops'
    DRAM bytes and a second LOAD reads them back before a second GEMM."""
    b = BundleBuilder("osdi18")
    c = b.config
    table = [(p, p + t, t) for t in range(4) for p in range(64)]
    k = b.uops("k", table)
    b.emit("LOAD", memory_type=0, dram_base=k, y_size=1, x_size=len(table), x_stride=len(table))
    fields = dict(uop_end=len(table), iter_out=4, iter_in=2, dst_factor_out=64, wgt_factor_out=4, src_factor_in=68)
    b.emit("GEMM", **fields)
    if store_over_uops:  # out elements are BATCH x BLOCK_OUT bytes: element k*4 // 16 holds uop word k
        b.emit("GEMM", **fields, push_next=1)
        out_elem = c.elem_bytes("out")
        b.emit("STORE", memory_type=4, dram_base=k * 4 // out_elem, y_size=1, x_size=2, x_stride=2, pop_prev=1,
               push_prev=1)
        b.emit("LOAD", memory_type=0, dram_base=k, y_size=1, x_size=len(table), x_stride=len(table), pop_next=1)
        b.emit("GEMM", **fields)
    return b.build()


def test_uops_a_store_may_overwrite_get_the_slowest_price():
    """Any STORE of the program over a uop LOAD's DRAM bytes makes that LOAD's uops unknown (the
    modules run concurrently; the pricing does not follow tokens), so every GEMM reading them
    is priced at the slowest plan."""
    for overwrite in (False, True):
        bundle = _conv_program(overwrite)
        insns = prepare(bundle).insns
        prices = cost.Prices(bundle.config)
        plans = [("product" if u == prices.gemm(i, "product") else "entry")
                 for i, u in zip(insns, cost.units(bundle, insns)) if i.kind == "GEMM"]
        assert plans == (["entry"] * 3 if overwrite else ["product"])


def test_past_the_pricing_budget_gemms_get_the_slowest_price(monkeypatch):
    bundle = _conv_program(False)
    insns = prepare(bundle).insns
    prices = cost.Prices(bundle.config)
    gemm_insn = next(i for i in insns if i.kind == "GEMM")
    assert cost.units(bundle, insns)[1] == prices.gemm(gemm_insn, "product")
    monkeypatch.setattr(cost, "READ_ROWS", 300)  # the LOAD's 256 rows, not the GEMM's key as well
    assert cost.units(bundle, insns)[1] == prices.gemm(gemm_insn, "entry")
    monkeypatch.setattr(cost, "READ_ROWS", 100)  # not even the LOAD
    assert cost.units(bundle, insns)[1] == prices.gemm(gemm_insn, "entry")
    monkeypatch.setattr(cost, "READ_ROWS", 1 << 20)
    monkeypatch.setattr(cost, "ANALYSIS_ROWS", 100)  # no analysis
    assert cost.units(bundle, insns)[1] == prices.gemm(gemm_insn, "entry")


def _never_runs(monkeypatch):
    def never(*args):
        raise AssertionError("the simulator started")

    monkeypatch.setattr(datapath.Datapath, "execute", never)


def test_a_2_to_the_40_uop_gemm_of_product_plans_is_refused_in_under_a_second(monkeypatch):
    """1,366 GEMMs of 16383 x 16383 x 3 uops (2**40 in all), each a grouped product plan: priced
    from that plan, it is still hours of work; refused before anything runs."""
    b = BundleBuilder("osdi18")
    k = b.uops("k", [(0, 0, 0), (1, 0, 0), (2, 0, 0)])
    b.emit("LOAD", memory_type=0, dram_base=k, y_size=1, x_size=3, x_stride=3)
    for _ in range(1366):
        b.emit("GEMM", uop_end=3, iter_out=16383, iter_in=16383)
    bundle = b.build()
    _never_runs(monkeypatch)
    start = time.process_time()
    with pytest.raises(LimitError, match=r"instruction 1 \(GEMM\) brings the program's work on the simulator past "
                                         r"the limit of 2,147,483,648 multiply-add equivalents: it needs [\d,]+ in all, "
                                         r"about [\d,]+ days"):
        simulate(bundle)
    assert time.process_time() - start < 1.0
    insns = prepare(bundle).insns
    assert cost.units(bundle, insns)[1] == cost.Prices(bundle.config).gemm(insns[1], "product")


def test_an_alu_loop_on_one_accumulator_is_still_refused_in_under_a_second(monkeypatch):
    b = BundleBuilder("osdi18")
    k = b.uops("k", [(0, 0, 0)])
    b.emit("LOAD", memory_type=0, dram_base=k, y_size=1, x_size=1, x_stride=1)
    b.emit("ALU", uop_end=1, iter_out=16383, iter_in=16383, alu_opcode=0, use_imm=1, imm=1)
    bundle = b.build()
    _never_runs(monkeypatch)
    start = time.process_time()
    with pytest.raises(LimitError, match=r"instruction 1 \(ALU\) brings the program's work on the simulator past"):
        simulate(bundle)
    assert time.process_time() - start < 1.0


def test_the_limits_rates_are_no_faster_than_the_recorded_benchmark():
    """vdla_hw/limits.py's plan rates name benchmarks/work_bounds.py as their source: each is at
    most the recorded measurement (a price at least the measured time)."""
    from benchmarks import record

    figures = record.read_all()["work_bounds"]["figures"]
    assert limits.SIM_GEMM_PRODUCT_UOPS_PER_S <= figures["product_uops_per_s_tiny"]
    assert limits.SIM_GEMM_PRODUCT_MACS_PER_S <= figures["product_macs_per_s_osdi18"]
    assert limits.SIM_GEMM_RESET_UOPS_PER_S <= figures["reset_uops_per_s"]
    assert limits.SIM_GEMM_PIECE_WORK >= limits.SIM_WORK_PER_S / figures["groups64_insns_per_s"]
    assert limits.SIM_ALU_UOP_WORK >= limits.SIM_WORK_PER_S / figures["alu_uops_per_s"]
    # the slowest plan's price (SIM_WORK_PER_S per multiply-add) is no faster than that plan measured
    assert limits.SIM_WORK_PER_S <= figures["entry_macs_per_s_osdi18"]
