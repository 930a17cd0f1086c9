"""The per-bundle memo of vdla_sim/prepared.py: a program is decoded, checked and costed once per
bundle and reused while its instruction bytes, configuration and DRAM size are unchanged, and
never carried into a pickle; errors are not memoized."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from vdla_hw import program
from vdla_hw.errors import EncodingError, ProgramError
from vdla_sim import prepared, simulate
from vdla_sim.progen import random_program


def test_a_bundle_is_prepared_once_and_runs_alike_each_time(monkeypatch):
    bundle = random_program(1, "tiny", threads=2)
    first = simulate(bundle)
    calls = []
    monkeypatch.setattr(prepared.program, "decode_checked", lambda b: calls.append(b) or program.decode_checked(b))
    again, timing = simulate(bundle), simulate(bundle, data=False)
    assert calls == []
    assert (again.cycles, again.retire, again.as_dict()) == (first.cycles, first.retire, first.as_dict())
    assert (timing.cycles, timing.retire) == (first.cycles, first.retire)
    assert prepared.prepare(bundle) is prepared.prepare(bundle)


def test_instruction_bytes_changed_in_place_are_prepared_again():
    bundle = random_program(2, "tiny")
    simulate(bundle)
    bundle.dram[bundle.insn_offset] |= 0b111  # opcode 7 in the first instruction: unknown
    with pytest.raises(EncodingError, match="unknown opcode 7"):
        simulate(bundle)


def test_a_smaller_image_is_checked_again():
    bundle = random_program(3, "tiny")
    simulate(bundle)
    stream = bundle.dram[bundle.insn_offset:bundle.insn_offset + 16 * bundle.insn_count]
    keep = bundle.insn_offset // 32 * 16  # half the data, then the same instruction bytes
    bundle.dram, bundle.insn_offset = np.concatenate([bundle.dram[:keep], stream]), keep
    with pytest.raises(ProgramError, match="exceed the image"):
        simulate(bundle)


def test_errors_are_raised_on_every_run():
    bundle = random_program(4, "tiny")
    bundle.dram[bundle.insn_offset] |= 0b111
    for _ in range(2):
        with pytest.raises(EncodingError):
            simulate(bundle)


def test_a_pickled_bundle_carries_no_simulator_state():
    bundle = random_program(5, "tiny")
    size = len(pickle.dumps(bundle))
    simulate(bundle)
    assert len(pickle.dumps(bundle)) < size + 200  # an empty memo, not the decoded program
    copy = pickle.loads(pickle.dumps(bundle))
    assert simulate(copy).cycles == simulate(bundle).cycles


def test_loads_copied_as_runs_equal_the_element_copies(monkeypatch):
    """The byte copy of prepared.load_run (most of a convolution's LOADs) vs the general LOAD path."""
    from compiler.accel import compile_layer
    from compiler.layers import Conv2D

    conv = Conv2D(name="c", h=7, w=7, ic=32, oc=32, k=3, pad=1, shift=6, relu=True)
    make = [lambda: compile_layer(conv, "osdi18"), lambda: compile_layer(conv, "tiny", vthreads=2)]
    make += [lambda seed=seed: random_program(seed, ("osdi18", "tiny", "vta-pynq")[seed % 3]) for seed in range(9)]
    fast = [simulate(m()) for m in make]
    assert sum(run is not None for m in make for run in prepared.prepare(m()).runs) > 50
    monkeypatch.setattr(prepared, "load_run", lambda insn, config: None)
    for m, want in zip(make, fast):
        got = simulate(m())
        assert (got.cycles, got.retire, got.as_dict()) == (want.cycles, want.retire, want.as_dict())


def outcome(bundle):
    try:
        result = simulate(bundle)
    except Exception as err:  # noqa: BLE001 (the same error either way is what is compared)
        return repr(err)
    return result.cycles, result.retire, result.as_dict()


def test_loop_plans_are_reused_across_runs_and_follow_the_uops_in_the_image(monkeypatch):
    from vdla_sim import gemm

    bundles = [random_program(seed, ("osdi18", "tiny", "vta-pynq")[seed % 3], threads=2) for seed in range(12)]
    first = [outcome(b) for b in bundles]
    built = []
    original = gemm.GemmPlan.__init__
    monkeypatch.setattr(gemm.GemmPlan, "__init__", lambda self, *a, **k: built.append(1) or original(self, *a, **k))
    assert [outcome(b) for b in bundles] == first and built == []
    changed = 0
    for bundle, before in zip(bundles, first):
        for sym in bundle.symbols.values():  # new uop contents, the same instruction bytes
            if sym.mem == "uop":
                lo, hi = sym.byte_range(bundle.config)
                words = bundle.dram[lo:hi].view(np.uint32)
                words[:] = words[::-1]
        after = outcome(bundle)
        assert after == outcome(pickle.loads(pickle.dumps(bundle)))  # as a bundle never run
        changed += after != before
    assert changed
