"""RTL vs simulator on issue 25's semantics aligned with VTA (docs/spec.md section 4): ALU with
the reset bit (fixed program and every ALU of random programs flagged), LOADs of padding rows
only (y_size 0), and programs whose pops wait for tokens pushed later in program order (random
programs re-interleaved, each module's order kept). Core top on Verilator: the same image,
every retire cycle and the counters (vdla_hw.rtl.compare.diverge)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.hw.programs import fixed_corpus
from tests.sim.test_vta_alignment import alu_reset_everywhere, interleave, needs_waiting
from vdla_hw.rtl.compare import diverge
from vdla_sim import simulate
from vdla_sim.progen import random_program

pytestmark = pytest.mark.rtl

NEW = ("alu_reset_ignored", "pad_rows_only_inp", "pad_rows_only_acc", "pad_rows_only_top", "token_wait")


def programs(preset: str, n: int) -> list:
    progs = [(name, b) for name, b in fixed_corpus(preset) if name in NEW]
    progs += [(f"alu_reset_{s}", alu_reset_everywhere(random_program(s, preset))) for s in range(n)]
    rng = np.random.default_rng(25)
    for s in range(n):
        bundle = interleave(random_program(s, preset), rng)
        try:
            simulate(bundle)
        except Exception:  # the simulator refuses it (e.g. a full command queue): nothing to compare
            continue
        progs.append((f"interleaved_{s}", bundle))
    return progs


@pytest.mark.parametrize("preset,n", [("tiny", 12), ("osdi18", 4)])
def test_rtl_matches_sim_on_the_vta_aligned_semantics(preset, n):
    from driver.rtl_run import run_bundles

    progs = programs(preset, n)
    assert {name for name, _ in progs} >= set(NEW)
    assert sum(needs_waiting(b) for name, b in progs if name.startswith("interleaved")) >= n // 2
    sims = [simulate(b) for _, b in progs]
    rtl = run_bundles([b for _, b in progs], "verilator", top="core", budgets=[2 * s.cycles + 5000 for s in sims])
    wrong = [f"{name}: {problem}" for (name, _), s, r in zip(progs, sims, rtl) if (problem := diverge(s, r))]
    assert not wrong, "\n".join(wrong)
