"""One register behaviour: the RTL's AXI-lite control slave and the driver's register model
(driver/regmodel.py, timed) run the shared corpus of register sequences (tests/driver/regseq.py:
START after an error, CLEAR, START while busy, reads during a run, bad run registers, writes to
read-only registers, partial writes (WSTRB), offsets without a register, an image passing 4 GiB)
and agree on every read and every response; the AXI-lite channels break no protocol rule. The
corpus runs on the core top and on the FPGA top with cocotbext-axi's AXI-lite master pausing
each of its five channels at random (the memory keeps the contract's timing, so the CYCLES the
sequences read stay exact)."""

from __future__ import annotations

import numpy as np
import pytest

from driver.regmodel import RegisterModel, SlaveError
from driver.rtl_bench_device import DRAM_BASE
from driver.rtl_run import MemoryOptions, run_register_ops
from tests.driver.regseq import SEQUENCES, resolve
from vdla_hw import regmap
from vdla_hw.config import load_config
from vdla_hw.rtl.axi_check import rule_names

pytestmark = pytest.mark.rtl
CONFIG = load_config("tiny")
BENCHES = {"core": ("core", MemoryOptions()), "axi_paused": ("axi", MemoryOptions(axil_stall=0.4, seed=5))}


def _offset(reg) -> int:
    return regmap.offset(reg) if isinstance(reg, str) else int(reg)


def model_responses(bundle, ops, stamps) -> tuple[list, list]:
    """Replay ``ops`` on the register model at the cycles the RTL took them: its reads
    (reg, value, cycle, RRESP) and its write responses."""
    memory = {"image": bundle.dram.copy()}

    def read_memory(address, nbytes):
        if address != DRAM_BASE or nbytes > memory["image"].size:
            raise KeyError(address)
        return memory["image"][:nbytes].copy()

    def write_memory(address, data):
        memory["image"][:len(data)] = np.asarray(data, dtype=np.uint8)

    model = RegisterModel(CONFIG, read_memory, write_memory, timed=True)
    reads, writes = list(stamps["reads"]), list(stamps["writes"])
    out, wresps = [], []
    for op in ops:
        if op[0] == "wr":
            _, cycle, _ = writes.pop(0)
            model.now = cycle
            try:
                model.write(_offset(op[1]), int(op[2]), *op[3:])
                wresps.append(regmap.RESP_OKAY)
            except SlaveError as err:
                wresps.append(err.resp)
        elif op[0] == "rd":
            cycle = reads.pop(0)[2]
            model.now = cycle
            try:
                out.append((op[1], model.read(_offset(op[1])), cycle, regmap.RESP_OKAY))
            except SlaveError as err:
                out.append((op[1], 0, cycle, err.resp))
    return out, wresps


@pytest.fixture(scope="module", params=list(BENCHES))
def corpus(request):
    top, memory = BENCHES[request.param]
    cases = {name: (make(), ops) for name, (make, ops) in SEQUENCES.items()}
    resolved = {name: (bundle, resolve(ops, bundle, DRAM_BASE)) for name, (bundle, ops) in cases.items()}
    results = run_register_ops(list(resolved.values()), CONFIG, "verilator", top=top, memory=memory)
    return {name: (bundle, ops, res) for (name, (bundle, ops)), res in zip(resolved.items(), results)}


@pytest.mark.parametrize("name", list(SEQUENCES))
def test_rtl_and_register_model_agree_on_every_read(corpus, name):
    bundle, ops, rtl = corpus[name]
    expected, wresps = model_responses(bundle, ops, rtl)
    got = [tuple(r) for r in rtl["reads"]]
    assert len(got) == len(expected) == sum(op[0] == "rd" for op in ops)
    wrong = [f"{reg} at cycle {cycle}: RTL {value:#x} (xRESP {resp:#b}), model {want:#x} (xRESP {wresp:#b})"
             for (reg, value, cycle, resp), (_, want, _, wresp) in zip(got, expected) if (value, resp) != (want, wresp)]
    wrong += [f"write {k} ({op[1]}): RTL BRESP {rtl_w[2]:#b}, model {want:#b}"
              for k, (op, rtl_w, want) in enumerate(zip([o for o in ops if o[0] == "wr"], rtl["writes"], wresps))
              if rtl_w[2] != want]
    assert not wrong, f"{name}: " + "; ".join(wrong)
    checks = rtl["axi_checks"]
    assert checks["violations"] == 0, rule_names(checks["rules"])
