"""RTL vs simulator at two non-default timing contracts: the RTL takes every timing number from
the configuration (vdla_hw/timing.py's parameters), so a configuration with deeper pipelines,
more decode cycles, slower queues and fetch, or a slower memory with fewer bursts in flight must
still give the simulator's image, total cycles, retire cycle of every instruction and counter
registers exactly, under the protocol checker.

The two contracts are built from ``tiny`` by raising its values (never lowering them), so they
stay valid when the RTL's minimums (vdla_hw/rtl/params.py) rise with its pipelines:

* ``deep``: INSN_OVERHEAD +2, GEMM_PIPELINE_DEPTH +3, ALU_PIPELINE_DEPTH +2, ALU_CYCLES_PER_UOP +1,
  QUEUE_LATENCY 3, FETCH_CYCLES_PER_INSN 2, with a fast memory (read latency 3, write 2);
* ``slowmem``: MEM_LATENCY 41, MEM_WRITE_LATENCY 13, 2 read / 1 write bursts in flight, bursts of
  at most 4 beats, QUEUE_LATENCY 2, command queues of 4, INSN_OVERHEAD +1, GEMM +1, ALU +1.
"""

from __future__ import annotations

import pytest

from compiler.accel import compile_layer
from compiler.layers import Conv2D
from tests.hw.programs import fixed_corpus
from tests.rtl.conftest import EXAMPLES, alu_chain
from vdla_hw import regmap
from vdla_hw.asm import assemble
from vdla_hw.config import Config
from vdla_hw.rtl.compare import diverge
from vdla_sim import simulate
from vdla_sim.progen import random_program
from vdla_sim.workloads import blocked_gemm

pytestmark = pytest.mark.rtl

RANDOM = 40


def _raised(**deltas) -> dict:
    base = Config.from_preset("tiny")
    return {key: base.params[key] + d for key, d in deltas.items()}


CONTRACTS = {
    "deep": lambda: Config.from_preset(
        "tiny", **_raised(INSN_OVERHEAD=2, GEMM_PIPELINE_DEPTH=3, ALU_PIPELINE_DEPTH=2, ALU_CYCLES_PER_UOP=1),
        QUEUE_LATENCY=3, FETCH_CYCLES_PER_INSN=2, MEM_LATENCY=3, MEM_WRITE_LATENCY=2),
    "slowmem": lambda: Config.from_preset(
        "tiny", **_raised(INSN_OVERHEAD=1, GEMM_PIPELINE_DEPTH=1, ALU_PIPELINE_DEPTH=1),
        MEM_LATENCY=41, MEM_WRITE_LATENCY=13, MEM_READ_OUTSTANDING=2, MEM_WRITE_OUTSTANDING=1, MEM_MAX_BURST=4,
        QUEUE_LATENCY=2, CMD_QUEUE_DEPTH=4),
}


def _conv(config: Config):
    layer = Conv2D(name="conv", h=6, w=6, ic=2 * config.block_in, oc=2 * config.block_out, k=3, stride=1, pad=1,
                   shift=7, relu=True)
    return compile_layer(layer, config, vthreads=2, seed=4)


def programs(config: Config) -> list[tuple[str, object]]:
    """Fixed programs, examples, blocked GEMMs, an ALU chain, a compiled conv and random programs."""
    progs = list(fixed_corpus(config))
    for path in EXAMPLES:
        text = path.read_text().replace(".config tiny", "")
        progs.append((f"example_{path.stem}", assemble(text, config=config, source=str(path))))
    progs += [(f"gemm_b{buf}", blocked_gemm(config, 8, 16, 16, (2, 2, 2), buffers=buf)[0]) for buf in (1, 2)]
    progs += [("alu_chain", alu_chain(config)), ("conv", _conv(config))]
    return progs + [(f"random{seed}", random_program(seed, config)) for seed in range(RANDOM)]


_RUNS: dict = {}


def runs(contract: str) -> dict:
    """name -> (bundle, simulator result, RTL result), one Verilator simulation per contract."""
    if contract not in _RUNS:
        from driver.rtl_run import run_bundles

        progs = programs(CONTRACTS[contract]())
        sims = [simulate(b) for _, b in progs]
        rtl = run_bundles([b for _, b in progs], "verilator", top="core", budgets=[2 * s.cycles + 5000 for s in sims])
        _RUNS[contract] = {name: (b, s, r) for (name, b), s, r in zip(progs, sims, rtl)}
    return _RUNS[contract]


def test_contracts_differ_from_every_preset():
    from vdla_hw.presets import PRESETS

    keys = ("INSN_OVERHEAD", "GEMM_PIPELINE_DEPTH", "ALU_PIPELINE_DEPTH", "QUEUE_LATENCY", "MEM_LATENCY")
    for name, make in CONTRACTS.items():
        c = make()
        for preset in PRESETS:
            p = Config.from_preset(preset)
            assert any(c.params[k] != p.params[k] for k in keys), (name, preset)


@pytest.mark.parametrize("contract", sorted(CONTRACTS))
def test_rtl_matches_sim_at_contract(contract):
    results = runs(contract)
    assert len(results) >= RANDOM + 20
    for name, (bundle, sim_result, rtl_result) in results.items():
        where = f"{contract}/{name}"
        assert rtl_result.id_ok, f"{where}: ID_CONFIG does not match"
        problem = diverge(sim_result, rtl_result)
        assert problem is None, f"{where}: {problem}"
        assert rtl_result.wall_cycles == rtl_result.cycles + regmap.IRQ_AFTER_CYCLES, where
        checks = rtl_result.axi_checks
        assert checks["violations"] == 0 and checks["checks"] > 0 and checks["left_outstanding"] == 0, (where, checks)
        expected = sim_result.modules
        wrong = [f"{m}.{k}: simulator {expected[m][k]}, RTL {rtl_result.modules[m][k]}"
                 for m in expected for k in expected[m] if rtl_result.modules[m][k] != expected[m][k]]
        assert not wrong, f"{where}: counter registers differ: " + "; ".join(wrong)
