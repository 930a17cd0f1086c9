"""Activity counts (dse.activity) against the reference semantics' counters, and SRAM accesses
against the loop nests counted by hand on small programs."""

import pytest

from compiler.accel import compile_layer
from compiler.layers import Conv2D, Dense
from compiler.network.alu_add import compile_add
from dse.activity import program_activity
from tests.hw.programs import alu_program, fixed_corpus, padded_load
from vdla_hw.config import load_config
from vdla_hw.semantics import execute

import numpy as np


def programs():
    out = [(f"corpus-{name}", bundle) for preset in ("tiny", "osdi18") for name, bundle in fixed_corpus(preset)]
    out.append(("conv", compile_layer(Conv2D(h=8, w=8, ic=32, oc=32, k=3, pad=1, shift=5, relu=True), "osdi18")))
    out.append(("conv-vt1", compile_layer(Conv2D(h=7, w=7, ic=16, oc=48, k=1, stride=2), "vta-pynq", vthreads=1)))
    out.append(("dense", compile_layer(Dense(ic=64, oc=40, shift=3), "osdi18")))
    rng = np.random.default_rng(0)
    a, b = (rng.integers(-128, 128, (1, 32, 4, 4), dtype=np.int8) for _ in range(2))
    out.append(("add", compile_add(a, b, a_shift=1, b_shift=0, shift=1, relu=True, config=load_config("osdi18"))))
    return out


@pytest.mark.parametrize("name, bundle", programs(), ids=[n for n, _ in programs()])
def test_activity_counts_equal_the_reference_semantics_counters(name, bundle):
    act = program_activity(bundle)
    c = bundle.config
    ref = execute(bundle).counters
    loaded = {m: act["sram_writes"][m] * c.elem_bytes(m) for m in ("uop", "wgt")}
    assert loaded == {m: ref.load_bytes[m] for m in ("uop", "wgt")}  # no padding on uop/wgt loads
    assert act["sram_reads"]["out"] * c.elem_bytes("out") == ref.store_bytes
    assert act["sram_reads"]["uop"] == ref.gemm_uops + ref.alu_uops
    dram = sum(ref.load_bytes.values()) + ref.store_bytes + bundle.insn_count * c.insn_bytes
    assert act["dram_bytes"] == dram
    assert act["macs"] <= ref.gemm_uops * c.batch * c.block_in * c.block_out


def test_padding_is_written_to_the_sram():
    bundle, _ = padded_load("tiny", pads=(1, 2, 3, 1), rows=2, cols=3)
    act = program_activity(bundle)
    assert act["sram_writes"]["inp"] == (1 + 2 + 2) * (3 + 3 + 1)


def test_alu_reads_its_source_only_without_immediate():
    with_imm = program_activity(alu_program("tiny", "add", imm=3)[0])
    without = program_activity(alu_program("tiny", "add", imm=None)[0])
    n = with_imm["alu_ops"] // (1 * 4)
    assert with_imm["sram_reads"]["acc"] == n
    assert without["sram_reads"]["acc"] == 2 * n
