"""The register protocol (driver.registers) against the register-level model (driver.regmodel)
in this environment, without pynq: the same run sequence the pynq backend uses, the register
model's behaviour on bad register values, and the lead's executor running a whole network
unchanged on a register-level device."""

import numpy as np
import pytest

from driver import open_device
from driver import status as st
from driver.device import Buffer, HostMemoryDevice
from driver.registers import RegisterDevice
from driver.regmodel import RegisterModel, SlaveError
from tests.driver import device_cases
from tests.hw import programs
from vdla_hw import regmap
from vdla_hw.semantics import execute


class ModelDevice(RegisterDevice, HostMemoryDevice):
    """Host-memory buffers + RegisterModel registers: the pynq backend minus pynq."""

    target = "regmodel"

    def __init__(self, config=None):
        super().__init__(config)
        self.buffers: dict[int, Buffer] = {}
        self.model = RegisterModel(self.config, self._mem_read, self._mem_write)

    def _alloc(self, nbytes):
        buffer = super()._alloc(nbytes)
        self.buffers[buffer.address] = buffer
        return buffer

    def _find(self, address, nbytes):
        for base, buffer in self.buffers.items():
            if base <= address and address + nbytes <= base + buffer.size:
                return buffer.handle, address - base
        raise KeyError(address)

    def _mem_read(self, address, nbytes):
        memory, start = self._find(address, nbytes)
        return memory[start:start + nbytes].copy()

    def _mem_write(self, address, data):
        memory, start = self._find(address, len(data))
        memory[start:start + len(data)] = data

    def _rd(self, name):
        return self.model.read(regmap.offset(name))

    def _wr(self, name, value):
        self.model.write(regmap.offset(name), value)


@pytest.mark.parametrize("case", ["runs_like_the_reference", "buffers_round_trip", "start_and_wait",
                                  "bundle_for_another_configuration", "device_error_names_instruction"])
def test_register_device_case(case):
    device_cases.CASES[case](ModelDevice)


def test_timeout_reports_module_state_from_the_counters():
    device_cases.case_timeout_names_each_module(ModelDevice, timeout_s=0.2)


def test_model_sets_status_cycles_and_counters_like_the_simulator():
    import vdla_sim

    bundle, _, _ = programs.blocked_matmul("tiny")
    device = ModelDevice("tiny")
    result = device.run(bundle)
    sim = vdla_sim.simulate(bundle)
    assert result.cycles == sim.cycles
    assert result.counters["modules"] == sim.modules
    np.testing.assert_array_equal(result.dram, execute(bundle).dram)


def test_control_slave_refuses_bad_run_registers():
    device = ModelDevice("tiny")
    m = device.model
    buf = device.allocate(256)
    for values, cause in (({"INSN_COUNT": 0}, "zero_insn_count"), ({"INSN_COUNT": 1, "INSN_ADDR": 8}, "insn_addr_range"),
                          ({"INSN_COUNT": 100, "INSN_ADDR": 0}, "insn_addr_range")):
        m.write(regmap.offset("CTRL"), regmap.CTRL_CLEAR)
        m.write(regmap.offset("DRAM_BASE"), buf.address)
        m.write(regmap.offset("DRAM_BYTES"), 256)
        for name, value in values.items():
            m.write(regmap.offset(name), value)
        m.write(regmap.offset("CTRL"), regmap.CTRL_START)
        assert m.read(regmap.offset("STATUS")) == regmap.STATUS_ERROR
        assert m.read(regmap.offset("ERROR")) == regmap.ERROR_BITS[cause]
    m.write(regmap.offset("ID_CONFIG"), 0)  # read-only: ignored
    assert m.read(regmap.offset("ID_CONFIG")) == device.config.fingerprint_hash


def test_image_passing_4gib_is_refused_and_one_ending_at_it_is_not():
    """START refuses DRAM_BASE + DRAM_BYTES > 2^32 (the bus address would wrap), naming no
    instruction, before reading any memory; an image ending exactly at 2^32 passes that check."""
    m = RegisterModel(programs.blocked_matmul("tiny")[0].config, lambda a, n: (_ for _ in ()).throw(KeyError(a)),
                      lambda a, d: None)
    for nbytes, cause in ((0x1001, "dram_image_wrap"), (0x1000, "dram_range")):
        m.write(regmap.offset("CTRL"), regmap.CTRL_CLEAR)
        for name, value in (("DRAM_BASE", 0xFFFF_F000), ("DRAM_BYTES", nbytes), ("INSN_ADDR", 0), ("INSN_COUNT", 1)):
            m.write(regmap.offset(name), value)
        m.write(regmap.offset("CTRL"), regmap.CTRL_START)
        assert (m.read(regmap.offset("ERROR")), m.read(regmap.offset("ERROR_INSN"))) == \
            (regmap.ERROR_BITS[cause], st.NO_INSN), cause   # dram_range: the memory read, after the check


def test_partial_writes_and_unmapped_offsets():
    m = RegisterModel(programs.blocked_matmul("tiny")[0].config, lambda a, n: None, lambda a, d: None)
    m.write(regmap.offset("DRAM_BYTES"), 0x1122_3344)
    m.write(regmap.offset("DRAM_BYTES"), 0xAABB_CCDD, 0b0101)
    assert m.read(regmap.offset("DRAM_BYTES")) == 0x11BB_33DD
    m.write(regmap.offset("CTRL"), regmap.CTRL_START | regmap.CTRL_CLEAR, 0b1110)   # byte 0 not strobed
    assert m.starts == 0 and m.read(regmap.offset("STATUS")) == 0
    for offset in (0x30, 0x3C, regmap.SPAN, 0x100, 0x110, 0xFFC):
        with pytest.raises(SlaveError, match=f"{offset:#x}.*SLVERR"):
            m.read(offset)
        with pytest.raises(SlaveError):
            m.write(offset, regmap.CTRL_START)
    assert m.starts == 0 and m.read(regmap.offset("DRAM_BYTES")) == 0x11BB_33DD
    assert regmap.register_at(0x13).name == "DRAM_BASE" and regmap.register_at(regmap.ADDRESS_SPACE) is None


def test_executor_runs_a_network_unchanged_on_a_register_device():
    """The same output and cycles as on the simulator; the register device (like rtl and pynq)
    counts cycles and per-module counters only, so its records and report say GEMM utilisation
    and DRAM bytes were not measured, never 0."""
    from compiler.network import execute as run_graph
    from compiler.network.report import layer_row, summarise, table
    from vdla.network import prepare

    p = prepare("resnet18", resolution=32)
    q, x, placements, config = p.q, p.tests[:1], p.placements, p.config
    reference = run_graph(q, x, placements, open_device("sim", config))
    on_registers = run_graph(q, x, placements, ModelDevice(config))
    np.testing.assert_array_equal(on_registers.output, reference.output)
    assert [r.cycles for r in on_registers.records] == [r.cycles for r in reference.records]
    offloaded = [(ref, reg) for ref, reg in zip(reference.records, on_registers.records) if ref.placement == "vdla"]
    assert offloaded and all(ref.utilization > 0 and ref.bytes > 0 and ref.measured_by == "sim device"
                             for ref, _ in offloaded)
    unmeasured = "regmodel device; not measured: GEMM utilisation, DRAM bytes"
    assert all(reg.utilization is None and reg.bytes is None and reg.measured_by == unmeasured
               for _, reg in offloaded)
    row = layer_row(next(reg for _, reg in offloaded if reg.op == "conv"))
    assert row["utilization"] is row["bytes"] is row["useful_utilization"] is None
    totals = summarise(on_registers.records)
    assert totals["gemm_utilization"] is None and totals["measured_by"] == [unmeasured]
    text = table(on_registers.records, totals)
    assert "utilisation not measured" in text and f"n/m: not measured ({unmeasured})" in text
    assert summarise(reference.records)["gemm_utilization"] > 0


def test_run_register_accesses_counts_what_a_run_does():
    """The host-overhead model charges run_register_accesses() per layer: it must equal the
    register reads and writes of a real run of a loaded model (the one STATUS poll excluded)."""
    from driver.registers import run_register_accesses

    bundle, _, _ = programs.blocked_matmul("tiny")
    device = ModelDevice("tiny")
    model = device.loaded_model()
    model.load("mm", bundle, (), ())
    model.run("mm", {})  # leaves the device cleared, as between two layers
    seen = {"reads": [], "writes": []}
    read, write = device._rd, device._wr
    device._rd = lambda name: seen["reads"].append(name) or read(name)
    device._wr = lambda name, value: seen["writes"].append(name) or write(name, value)
    model.run("mm", {})
    polls = seen["reads"].count("STATUS") - 1  # the model finishes at START: one poll sees DONE
    assert polls == 1
    assert run_register_accesses() == (len(seen["writes"]), len(seen["reads"]) - polls)
