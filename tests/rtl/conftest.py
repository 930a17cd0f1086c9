"""Shared RTL test fixtures: each (preset, simulator) model is built once per session (cached
in build/rtl by fingerprint and RTL source hash) and runs its whole program corpus in one
simulation; tests then look up their program's result."""

from __future__ import annotations

from pathlib import Path

import pytest

from vdla_hw.asm import assemble
from vdla_sim import simulate
from vdla_sim.progen import random_program

from tests.hw.programs import fixed_corpus

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.s"))
RANDOM = {("tiny", "icarus"): 200, ("tiny", "verilator"): 200, ("osdi18", "verilator"): 20}
PAIRS = list(RANDOM)


def corpus(preset: str, sim: str) -> list[tuple[str, object]]:
    """Fixed programs, examples (assembled for ``preset``) and random programs."""
    progs = list(fixed_corpus(preset))
    for path in EXAMPLES:
        text = path.read_text()
        progs.append((f"example_{path.stem}", assemble(text, config=preset, source=str(path))
                      if ".config" not in text else assemble(text.replace(".config tiny", f".config {preset}"),
                                                             source=str(path))))
    progs += [(f"random{seed}", random_program(seed, preset)) for seed in range(RANDOM[(preset, sim)])]
    return progs


def corpus_names(preset: str, sim: str) -> list[str]:
    return [name for name, _ in fixed_corpus(preset)] + [f"example_{p.stem}" for p in EXAMPLES] + \
        [f"random{seed}" for seed in range(RANDOM[(preset, sim)])]


class Runs:
    def __init__(self):
        self.cache = {}

    def get(self, preset: str, sim: str) -> dict:
        key = (preset, sim)
        if key not in self.cache:
            from vdla_hw.rtl.runner import run_bundles

            progs = corpus(preset, sim)
            sims = [simulate(b) for _, b in progs]
            rtl = run_bundles([b for _, b in progs], sim, budgets=[2 * s.cycles + 5000 for s in sims])
            self.cache[key] = {name: (b, s, r) for (name, b), s, r in zip(progs, sims, rtl)}
        return self.cache[key]


@pytest.fixture(scope="session")
def rtl_runs():
    return Runs()
