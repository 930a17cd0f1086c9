"""Simulator vs its own pinned results: cycles, final image, retire list and summary of a fixed
corpus (the foundation programs, blocked GEMMs, 240 random programs of vdla_sim.progen on three
presets), pinned in tests/sim/data/golden_results.json from the simulator before issue 24's
speed-ups, so a faster simulator that changes any cycle or byte is noticed. The timing-only
mode must give the same cycles, retire list and summary.

Regenerate (only when the timing contract or a generator is meant to change; say so in the
commit): ``python -m tests.sim.test_golden --write``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from tests.hw.programs import fixed_corpus
from vdla_sim import simulate
from vdla_sim.progen import random_program
from vdla_sim.workloads import blocked_gemm

GOLDEN = Path(__file__).parent / "data" / "golden_results.json"
PRESETS = ("osdi18", "tiny", "vta-pynq")
SEEDS = 40
GEMMS = {"osdi18": (512, (64, 8, 8)), "tiny": (64, (4, 2, 2)), "vta-pynq": (256, (16, 4, 4))}


def corpus(preset: str):
    """(name, bundle) of every pinned program of ``preset``."""
    for name, bundle in fixed_corpus(preset):
        yield f"fixed_{preset}_{name}", bundle
    size, tile = GEMMS[preset]
    for buffers in (1, 2):
        yield f"gemm_{preset}_{size}_{buffers}", blocked_gemm(preset, size, size, size, tile, buffers=buffers)[0]
    for seed in range(SEEDS):
        for threads in (1, 2):
            yield f"prog_{preset}_{seed}_{threads}", random_program(seed, preset, threads=threads)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def fingerprint(result) -> list:
    """[cycles, image, retire list, summary (as_dict without the image)]; image None when timing-only."""
    summary = result.as_dict()
    image = summary.pop("dram_sha256")
    return [result.cycles, image and image[:16], _sha(json.dumps(result.retire).encode()),
            _sha(json.dumps(summary, sort_keys=True).encode())]


def pinned() -> dict:
    return json.loads(GOLDEN.read_text())["results"]


@pytest.mark.parametrize("preset", PRESETS)
def test_simulator_equals_its_pinned_results(preset):
    golden = pinned()
    names = []
    for name, bundle in corpus(preset):
        names.append(name)
        assert fingerprint(simulate(bundle)) == golden[name], name
    assert set(names) == {name for name in golden if name.split("_")[1] == preset}


@pytest.mark.parametrize("preset", PRESETS)
def test_timing_only_mode_equals_the_pinned_timing(preset):
    golden = pinned()
    for name, bundle in corpus(preset):
        cycles, _, retire, summary = golden[name]
        assert fingerprint(simulate(bundle, data=False)) == [cycles, None, retire, summary], name


def write() -> None:
    results = {name: fingerprint(simulate(bundle)) for preset in PRESETS for name, bundle in corpus(preset)}
    lines = [f"{json.dumps(name)}: {json.dumps(value)}" for name, value in sorted(results.items())]
    header = ("python -m tests.sim.test_golden --write (first written by the simulator of commit 233c50f, "
              "before issue 24's speed-ups); per program: cycles, then the first 16 hex digits of the SHA-256 "
              "of the final image, of the retire list and of the summary (as_dict without the image)")
    GOLDEN.write_text("{\"generator\": " + json.dumps(header) + ",\n \"results\": {\n"
                      + ",\n".join(lines) + "\n}}\n")


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    write()
