"""Shared RTL test fixtures: each (preset, simulator, top) model is built once (cached in
build/rtl by fingerprint, RTL source hash and top) and runs its whole program corpus in one
simulation through the driver's register code (driver/rtl_run.py), back to back without
clearing the SRAMs, against the simulator carrying its SRAM state the same way; tests then look
up their program's result."""

from __future__ import annotations

from pathlib import Path

import pytest

from vdla_hw.asm import assemble
import numpy as np

from vdla_hw import isa
from vdla_hw.bundle import BundleBuilder
from vdla_hw.sram_state import SramState
from vdla_sim import simulate
from vdla_sim.progen import random_program
from vdla_sim.workloads import blocked_gemm

from tests.hw.programs import ACC, OUT, UOP, fixed_corpus
from tests.sim.sweep_programs import sweep_corpus

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.s"))


def example_sources(preset: str) -> list[tuple[Path, str]]:
    """(path, text to assemble) of the examples for ``preset``: a hand-written one on every preset
    (its ``.config tiny`` made ``preset``); a compiled one (examples/conv_tile.s: its blocked shapes
    and micro-ops are those of the configuration it was compiled for) on that configuration only."""
    out = []
    for path in EXAMPLES:
        text = path.read_text()
        compiled = '"producer": "compiler.accel"' in text
        if compiled and f".config {preset}\n" not in text:
            continue
        out.append((path, text if compiled else text.replace(".config tiny", f".config {preset}")))
    return out
# random programs per (preset, simulator) of the core-top comparison with the simulator
RANDOM = {("tiny", "icarus"): 60, ("tiny", "verilator"): 200, ("osdi18", "verilator"): 20}
# random programs whose GEMMs repeat accumulators across sweeps of their uop list (progen repeats=True)
REPEATS = {("tiny", "icarus"): 10, ("tiny", "verilator"): 40, ("osdi18", "verilator"): 10}
PAIRS = list(RANDOM)


GEMMS = {"tiny": [(8, 16, 16, (2, 2, 2)), (16, 8, 8, (4, 1, 1))], "osdi18": [(4, 64, 64, (4, 2, 2))]}


def alu_chain(preset: str, n: int = 40):
    """Many ALU instructions in a row: the compute command queue fills and fetch waits."""
    b = BundleBuilder(preset)
    c = b.config
    a = b.array("a", "acc", np.arange(8 * c.batch * c.block_out).reshape(8, c.batch, c.block_out) - 100)
    y = b.alloc("y", "out", 8)
    u = b.uops("u", [(0, 0, 0), (1, 1, 0)])
    b.emit("LOAD", memory_type=UOP, dram_base=u, y_size=1, x_size=2, x_stride=2)
    b.emit("LOAD", memory_type=ACC, dram_base=a, y_size=1, x_size=8, x_stride=8)
    for k in range(n):
        b.emit("ALU", alu_opcode=k % len(isa.ALU_OPS), uop_end=2, iter_out=2, iter_in=2, dst_factor_out=2, dst_factor_in=4,
               src_factor_out=1, src_factor_in=1, use_imm=k % 2, imm=(k % 7) - 3)
    b.emit("LOAD", memory_type=ACC, push_next=1)
    b.emit("STORE", memory_type=OUT, dram_base=y, y_size=1, x_size=8, x_stride=8, pop_prev=1, push_prev=1)
    b.emit("FINISH", pop_next=1)
    return b.build()


def workloads(preset: str) -> list[tuple[str, object]]:
    """Longer programs (blocked GEMMs, single and double buffered; an ALU chain) whose command
    queues fill, so fetch back-pressure is exercised."""
    progs = [(f"gemm_{m}x{k}x{n}_b{buf}", blocked_gemm(preset, m, k, n, tile, buffers=buf)[0])
             for m, k, n, tile in GEMMS[preset] for buf in (1, 2)]
    return progs + [("alu_chain", alu_chain(preset))]


def corpus(preset: str, sim: str) -> list[tuple[str, object]]:
    """Fixed programs, examples (assembled for ``preset``), workloads and random programs."""
    progs = list(fixed_corpus(preset)) + workloads(preset)
    for path, text in example_sources(preset):
        progs.append((f"example_{path.stem}", assemble(text, source=str(path)) if ".config" in text
                      else assemble(text, config=preset, source=str(path))))
    progs += [(f"random{seed}", random_program(seed, preset)) for seed in range(RANDOM[(preset, sim)])]
    progs += sweep_corpus(preset)
    progs += [(f"repeats{seed}", random_program(seed, preset, repeats=True)) for seed in range(REPEATS[(preset, sim)])]
    return progs


def corpus_names(preset: str, sim: str) -> list[str]:
    return [name for name, _ in fixed_corpus(preset)] + [name for name, _ in workloads(preset)] + \
        [f"example_{p.stem}" for p, _ in example_sources(preset)] + \
        [f"random{seed}" for seed in range(RANDOM[(preset, sim)])] + \
        [name for name, _ in sweep_corpus(preset)] + [f"repeats{seed}" for seed in range(REPEATS[(preset, sim)])]


class Runs:
    def __init__(self):
        self.cache = {}

    def get(self, preset: str, sim: str) -> dict:
        key = (preset, sim)
        if key not in self.cache:
            from driver.rtl_run import run_bundles

            progs = corpus(preset, sim)
            state = SramState.fresh(progs[0][1].config)   # back to back, as a board runs them
            sims = [simulate(b, sram=state, allow_vta_hazards=True) for _, b in progs]
            rtl = run_bundles([b for _, b in progs], sim, top="core", budgets=[2 * s.cycles + 5000 for s in sims],
                              keep_srams=True)
            self.cache[key] = {name: (b, s, r) for (name, b), s, r in zip(progs, sims, rtl)}
        return self.cache[key]


@pytest.fixture(scope="session")
def rtl_runs():
    return Runs()
