"""Simulator vs reference semantics: the same final DRAM image and counters on the fixed
corpus of the foundation tests, the example programs, the GEMM workloads and hundreds of random
correctly synchronised programs (vdla_sim.progen) on every preset."""

from pathlib import Path

import numpy as np
import pytest

from tests.hw.programs import fixed_corpus
from vdla_hw.asm import assemble
from vdla_hw.semantics import execute
from vdla_sim import simulate
from vdla_sim.progen import random_program
from vdla_sim.workloads import blocked_gemm

PRESETS = ("osdi18", "vta-pynq", "tiny")
EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.s"))
RANDOM_PER_PRESET = 200  # 600 programs in all


def assert_same(bundle, where: str):
    ref = execute(bundle)
    sim = simulate(bundle)
    if not np.array_equal(sim.dram, ref.dram):
        diff = np.flatnonzero(sim.dram != ref.dram)
        raise AssertionError(f"{where}: images differ at {diff.size} bytes, first at byte {diff[0]}")
    assert sim.counters.as_dict() == ref.counters.as_dict(), where
    assert sim.tokens_left == ref.tokens_left, where
    assert all(r is not None for r in sim.retire), where
    return sim


@pytest.mark.parametrize("preset", PRESETS)
def test_fixed_corpus_sim_equals_reference(preset):
    corpus = fixed_corpus(preset)
    assert len(corpus) >= 10
    for name, bundle in corpus:
        assert_same(bundle, f"{preset}/{name}")


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_sim_equals_reference(path):
    assert_same(assemble(path.read_text(), source=str(path)), path.name)


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("buffers", [1, 2])
def test_blocked_gemm_sim_equals_reference_and_numpy(preset, buffers):
    bundle, expected = blocked_gemm(preset, 48 if preset == "tiny" else 64, 32, 48 if preset == "tiny" else 64,
                                    (4, 2, 3) if preset == "tiny" else (16, 1, 2), buffers=buffers, seed=buffers)
    sim = assert_same(bundle, f"gemm/{preset}/{buffers}")
    assert np.array_equal(bundle.read("c", sim.dram), expected)


@pytest.mark.parametrize("tile", [(1, 1, 1), (1, 2, 2), (2, 1, 1)])
def test_blocked_gemm_of_tiles_under_three_elements_sim_equals_reference_and_numpy(tile):
    """One sweep of the tile's uops writes tn distinct accumulators, so a tile of fewer than
    GEMM_HAZARD_DISTANCE + 1 elements breaks no hazard rule (the simulator checks it)."""
    bundle, expected = blocked_gemm("tiny", 16, 32, 16, tile, buffers=2)
    sim = assert_same(bundle, f"gemm/tiny/{tile}")
    assert np.array_equal(bundle.read("c", sim.dram), expected)


@pytest.mark.parametrize("preset", PRESETS)
def test_random_programs_sim_equals_reference(preset):
    for seed in range(RANDOM_PER_PRESET):
        assert_same(random_program(seed, preset), f"random program seed {seed} on {preset}")


@pytest.mark.parametrize("preset", PRESETS)
def test_random_ping_pong_programs_overlap(preset):
    """Two-thread programs with several blocks really run load, compute and store concurrently."""
    overlapped = 0
    for seed in range(20):
        bundle = random_program(seed, preset, threads=2, blocks=4)
        sim = assert_same(bundle, f"ping-pong seed {seed} on {preset}")
        spans = {m: [(s, e) for mod, s, e in filter(None, sim.retire) if mod == m] for m in ("load", "compute")}
        overlapped += any(s1 < e2 and s2 < e1 for s1, e1 in spans["load"] for s2, e2 in spans["compute"])
    assert overlapped >= 10


OVERRIDES = [dict(QUEUE_LATENCY=3), dict(CMD_QUEUE_DEPTH=1), dict(CMD_QUEUE_DEPTH=2, QUEUE_LATENCY=4, FETCH_CYCLES_PER_INSN=3),
             dict(INSN_OVERHEAD=0), dict(MEM_BURST_GAP=2, MEM_MAX_BURST=2), dict(DDR_BYTES_PER_CYCLE_CAP=3.5),
             dict(TOKEN_QUEUE_DEPTH=2)]


@pytest.mark.parametrize("overrides", OVERRIDES, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_random_programs_under_other_timing_parameters(overrides):
    """Timing parameters change cycles, never results, and never cause a false deadlock."""
    from vdla_hw.config import Config

    config = Config.from_preset("tiny", **overrides)
    for seed in range(25):
        assert_same(random_program(seed, config), f"seed {seed} with {overrides}")


def test_cached_loop_plans_follow_uop_reloads_and_fields():
    """The data path caches each GEMM/ALU loop's plan by its loop fields and the uop SRAM's
    version: ALUs sharing a loop but not their uops (reloaded in between), their op or their
    immediate must each compute their own result (here as the reference does)."""
    text = """
.config tiny
.data a acc 8 random 1
.data y out 8
.uops u1 0,4,0
.uops u2 4,0,0
LOAD uop sram=0 dram=u1 x=1
LOAD acc sram=0 dram=a x=8
ALU add uop=0:1 iter=4x1 dst=1,0 src=1,0
ALU add uop=0:1 iter=4x1 dst=1,0 src=1,0
LOAD uop sram=0 dram=u2 x=1
ALU add uop=0:1 iter=4x1 dst=1,0 src=1,0
ALU shr uop=0:1 iter=4x1 dst=1,0 src=1,0 imm=1
ALU shr uop=0:1 iter=4x1 dst=1,0 src=1,0 imm=2
ALU max uop=0:1 iter=4x1 dst=1,0 src=1,0 imm=3 push_next
STORE out sram=0 dram=y x=8 pop_prev push_prev
FINISH pop_next
"""
    sim = assert_same(assemble(text, source="plans"), "cached loop plans")
    assert sim.counters.alu_uops == 6 * 4
