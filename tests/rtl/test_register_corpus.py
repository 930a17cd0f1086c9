"""One register behaviour: the RTL's AXI-lite control slave and the driver's register model
(driver/regmodel.py, timed) run the shared corpus of register sequences (tests/driver/regseq.py:
START after an error, CLEAR, START while busy, reads during a run, bad run registers, writes to
read-only registers) and agree on every read; the AXI-lite channels break no protocol rule."""

from __future__ import annotations

import numpy as np
import pytest

from driver.regmodel import RegisterModel
from driver.rtl_bench_device import DRAM_BASE
from driver.rtl_run import run_register_ops
from tests.driver.regseq import SEQUENCES, resolve
from vdla_hw import regmap
from vdla_hw.config import load_config
from vdla_hw.rtl.axi_check import rule_names

pytestmark = pytest.mark.rtl
CONFIG = load_config("tiny")


def model_reads(bundle, ops, stamps) -> list:
    """Replay ``ops`` on the register model at the cycles the RTL took them."""
    memory = {"image": bundle.dram.copy()}

    def read_memory(address, nbytes):
        if address != DRAM_BASE or nbytes > memory["image"].size:
            raise KeyError(address)
        return memory["image"][:nbytes].copy()

    def write_memory(address, data):
        memory["image"][:len(data)] = np.asarray(data, dtype=np.uint8)

    model = RegisterModel(CONFIG, read_memory, write_memory, timed=True)
    reads, writes = list(stamps["reads"]), list(stamps["writes"])
    out = []
    for op in ops:
        if op[0] == "wr":
            name, cycle = writes.pop(0)
            model.now = cycle
            model.write(regmap.offset(op[1]), int(op[2]))
        elif op[0] == "rd":
            name, _, cycle = reads[0]
            reads.pop(0)
            model.now = cycle
            out.append((name, model.read(regmap.offset(op[1])), cycle))
    return out


@pytest.fixture(scope="module")
def corpus():
    cases = {name: (make(), ops) for name, (make, ops) in SEQUENCES.items()}
    resolved = {name: (bundle, resolve(ops, bundle, DRAM_BASE)) for name, (bundle, ops) in cases.items()}
    results = run_register_ops(list(resolved.values()), CONFIG, "verilator", top="core")
    return {name: (bundle, ops, res) for (name, (bundle, ops)), res in zip(resolved.items(), results)}


@pytest.mark.parametrize("name", list(SEQUENCES))
def test_rtl_and_register_model_agree_on_every_read(corpus, name):
    bundle, ops, rtl = corpus[name]
    expected = model_reads(bundle, ops, rtl)
    got = [tuple(r) for r in rtl["reads"]]
    assert len(got) == len(expected) == sum(op[0] == "rd" for op in ops)
    wrong = [f"{reg} at cycle {cycle}: RTL {value:#x}, model {want:#x}"
             for (reg, value, cycle), (_, want, _) in zip(got, expected) if value != want]
    assert not wrong, f"{name}: " + "; ".join(wrong)
    checks = rtl["axi_checks"]
    assert checks["violations"] == 0, rule_names(checks["rules"])
