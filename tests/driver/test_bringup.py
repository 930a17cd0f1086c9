"""`vdla board check` (driver/bringup.py, vdla/cmd_board.py) in the main environment: it passes on
the sim backend and on a register-level device (the pynq backend minus pynq: the register
model over host memory), and fails, exit status 1 with the right line, on injected faults: a
register that does not hold a written value, a DMA that corrupts a byte, a counter or CYCLES off
by one, hardware of another configuration, a device that does not answer. The pynq backend on
the simulated PYNQ device runs the same command in tests/board/test_bringup_pynq.py."""

import json
import re
import threading
import time

import numpy as np
import pytest

from driver import bringup
from driver import device as device_module
from driver.regmodel import RegisterModel
from tests.driver.test_registers import ModelDevice
from vdla.cli import main
from vdla_hw.config import load_config


def check(capsys, *args):
    """(exit status, stdout lines, stderr) of `vdla board check ARGS`."""
    code = main(["board", "check", *args])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def line(lines, name):
    """The line of check ``name``: (status, detail)."""
    [found] = [ln for ln in lines if ln.split()[1:2] == [name]]
    return found.split()[0], found.split(None, 2)[2]


@pytest.fixture
def backend(monkeypatch):
    """Make `--backend sim` open ``cls`` (a device with an injected fault)."""
    def use(cls):
        monkeypatch.setitem(device_module.BACKENDS, "sim", cls)
    return use


def test_passes_on_the_sim_backend(capsys):
    code, lines, err = check(capsys, "--backend", "sim", "--config", "tiny")
    assert code == 0, lines
    assert [line(lines, n)[0] for n in ("identify", "registers", "dma", "program")] == ["ok", "skip", "ok", "ok"]
    assert "no control registers" in line(lines, "registers")[1]
    assert lines[-1] == "passed: 4 checks, 3 ok, 0 failed, 1 skipped" and err == ""


def test_passes_on_a_register_level_device(capsys, backend):
    backend(ModelDevice)
    code, lines, _ = check(capsys, "--backend", "sim", "--config", "tiny")
    assert code == 0, lines
    assert all(line(lines, n)[0] == "ok" for n in ("identify", "registers", "dma", "program"))
    assert f"x {len(bringup.PATTERNS)} patterns" in line(lines, "registers")[1]


def test_registers_are_restored_after_the_register_check():
    device = ModelDevice("tiny")
    before = dict(DRAM_BASE=0x1234_5000, DRAM_BYTES=77, INSN_ADDR=0x40, INSN_COUNT=3)
    device.model.regs.update(before)
    bringup.check_registers(device, device.config, 10.0)
    assert {name: device.model.regs[name] for name in before} == before


def test_json_report(capsys):
    code, lines, _ = check(capsys, "--backend", "sim", "--config", "tiny", "--json")
    report = json.loads("\n".join(lines))
    assert code == 0 and report["passed"] and report["config"] == "tiny"
    assert [c["name"] for c in report["checks"]] == ["identify", "registers", "dma", "program"]
    assert report["counts"] == {"ok": 3, "FAIL": 0, "skip": 1}


class StuckBit(ModelDevice):
    """INSN_ADDR's bit 7 is stuck at 0: a register that does not hold a written value."""

    def _wr(self, name, value):
        super()._wr(name, value & ~0x80 if name == "INSN_ADDR" else value)


def test_a_register_that_does_not_hold_its_value_fails(capsys, backend):
    backend(StuckBit)
    code, lines, _ = check(capsys, "--backend", "sim", "--config", "tiny")
    assert code == 1
    status, detail = line(lines, "registers")
    assert status == "FAIL"
    assert detail == "INSN_ADDR (0x18): wrote 0xffffffff (all ones), read 0xffffff7f"
    assert lines[-1].startswith("FAILED: 4 checks")


class Aliased(ModelDevice):
    """INSN_COUNT's address decodes to INSN_ADDR's storage (a decode that drops an address bit)."""

    def _rd(self, name):
        return super()._rd("INSN_ADDR" if name == "INSN_COUNT" else name)

    def _wr(self, name, value):
        super()._wr("INSN_ADDR" if name == "INSN_COUNT" else name, value)


def test_aliased_registers_fail():
    device = Aliased("tiny")
    with pytest.raises(bringup.CheckFailed, match=r"INSN_ADDR \(0x18\): wrote 0xc0de0182 .* read 0xc0de01c3 "
                       r"\(an aliased address\?\)"):
        bringup.check_registers(device, device.config, 10.0)


class CorruptingDma(ModelDevice):
    """The device's writes to DRAM flip one bit of their 200th byte (a DMA that corrupts a byte)."""

    def _mem_write(self, address, data):
        data = np.array(data, dtype=np.uint8)
        if data.size > 200:
            data[200] ^= 0x10
        super()._mem_write(address, data)


def test_a_dma_that_corrupts_a_byte_fails(capsys, backend):
    backend(CorruptingDma)
    code, lines, _ = check(capsys, "--backend", "sim", "--config", "tiny")
    assert code == 1
    status, detail = line(lines, "dma")
    assert status == "FAIL"
    bundle, expected = bringup.dma_program(load_config("tiny"))
    assert detail == (f"round trip LOAD -> STORE: 1 of 8512 bytes differ, the first at image offset 0xc8 (gap_in): "
                      f"expected {expected[200]:#04x}, got {expected[200] ^ 0x10:#04x}")


class ByteOfTheCopy(ModelDevice):
    """The STORE's data arrives with one byte changed (the 5th byte of the copied range)."""

    def _mem_write(self, address, data):
        data = np.array(data, dtype=np.uint8)
        lo = bringup.dma_program(self.config)[0].symbols["copy"].byte_range(self.config)[0]
        if data.size > lo + 4:
            data[lo + 4] += 1
        super()._mem_write(address, data)


def test_a_changed_byte_of_the_stored_data_is_named(capsys, backend):
    backend(ByteOfTheCopy)
    code, lines, _ = check(capsys, "--backend", "sim", "--config", "tiny")
    assert code == 1
    status, detail = line(lines, "dma")
    assert status == "FAIL" and "1 of 8512 bytes differ, the first at image offset 0x1fc4 (copy)" in detail


def off_by_one(register):
    class OffByOne(ModelDevice):
        def _rd(self, name):
            return super()._rd(name) + (name == register)
    return OffByOne


@pytest.mark.parametrize("register", ["COMPUTE_BUSY", "STORE_STALL_TOKEN", "CYCLES_LO"])
def test_a_counter_off_by_one_fails(capsys, backend, register):
    import vdla_sim

    backend(off_by_one(register))
    code, lines, _ = check(capsys, "--backend", "sim", "--config", "tiny")
    assert code == 1
    status, detail = line(lines, "program")
    assert status == "FAIL" and line(lines, "dma")[0] == "ok"
    reference = vdla_sim.simulate(bringup.known_program(load_config("tiny")))
    if register == "CYCLES_LO":
        want = f"CYCLES {reference.cycles + 1} (simulator {reference.cycles})"
    else:
        module, counter = register.split("_", 1)
        value = reference.modules[module.lower()][counter.lower()]
        want = f"{register} {value + 1} (simulator {value})"
    assert detail == f"1 of 21 counters differ from the simulator's: {want}"


class OtherConfiguration(ModelDevice):
    """Hardware built for osdi18 where tiny's bitstream was expected."""

    def __init__(self, config=None):
        super().__init__(config)
        self.model = RegisterModel(load_config("osdi18"), self._mem_read, self._mem_write)


def test_a_device_of_another_configuration_fails_identify(capsys, backend):
    backend(OtherConfiguration)
    code, lines, _ = check(capsys, "--backend", "sim", "--config", "tiny")
    assert code == 1
    status, detail = line(lines, "identify")
    osdi18, tiny = load_config("osdi18"), load_config("tiny")
    assert status == "FAIL"
    assert detail == (f"expected ISA v1, ID_CONFIG {tiny.fingerprint_hash:08x} (tiny, {tiny.fingerprint}); the "
                      f"device reports ISA v1, ID_CONFIG {osdi18.fingerprint_hash:08x} (osdi18, {osdi18.fingerprint}): "
                      "the loaded hardware is another configuration (load the bitstream built for this one)")
    assert line(lines, "registers")[0] == "ok"
    assert [line(lines, n)[0] for n in ("dma", "program")] == ["skip", "skip"]


def test_a_device_that_does_not_answer_fails_within_the_timeout(capsys, backend):
    release = threading.Event()

    class Hung(ModelDevice):
        def _rd(self, name):
            if name == "STATUS":
                release.wait(60)  # a bus access that never completes
            return super()._rd(name)

    backend(Hung)
    start = time.monotonic()
    try:
        code, lines, _ = check(capsys, "--backend", "sim", "--config", "tiny", "--timeout", "0.5")
    finally:
        release.set()
    assert code == 1 and time.monotonic() - start < 10
    assert line(lines, "registers") == ("FAIL", "no answer within 0.5 s: the device hangs (reload the bitstream)")
    assert line(lines, "identify")[0] == "ok"
    for name in ("dma", "program"):
        assert line(lines, name) == ("skip", "not run: the device did not answer the registers check")


class NeverFinishes(ModelDevice):
    """The control slave starts runs that never reach FINISH (a deadlocked or stuck core)."""

    def __init__(self, config=None):
        super().__init__(config)
        self.model.cycle_budget = 40  # the model then stays busy, as the hardware would hang


def test_a_program_that_never_finishes_fails_with_each_modules_state(capsys, backend):
    backend(NeverFinishes)
    code, lines, _ = check(capsys, "--backend", "sim", "--config", "tiny", "--timeout", "1")
    assert code == 1
    for name in ("dma", "program"):  # the device's wait gave up at half the timeout; CLEAR let the next run start
        status, detail = line(lines, name)
        assert status == "FAIL"
        assert re.match(r"the device said: regmodel device timed out after 0\.5 s: STATUS busy at cycle \d+; "
                        r"fetch: \d+ insns retired, busy \d+ cycles; load: ", detail), detail
    assert line(lines, "registers")[0] == "ok"


def test_bad_input_is_one_line_with_status_2(capsys, tmp_path):
    code, lines, err = check(capsys, "--backend", "sim", "--config", str(tmp_path / "none.json"))
    assert code == 2 and err.count("\n") == 1 and "neither a preset" in err
    code, lines, err = check(capsys, "--backend", "sim", "--bitstream", str(tmp_path / "x.bit"))
    assert code == 2 and err == "vdla: error: --bitstream is for --backend pynq; the sim backend has no bitstream\n"
    with pytest.raises(SystemExit) as exit_:
        check(capsys, "--backend", "fpga")
    assert exit_.value.code == 2 and "invalid choice: 'fpga'" in capsys.readouterr().err


def test_the_programs_fit_every_preset_and_cross_4k_boundaries():
    from vdla_hw.presets import PRESETS

    for name in PRESETS:
        config = load_config(name)
        bundle, expected = bringup.dma_program(config)
        for symbol, boundary in (("data", bringup.BOUNDARY), ("copy", 2 * bringup.BOUNDARY)):
            lo, hi = bundle.symbols[symbol].byte_range(config)
            assert lo < boundary < hi, (name, symbol)
        lo, hi = bundle.symbols["copy"].byte_range(config)
        assert len(set(expected[lo:hi].tolist())) == 256  # every byte value is carried
        assert not np.array_equal(expected[lo:hi], bundle.dram[lo:hi])
        bringup.known_program(config).check()


@pytest.mark.slow
@pytest.mark.rtl
def test_passes_on_the_rtl(capsys):
    """The RTL under Verilator: the models are built before the timed checks (minutes the first
    time, not counted in any check's timeout); the register plan runs over its AXI-lite slave in
    one cocotb simulation, its DMA and its counters must be the simulator's."""
    code, lines, _ = check(capsys, "--backend", "rtl", "--config", "tiny", "--timeout", "300")
    assert code == 0, lines
    assert [line(lines, n)[0] for n in ("identify", "registers", "dma", "program")] == ["ok"] * 4
    assert "(one simulation of the control slave)" in line(lines, "registers")[1]


def test_the_register_plan_reports_the_first_wrong_read():
    """What the RTL's one-sequence register check evaluates: a read that differs is named with
    what was written (here: DRAM_BASE's bit 12 reads as 0 once, in the walking-ones pass)."""
    plan = bringup.register_plan()
    reads = [op[2] for op in plan if op[0] == "rd"]
    k = [op[1:] for op in plan if op[0] == "rd"].index(("DRAM_BASE", 1 << 12, "wrote 0x00001000 (walking one, bit 12)"))
    reads[k] = 0
    with pytest.raises(bringup.CheckFailed, match=r"^DRAM_BASE \(0x10\): wrote 0x00001000 \(walking one, bit 12\), "
                       r"read 0x00000000$"):
        bringup._first_wrong_read(plan, reads)
    bringup._first_wrong_read(plan, [op[2] for op in plan if op[0] == "rd"])  # all as written: no finding
