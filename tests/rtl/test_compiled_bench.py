"""The compiled bench (Verilator model with the bench in C++, vdla_hw/rtl/compiled.py) against the
cocotb bench (driver/rtl_bench.py) on the same builds' Verilog: random programs, fixed programs, a
compiled conv layer and bus errors give the same record -- final image, CYCLES, wall-clock
cycles, STATUS / ERROR / ERROR_INSN, every counter register, the retire trace, the bus beats and
the protocol checker's violations -- on the core top and on the FPGA top at the configuration's
latency. Under random stalls the two benches draw different random sequences (the same model),
so there the compiled bench is checked against the simulator: image exact, cycles only grow.
Plus the build cache and the bench's errors.

tiny runs by default; osdi18's FPGA top with a 14x14 conv is marked slow."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.accel import compile_layer
from compiler.layers import Conv2D
from driver.rtl_bench_device import POLL_CYCLES
from driver.rtl_run import MemoryOptions, choose_bench, run_bundles
from tests.hw.programs import fixed_corpus
from vdla_hw import regmap
from tests.rtl.test_axi import _error_cases
from vdla_hw.config import load_config
from vdla_hw.errors import VdlaError
from vdla_sim import simulate
from vdla_sim.progen import random_program

pytestmark = pytest.mark.rtl

FIELDS = ("cycles", "wall_cycles", "status", "error", "error_insn", "timeout", "modules", "retire", "beats", "id_ok")


def conv(preset: str, size: int = 6, vthreads: int = 2):
    c = load_config(preset)
    layer = Conv2D(name="conv", h=size, w=size, ic=2 * c.block_in, oc=2 * c.block_out, k=3, stride=1, pad=1,
                   shift=7, relu=True)
    return compile_layer(layer, c, vthreads=vthreads, seed=4)


def programs(preset: str, randoms: int) -> list:
    fixed = dict(fixed_corpus(preset))
    return [("matmul", fixed["matmul"]), ("load_store", fixed["load_store"]), ("conv", conv(preset))] + \
        [(f"random{s}", random_program(100 + s, preset)) for s in range(randoms)]


def differences(a, b) -> list[str]:
    out = [f"{f}: compiled {getattr(a, f)!r}, cocotb {getattr(b, f)!r}" for f in FIELDS if getattr(a, f) != getattr(b, f)]
    if not np.array_equal(a.dram, b.dram):
        out.append(f"images differ in {int((a.dram != b.dram).sum())} bytes")
    if a.axi_checks["violations"] != b.axi_checks["violations"] or a.axi_checks["rules"] != b.axi_checks["rules"]:
        out.append(f"checker: compiled {a.axi_checks}, cocotb {b.axi_checks}")
    return out


def compare(preset: str, top: str, progs: list, poison=None) -> None:
    sims = [simulate(b, race_check=False) for _, b in progs]
    budgets = [20 * s.cycles + 10_000 for s in sims]
    bundles = [b for _, b in progs]
    fast = run_bundles(bundles, "verilator", top=top, budgets=budgets, poison=poison, bench="compiled")
    slow = run_bundles(bundles, "verilator", top=top, budgets=budgets, poison=poison, bench="cocotb")
    wrong = [f"{name}: " + "; ".join(d) for (name, _), a, b in zip(progs, fast, slow) if (d := differences(a, b))]
    assert not wrong, f"{preset} {top} top:\n" + "\n".join(wrong)
    for (name, _), sim, res in zip(progs, sims, fast):
        if poison is None:
            assert res.done and res.cycles == res.wall_cycles - regmap.IRQ_AFTER_CYCLES == sim.cycles, name
            assert np.array_equal(res.dram, sim.dram), name
        assert res.axi_checks["violations"] == 0 and res.axi_checks["checks"] > 0, (name, res.axi_checks)


def test_benches_agree_on_the_core_top():
    compare("tiny", "core", programs("tiny", 6))


def test_benches_agree_on_the_fpga_top_and_its_bus_errors():
    progs = programs("tiny", 3)
    poison = [[] for _ in progs]
    for name, bundle, ranges, _, _ in _error_cases():
        progs.append((name, bundle))
        poison.append(ranges)
    compare("tiny", "axi", progs, poison)


@pytest.mark.slow
def test_benches_agree_on_an_osdi18_conv_layer():
    compare("osdi18", "axi", [("conv14", conv("osdi18", size=14, vthreads=2)), ("random0", random_program(7, "osdi18"))])


def test_compiled_bench_under_stalls_keeps_the_image():
    progs = programs("tiny", 3)
    for (name, bundle), seed in zip(progs, range(len(progs))):
        sim = simulate(bundle, race_check=False)
        [res] = run_bundles([bundle], "verilator", top="axi", budgets=[20 * sim.cycles + 10_000],
                            memory=MemoryOptions(stall=0.5, seed=seed), bench="compiled")
        assert res.done and np.array_equal(res.dram, sim.dram), name
        assert res.cycles == res.wall_cycles - regmap.IRQ_AFTER_CYCLES > sim.cycles, name
        assert res.axi_checks["violations"] == 0 and res.axi_checks["left_outstanding"] == 0, res.axi_checks


def test_the_budget_ends_a_runaway_program_and_the_next_runs():
    """The driver's cycle timeout (checked at its STATUS polls, at most POLL_CYCLES apart)."""
    bundle = conv("tiny", size=12)
    sim = simulate(bundle)
    assert sim.cycles > POLL_CYCLES + 2000       # the second poll is past the budget
    short, ok = run_bundles([bundle, bundle], "verilator", budgets=[1000, 2 * sim.cycles], bench="compiled")
    assert short.timeout and not short.done and "1000 cycles" in short.message, short.message
    assert ok.done and ok.cycles == sim.cycles and np.array_equal(ok.dram, sim.dram)


def test_bench_choice():
    assert choose_bench("verilator", None) == "compiled"
    assert choose_bench("icarus", None) == "cocotb"
    assert choose_bench("verilator", None, waves="w.vcd") == "cocotb"
    with pytest.raises(VdlaError, match="Verilator only"):
        choose_bench("icarus", "compiled")
    with pytest.raises(VdlaError, match="unknown RTL bench"):
        choose_bench("verilator", "fast")


def test_build_is_cached_and_keyed_on_the_cxx_sources(monkeypatch, tmp_path):
    from vdla_hw.rtl import compiled

    first = compiled.build("tiny", "core")
    assert compiled.build("tiny", "core") == first            # cached: same library
    assert first.parent.name == f"compiled-{compiled.build_hash()}"
    monkeypatch.setenv("VDLA_RTL_CXX_OPT", "-O1")
    assert compiled.build_hash() != first.parent.name.split("-")[1]


def test_the_build_makes_no_precompiled_header():
    """verilated.mk's precompiled header costs more than it saves on a model of a few files
    (vdla_hw.rtl.runner.NO_PCH): the build only preprocesses the header it would precompile."""
    from vdla_hw.rtl import compiled

    log = (compiled.build("tiny", "core").parent / "build.log").read_text()
    assert "__pch.h.fast.gch" in log and "__pch.h.slow.gch" in log
    assert "c++-header" not in log and " -include " not in log


def test_missing_toolchain_is_one_clear_error(monkeypatch):
    from vdla_hw.rtl import compiled, runner

    monkeypatch.setattr(runner, "tool_env", lambda: {"PATH": "/nonexistent"})
    with pytest.raises(VdlaError, match="needs verilator, make, c\\+\\+.*--bench cocotb"):
        compiled.check_toolchain()


def test_compiler_choice_is_in_the_build_and_its_hash(monkeypatch):
    from vdla_hw.rtl import compiled

    monkeypatch.delenv("VDLA_RTL_CXX", raising=False)
    default, default_id = compiled.build_hash(), compiled.cxx_identity()
    assert f"CXX={compiled.cxx()}" in compiled.cxx_make_flags()
    monkeypatch.setenv("VDLA_RTL_CXX", "g++")
    assert compiled.cxx_make_flags() == ("CXX=g++", "LINK=g++")
    assert compiled.cxx_identity().startswith("g++ ") and compiled.cxx_identity() != default_id
    assert compiled.build_hash() != default
    monkeypatch.setenv("VDLA_RTL_CXX", "no-such-compiler++")
    with pytest.raises(VdlaError, match="no-such-compiler"):
        compiled.check_toolchain()


def test_build_failure_points_at_the_log(monkeypatch, tmp_path):
    from vdla_hw.rtl import compiled, runner

    sources = runner.sources
    monkeypatch.setattr(runner, "sources", lambda config, top, root: sources(config, top))  # the shared Verilog
    monkeypatch.setattr(compiled, "VERILATOR_FLAGS", compiled.VERILATOR_FLAGS + ("--no-such-flag",))
    with pytest.raises(VdlaError, match=r"Verilator \(compiled RTL bench\) failed .*see .*build\.log"):
        compiled.build("tiny", "core", build_root=tmp_path)


def test_rtl_backend_bench_choice(monkeypatch):
    from driver.rtl_device import RtlDevice

    monkeypatch.delenv("VDLA_RTL_BENCH", raising=False)
    assert RtlDevice("tiny").bench == "compiled" and RtlDevice("tiny", simulator="icarus").bench == "cocotb"
    monkeypatch.setenv("VDLA_RTL_BENCH", "cocotb")      # how `vdla run --target rtl` picks the cocotb bench
    assert RtlDevice("tiny").bench == "cocotb"
    monkeypatch.setenv("VDLA_RTL_BENCH", "fast")
    with pytest.raises(VdlaError, match="unknown RTL bench 'fast'"):
        RtlDevice("tiny")
