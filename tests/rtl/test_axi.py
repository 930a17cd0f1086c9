"""The FPGA top (vdla_axi_top, AXI3 for the configuration's PS port, HP0 or ACP) against the simulator, on a memory that answers
with the configuration's latency (then the CYCLES register and vdla_sim's cycles are the same
number, and the bench's wall-clock count from the START handshake to irq is CYCLES + 2, as
docs/spec.md section 5 says; it is 2 more than CYCLES under stalls too) and on one that stalls every channel at random and adds
extra latency (then the final image is still bit-exact and the cycles only grow), with the
AXI / AXI-lite protocol checker watching every cycle: fixed corpus, random programs and
compiled layers. Bus error responses (SLVERR, DECERR) stop the device with ERROR and
ERROR_INSN, and the next program runs normally: nothing hangs, nothing is left on the bus.

Verilator's default bench is the compiled one (C++ memory); tiny under stalls and the bus errors
under stalls also run on the cocotb bench (cocotbext-axi's channel drivers and pause
generators: an independent memory model, and an AXI-lite master pausing its five channels too). The fast subset (tiny) runs by default; osdi18 and
vta-pynq at 0 %, 30 % and 70 % stall are marked slow (CI runs them too)."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.accel import compile_layer
from compiler.layers import Conv2D, Dense
from driver import status as st
from driver.rtl_run import MemoryOptions, run_bundles
from tests.hw.programs import fixed_corpus
from tests.sim.sweep_programs import sweep_corpus
from vdla_hw import regmap
from vdla_hw.config import load_config
from vdla_hw.rtl.axi_check import rule_names
from vdla_sim import simulate
from vdla_sim.progen import random_program

pytestmark = pytest.mark.rtl

# tiny on the ACP: its 3-bit IDs, AxUSER and the ACP's outstanding limits (vdla_hw.presets.PORTS)
TINY_ACP = '{"preset": "tiny", "MEM_PORT": "acp", "MEM_READ_OUTSTANDING": 7, "MEM_WRITE_OUTSTANDING": 3}'
RANDOM = {"tiny": 20, "osdi18": 12, "vta-pynq": 12, TINY_ACP: 20}
CONFIGS = [("tiny", 0.0, "compiled"), ("tiny", 0.5, "compiled"), ("tiny", 0.5, "cocotb"),
           (TINY_ACP, 0.0, "compiled"), (TINY_ACP, 0.5, "cocotb")] + [
    pytest.param(p, s, "compiled", marks=pytest.mark.slow) for p in ("osdi18", "vta-pynq") for s in (0.0, 0.3, 0.7)]


def layers(preset: str) -> list:
    """Small compiled layers: a padded 3x3 conv with two virtual threads, a strided 1x1, a dense."""
    c = load_config(preset)
    ch = 2 * c.block_in
    convs = [(Conv2D(name="a", h=5, w=4, ic=ch, oc=ch, k=3, stride=1, pad=1, shift=7, relu=True), 2),
             (Conv2D(name="b", h=6, w=6, ic=ch, oc=c.block_out, k=1, stride=2, pad=0, shift=5, relu=False), 1),
             (Dense(name="c", n=1, ic=ch + 3, oc=c.block_out + 1, shift=6, relu=False), 1)]
    return [(f"layer_{layer.name}", compile_layer(layer, c, vthreads=vt, seed=5)) for layer, vt in convs]


def corpus(preset: str) -> list:
    return list(fixed_corpus(preset)) + [(f"random{s}", random_program(s, preset)) for s in range(RANDOM[preset])] \
        + layers(preset) + sweep_corpus(load_config(preset)) \
        + [(f"repeats{s}", random_program(s, preset, repeats=True)) for s in range(4)]


_cache: dict = {}


def runs(preset: str, stall: float, bench: str = "compiled") -> list:
    key = (preset, stall, bench)
    if key not in _cache:
        progs = corpus(preset)
        sims = [simulate(b, allow_vta_hazards=True) for _, b in progs]
        res = run_bundles([b for _, b in progs], "verilator", top="axi", budgets=[20 * s.cycles + 10_000 for s in sims],
                          memory=MemoryOptions(stall=stall, seed=12, axil_stall=stall if bench == "cocotb" else 0.0),
                          bench=bench)
        _cache[key] = list(zip([n for n, _ in progs], sims, res))
    return _cache[key]


@pytest.mark.parametrize("preset,stall,bench", CONFIGS)
def test_fpga_top_on_the_axi_memory_matches_the_simulator(preset, stall, bench):
    wrong = []
    for name, sim, rtl in runs(preset, stall, bench):
        checks = rtl.axi_checks
        problems = []
        if rtl.timeout or rtl.error:
            problems.append(f"stopped: {rtl.message}")
        if not np.array_equal(rtl.dram, sim.dram):
            problems.append(f"image differs in {int((rtl.dram != sim.dram).sum())} bytes")
        if checks["violations"] or checks["checks"] == 0 or checks["left_outstanding"]:
            problems.append(f"AXI checks {checks} ({rule_names(checks['rules'])})")
        if rtl.wall_cycles != rtl.cycles + regmap.IRQ_AFTER_CYCLES:   # docs/spec.md section 5, "Cycles"
            problems.append(f"wall-clock {rtl.wall_cycles} != CYCLES {rtl.cycles} + {regmap.IRQ_AFTER_CYCLES}")
        if stall == 0 and rtl.cycles != sim.cycles:
            problems.append(f"cycles {rtl.cycles}, simulator {sim.cycles}")
        if stall > 0 and rtl.cycles < sim.cycles:
            problems.append(f"cycles {rtl.cycles} below the simulator's {sim.cycles} under stalls")
        if sum(rtl.counters[m] for m in ("load", "compute", "store")) != len([r for r in sim.retire if r]):
            problems.append(f"instruction counters {rtl.counters}")
        if problems:
            wrong.append(f"{name}: " + "; ".join(problems))
    assert not wrong, f"{preset} at {stall:.0%} stall ({bench} bench):\n" + "\n".join(wrong)


def test_stalls_slow_the_bus_down():
    """Under stalls the same programs take longer (the stalls are real), never shorter."""
    fast, slow = runs("tiny", 0.0), runs("tiny", 0.5)
    assert sum(r.cycles for _, _, r in slow) > 1.2 * sum(r.cycles for _, _, r in fast)


def _error_cases():
    """(name, bundle, poisoned byte ranges, expected ERROR bit, expected ERROR_INSN)."""
    from tests.rtl.conftest import alu_chain

    progs = dict(fixed_corpus("tiny"))
    mm, ls, chain = progs["matmul"], progs["load_store"], alu_chain("tiny")
    store = next(i for i, insn in enumerate(ls.insns()) if insn.kind == "STORE")
    out = ls.insns()[store].dram_base * ls.config.elem_bytes("out")
    chunk = ls.config.MEM_MAX_BURST * ls.config.MEM_BYTES_PER_BEAT   # fetch reads 8 instructions at a time
    return [
        ("fetch_slverr", mm, [(mm.insn_offset, mm.insn_offset + 16, "slverr")], "axi_slverr", 0),
        ("fetch_decerr_second_chunk", chain, [(chain.insn_offset + chunk, chain.dram.size, "decerr")], "axi_decerr",
         chunk // 16),
        ("load_slverr", mm, [(0, mm.insn_offset, "slverr")], "axi_slverr", 0),
        ("store_decerr", ls, [(out, out + 8, "decerr")], "axi_decerr", store),
    ]


@pytest.mark.parametrize("stall,bench", [(0.0, "compiled"), (0.5, "compiled"), (0.5, "cocotb")])
def test_bus_errors_stop_the_device_and_never_hang(stall, bench):
    cases = _error_cases()
    bundles, poison = [], []
    good = dict(fixed_corpus("tiny"))["matmul"]
    for _, bundle, ranges, _, _ in cases:
        bundles += [bundle, good]
        poison += [ranges, []]
    res = run_bundles(bundles, "verilator", top="axi", budgets=[20_000] * len(bundles), poison=poison,
                      memory=MemoryOptions(stall=stall, seed=3, axil_stall=stall if bench == "cocotb" else 0.0),
                      bench=bench)
    ref = simulate(good)
    for k, (name, bundle, _, bit, index) in enumerate(cases):
        bad, after = res[2 * k], res[2 * k + 1]
        assert not bad.timeout, f"{name}: the device hung"
        assert bad.status & regmap.STATUS_ERROR and bad.error == regmap.ERROR_BITS[bit], \
            f"{name}: {st.describe_error(bad.error, bad.error_insn)}, expected {bit}"
        assert bad.error_insn == index, f"{name}: ERROR_INSN {bad.error_insn}, expected {index}"
        assert bad.axi_checks["violations"] == 0 and bad.axi_checks["left_outstanding"] == 0, bad.axi_checks
        assert after.done and not after.error and np.array_equal(after.dram, ref.dram), f"after {name}: {after.message}"
        if stall == 0:
            assert after.cycles == after.wall_cycles - regmap.IRQ_AFTER_CYCLES == ref.cycles
