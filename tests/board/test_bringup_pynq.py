"""`vdla board check` with the pynq backend (the real pynq 3.0.1) on the simulated PYNQ device
(tests/board/pynq_sim.py), as on a board: every check passes on a good bitstream, and each fault
injected into the simulated hardware (its AXI-lite slave, its DMA, its counters, its
configuration, a hung bus) fails the command with exit status 1 and the right line."""

import re
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from vdla_hw import regmap
from vdla_hw.config import load_config

warnings.filterwarnings("ignore", message="No devices found")
from tests.board import pynq_sim  # noqa: E402  (registers the simulated device with pynq)
from tests.board.test_pynq import write_bitstream  # noqa: E402
from tests.driver.test_bringup import check, line  # noqa: E402  (`vdla board check ARGS`; backend pynq, the default)

CHECKS = ("identify", "registers", "dma", "program")
DOC = Path(__file__).resolve().parents[2] / "docs" / "bringup.md"


def doc_outputs() -> list[list[str]]:
    """The sample outputs of docs/bringup.md (its ```text blocks), as lines."""
    return [block.splitlines() for block in re.findall(r"^```text\n(.*?)^```", DOC.read_text(), re.S | re.M)]


@pytest.fixture(scope="module")
def sim_device():
    return pynq_sim.register()


@pytest.fixture
def bitstream(tmp_path, sim_device):
    return write_bitstream(tmp_path / "tiny", "tiny")




def test_every_check_passes_on_the_simulated_board(capsys, bitstream, sim_device):
    stale = sim_device.stale_reads
    code, lines, err = check(capsys, "--bitstream", str(bitstream))
    assert code == 0, lines
    tiny = load_config("tiny")
    assert lines[0] == f"vdla board check: pynq device, configuration tiny ({tiny.fingerprint}), bitstream {bitstream}"
    assert [line(lines, n)[0] for n in CHECKS] == ["ok"] * 4  # the configuration came from the manifest
    assert lines[-1] == "passed: 4 checks, 4 ok, 0 failed, 0 skipped" and err == ""
    assert sim_device.stale_reads == stale  # the driver flushed what the device read
    assert [ln.replace(str(bitstream), "simbit/vdla.bit") for ln in lines] == doc_outputs()[0]


def test_the_check_runs_on_a_coherent_port(capsys, tmp_path, sim_device):
    import json

    config = load_config(json.dumps({"preset": "tiny", "MEM_PORT": "acp"}))
    code, lines, _ = check(capsys, "--bitstream", str(write_bitstream(tmp_path / "acp", config)))
    assert code == 0 and sim_device.coherent, lines


def test_a_register_bit_stuck_at_zero_fails(capsys, bitstream, monkeypatch):
    write = pynq_sim.SimulatedPynqDevice.write_registers
    stuck = regmap.offset("DRAM_BYTES")

    def write_registers(self, address, data):
        word = int(np.frombuffer(bytes(data), dtype="<u4")[0])
        if address - self.control_base == stuck:
            word &= ~(1 << 30)
        write(self, address, np.array([word], dtype="<u4").tobytes())

    monkeypatch.setattr(pynq_sim.SimulatedPynqDevice, "write_registers", write_registers)
    code, lines, _ = check(capsys, "--bitstream", str(bitstream))
    assert code == 1
    assert line(lines, "registers") == ("FAIL", "DRAM_BYTES (0x14): wrote 0xffffffff (all ones), read 0xbfffffff")


def test_a_dma_that_corrupts_a_byte_fails(capsys, bitstream, monkeypatch):
    device_write = pynq_sim.SimulatedPynqDevice._device_write

    def corrupting(self, address, data):
        data = np.array(data, dtype=np.uint8)
        data[-300] ^= 0x01  # in the copy the STORE wrote (the instructions are the last 256 bytes)
        device_write(self, address, data)

    monkeypatch.setattr(pynq_sim.SimulatedPynqDevice, "_device_write", corrupting)
    code, lines, _ = check(capsys, "--bitstream", str(bitstream))
    assert code == 1
    status, detail = line(lines, "dma")
    assert status == "FAIL" and detail.startswith("round trip LOAD -> STORE: 1 of 8512 bytes differ")
    assert "(copy)" in detail


@pytest.mark.parametrize("register", ["CYCLES_LO", "LOAD_STALL_MEM"])
def test_a_counter_off_by_one_fails(capsys, bitstream, monkeypatch, register):
    read = pynq_sim.SimulatedPynqDevice.read_registers

    def read_registers(self, address, length):
        raw = read(self, address, length)
        if address - self.control_base == regmap.offset(register):
            raw = np.array([np.frombuffer(raw, dtype="<u4")[0] + 1], dtype="<u4").tobytes()
        return raw

    monkeypatch.setattr(pynq_sim.SimulatedPynqDevice, "read_registers", read_registers)
    code, lines, _ = check(capsys, "--bitstream", str(bitstream))
    assert code == 1
    status, detail = line(lines, "program")
    name = "CYCLES" if register == "CYCLES_LO" else register
    assert status == "FAIL" and detail.startswith(f"1 of 21 counters differ from the simulator's: {name} ")


def test_hardware_of_another_configuration_fails_identify(capsys, tmp_path, sim_device):
    bit = write_bitstream(tmp_path / "mixed", "tiny", hardware="osdi18")
    code, lines, _ = check(capsys, "--bitstream", str(bit))
    assert code == 1
    status, detail = line(lines, "identify")
    osdi18 = load_config("osdi18")
    assert status == "FAIL" and f"the device reports ISA v1, ID_CONFIG {osdi18.fingerprint_hash:08x} (osdi18," in detail
    assert [line(lines, n)[0] for n in ("registers", "dma", "program")] == ["ok", "skip", "skip"]
    assert lines[1:] == doc_outputs()[1]


def test_a_hung_bus_fails_within_the_timeout(capsys, bitstream, monkeypatch):
    read = pynq_sim.SimulatedPynqDevice.read_registers
    release = threading.Event()

    def read_registers(self, address, length):
        if address - self.control_base == regmap.offset("DRAM_BASE"):
            release.wait(60)
        return read(self, address, length)

    monkeypatch.setattr(pynq_sim.SimulatedPynqDevice, "read_registers", read_registers)
    start = time.monotonic()
    try:
        code, lines, _ = check(capsys, "--bitstream", str(bitstream), "--timeout", "1")
    finally:
        release.set()
    assert code == 1 and time.monotonic() - start < 15
    assert line(lines, "registers") == ("FAIL", "no answer within 1 s: the device hangs (reload the bitstream)")


def test_bad_input_is_one_line_with_status_2(capsys, tmp_path, bitstream):
    code, _, err = check(capsys, "--bitstream", str(tmp_path / "none.bit"))
    assert code == 2 and err == f"vdla: error: {tmp_path / 'none.bit'}: no such bitstream (the .bit, with vdla.json " \
                                "and the .hwh beside it)\n"
    code, _, err = check(capsys, "--bitstream", str(bitstream), "--config", "osdi18")
    assert code == 2 and "bitstream was built for configuration 1x4_" in err and err.count("\n") == 1
    bitstream.write_text("not a bitstream")
    code, _, err = check(capsys, "--bitstream", str(bitstream))
    assert code == 2 and err.startswith(f"vdla: error: {bitstream}: pynq could not load the overlay") and \
        err.count("\n") == 1


def test_no_device_is_one_line_with_status_2(tmp_path):
    """In a process where pynq finds no device (the simulated one is not imported): exit status 2."""
    import subprocess
    import sys
    from pathlib import Path

    bit = write_bitstream(tmp_path / "tiny", "tiny")
    done = subprocess.run([sys.executable, "-W", "ignore", "-m", "vdla", "board", "check", "--bitstream", str(bit)],
                          cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("vdla: error: pynq finds no device (No Devices Found); the pynq backend runs on a PYNQ "
                           "board\n")
