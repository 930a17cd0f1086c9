"""The GEMM accumulator-hazard rule is per sweep of the micro-op list (docs/spec.md section 5):
repeats across sweeps (one accumulator summed over iter_in/iter_out) run and give the reference
result at the contract's cycles; repeats within 3 uops of one sweep are refused with a one-line
error naming the instruction and the uops, in the simulator, its timing-only mode and the CLI."""

from __future__ import annotations

import numpy as np
import pytest

from tests.sim.sweep_programs import SWEEP_HAZARDS, SWEEP_REPEATS, sweep_program
from vdla_hw import isa, program, timing
from vdla_hw.semantics import execute
from vdla_sim import HazardError, simulate
from vdla_sim.progen import random_program

PRESETS = ("tiny", "vta-pynq", "osdi18")


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("name", sorted(SWEEP_REPEATS))
def test_repeats_across_sweeps_equal_the_reference_and_numpy(preset, name):
    bundle, expected = sweep_program(preset, *SWEEP_REPEATS[name])
    ref, sim = execute(bundle), simulate(bundle)
    assert np.array_equal(sim.dram, ref.dram)
    assert np.array_equal(bundle.read("out", sim.dram), expected["out"])
    assert sim.counters.as_dict() == ref.counters.as_dict()


@pytest.mark.parametrize("name", sorted(SWEEP_REPEATS))
def test_repeats_cost_what_a_repeat_free_loop_costs(name):
    """GEMM cycles do not depend on the accumulator indices: the same loop with distinct
    accumulators (dst factors that never repeat) has the same GEMM retire-to-retire time."""
    dsts, io, ii, dfo, dfi = SWEEP_REPEATS[name]
    n = len(dsts)
    with_repeats, _ = sweep_program("tiny", dsts, io, ii, dfo, dfi)
    distinct, _ = sweep_program("tiny", list(range(n)), io, ii, n * ii, n)
    a, b = simulate(with_repeats), simulate(distinct)
    gemm = [k for k, insn in enumerate(with_repeats.insns()) if insn.kind == "GEMM"][0]
    config = with_repeats.config
    insn = with_repeats.insns()[gemm]
    assert timing.gemm_cycles(config, insn) == config.INSN_OVERHEAD + timing.uop_count(insn) + config.GEMM_PIPELINE_DEPTH
    spans = [r.retire[gemm][2] - r.retire[gemm][1] for r in (a, b)]
    assert spans[0] == spans[1] == timing.gemm_cycles(config, insn)
    assert simulate(with_repeats, data=False).retire == a.retire


@pytest.mark.parametrize("name", sorted(SWEEP_HAZARDS))
def test_repeats_within_a_sweep_are_refused_naming_the_uops(name):
    dsts, io, ii, dfo, dfi, bad, d = SWEEP_HAZARDS[name]
    bundle, _ = sweep_program("tiny", dsts, io, ii, dfo, dfi, uop_base=3)
    gemm = [k for k, insn in enumerate(bundle.insns()) if insn.kind == "GEMM"][0]
    with pytest.raises(HazardError) as err:
        simulate(bundle)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"instruction {gemm} (GEMM): uop: uop {3 + bad} writes the accumulator of uop {3 + bad - d}, "
                          f"{d} uop(s) earlier in the same sweep"), msg
    assert f"acc[{dsts[bad]}]" in msg
    # the reference semantics defines the result (it is what the RTL computes); the sim refuses it
    execute(bundle)


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("name", sorted(SWEEP_HAZARDS))
def test_repeats_within_a_sweep_run_when_allowed_and_equal_the_reference_and_numpy(preset, name):
    """``allow_vta_hazards`` (`vdla sim --allow-vta-incompatible`): the machine forwards the write,
    so the refused programs compute the reference result at the contract's cycles."""
    dsts, io, ii, dfo, dfi = SWEEP_HAZARDS[name][:5]
    bundle, expected = sweep_program(preset, dsts, io, ii, dfo, dfi)
    result = simulate(bundle, allow_vta_hazards=True)
    np.testing.assert_array_equal(result.dram, execute(bundle).dram)
    written = sorted({d + i * dfo + j * dfi for d in dsts for i in range(io) for j in range(ii)})  # OUT rows the GEMM writes
    assert np.array_equal(bundle.read("out", result.dram)[written], expected["out"][written])
    assert result.cycles == simulate(bundle, allow_vta_hazards=True, data=False).cycles


def test_the_same_uops_in_a_reset_gemm_are_no_hazard():
    bundle, expected = sweep_program("tiny", [0, 1, 0, 0], 1, 2, 0, 0, reset=True)
    sim = simulate(bundle)
    assert np.array_equal(sim.dram, execute(bundle).dram)
    assert np.array_equal(bundle.read("out", sim.dram), expected["out"]) and not expected["out"].any()


def test_gemm_hazard_is_per_sweep():
    # one sweep (the uop list): the old whole-loop rule
    assert timing.gemm_hazard(np.array([0, 1, 2, 0, 1, 2])) == -1
    assert timing.gemm_hazard(np.array([0, 1, 0])) == 2
    # sweeps of 2: 0 1 | 0 1 repeats only across the boundary
    assert timing.gemm_hazard(np.array([0, 1, 0, 1]), 2) == -1
    assert timing.gemm_hazard(np.array([0, 1, 1, 2]), 2) == -1
    assert timing.gemm_hazard(np.array([5, 5, 5]), 1) == -1
    # within a later sweep: position in the flattened order
    assert timing.gemm_hazard(np.array([0, 1, 2, 3, 4, 5, 6, 6, 7]), 3) == 7
    assert timing.gemm_hazard(np.array([0, 1, 2, 4, 3, 4]), 3) == 5
    assert timing.gemm_hazard(np.array([], dtype=np.int64), 3) == -1


@pytest.mark.parametrize("preset", PRESETS)
def test_random_programs_with_repeats_equal_the_reference(preset, monkeypatch):
    """progen's ``repeats=True`` programs repeat accumulators across sweeps (checked by recording
    the simulator's GEMM plans) and never within one; simulator == reference on every one."""
    import vdla_sim.datapath as datapath
    from vdla_sim.gemm import GemmPlan

    seen = []

    class Recording(GemmPlan):
        def __init__(self, insn, uops, config):
            super().__init__(insn, uops, config)
            if not insn.reset:
                seen.append((program.loop_indices(insn, uops)[0], len(uops)))

    monkeypatch.setattr(datapath, "GemmPlan", Recording)
    with_repeats = 0
    for seed in range(60):
        seen.clear()
        bundle = random_program(seed, preset, repeats=True)
        ref, sim = execute(bundle), simulate(bundle)
        assert np.array_equal(sim.dram, ref.dram), f"seed {seed}"
        assert sim.counters.as_dict() == ref.counters.as_dict(), f"seed {seed}"
        assert simulate(bundle, data=False).cycles == sim.cycles
        assert all(timing.gemm_hazard(dst, n) == -1 for dst, n in seen)
        with_repeats += any(timing.gemm_hazard(dst) >= 0 for dst, _ in seen)
    assert with_repeats >= 20, with_repeats


def test_cli_refuses_a_repeat_within_a_sweep_in_one_line_and_runs_one_across(tmp_path, capsys):
    from vdla.cli import main

    bad, _ = sweep_program("tiny", *SWEEP_HAZARDS["d2_in_sweep"][:5])
    good, _ = sweep_program("tiny", *SWEEP_REPEATS["sum_over_iter_in"])
    bad.save(tmp_path / "bad.npz")
    good.save(tmp_path / "good.npz")
    capsys.readouterr()
    assert main(["sim", str(tmp_path / "bad.npz")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "instruction 4 (GEMM): uop: uop 5 writes the accumulator of uop 3" in err, err
    assert main(["sim", str(tmp_path / "good.npz")]) == 0
    assert main(["exec", str(tmp_path / "bad.npz")]) == 0  # the reference defines it (docs/spec.md section 5)
    assert main(["sim", str(tmp_path / "bad.npz"), "--allow-vta-incompatible"]) == 0
