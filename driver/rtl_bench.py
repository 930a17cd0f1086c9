"""The cocotb bench of the RTL backend (run inside the simulator by :mod:`driver.rtl_run`; never
imported otherwise).

The design sits in ``vdla_harness`` (``vdla_hw.rtl.harness``) beside an AXI / AXI-lite protocol
checker. The bench owns the clock and reset, cocotbext-axi's AXI-lite master on ``s_axil``, the
memory on ``m_axi`` (:class:`vdla_hw.rtl.tb_memory.AxiMemory`: the contract's latency, optional
stalls) and three monitors: the retire trace (core top: edges of ``ret_tog``), the START write's
handshake (rising ``s_axil_awready``) and ``irq``. Programs run through the driver's own register
code, :class:`driver.registers.RegisterDevice`, in a cocotb bridge thread whose register reads
and writes become AXI-lite transactions: the bench has no register sequence of its own.

Per program the result holds the final image, the CYCLES register, STATUS/ERROR/ERROR_INSN,
every counter register, the retire trace, ``wall_cycles`` (clock edges from the START write's
handshake to the first edge that samples ``irq`` high: CYCLES + 2 by docs/spec.md section 5,
which the tests check) and the checker's counts for the run. A job item with
``ops`` instead runs a raw register sequence (the shared corpus of ``tests/driver/regseq.py``)
and records every read with the cycle its address was taken.
"""

from __future__ import annotations

import json
import os

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.task import bridge, resume
from cocotb.triggers import ClockCycles, Edge, Event, First, ReadOnly, RisingEdge
from cocotb.utils import get_sim_time
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiProt
from cocotbext.axi.axil_master import AxiLiteWriteRespCmd

from driver.rtl_bench_device import DRAM_BASE, POLL_CYCLES, BenchRegisterDevice, program_record, run_outcome
from vdla_hw import isa, regmap
from vdla_hw.bundle import Bundle
from vdla_hw.rtl.tb_memory import CLOCK_PERIOD_NS, AxiMemory, pauses

EXEC = isa.EXEC_MODULES


class Bench:
    """Clock, reset, drivers, memory and monitors of one simulation."""

    def __init__(self, dut, options: dict):
        self.dut = dut
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        if options.get("axil_stall", 0) > 0:   # pause each of the five AXI-lite channels at random
            channels = (self.axil.write_if.aw_channel, self.axil.write_if.w_channel, self.axil.write_if.b_channel,
                        self.axil.read_if.ar_channel, self.axil.read_if.r_channel)
            for k, ch in enumerate(channels):
                ch.set_pause_generator(pauses(options["seed"] * 104729 + k, options["axil_stall"]))
        self.B = len(dut.m_axi_rdata) // 8
        self.memory = AxiMemory(dut, "m_axi", dut.clk, dut.rst, beat_bytes=self.B, latency=options["latency"],
                                write_latency=options["write_latency"], stall=options["stall"], seed=options["seed"])
        self.core = hasattr(dut, "ret_tog")
        self.retire: list = []
        self.start_edge = None
        self.irq_edge = None
        self.stamps: list | None = None     # AXI-lite handshakes, while a raw sequence runs
        self.srams = None

    async def reset(self):
        self.dut.rst.value = 1          # before the first clock edge: the bus models start in reset
        await self.memory.start()
        await ClockCycles(self.dut.clk, 4)
        self.dut.rst.value = 0
        await ClockCycles(self.dut.clk, 2)
        cocotb.start_soon(self._irq_monitor())
        cocotb.start_soon(self._start_monitor())
        if self.core:
            cocotb.start_soon(self._retire_monitor())

    def edge(self) -> int:
        return self.memory.clock.edge()

    # --- monitors -------------------------------------------------------------------------
    async def _retire_monitor(self):
        dut = self.dut
        while True:
            await Edge(dut.ret_tog)
            await ReadOnly()
            valid, cycle = int(dut.ret_valid.value), int(dut.ret_cycle.value)
            for k, m in enumerate(EXEC):
                if valid >> k & 1:
                    self.retire.append((int(getattr(dut, "ret_index_" + m).value), m, cycle))

    async def _irq_monitor(self):
        while True:
            await RisingEdge(self.dut.irq)
            self.irq_edge = self.edge()

    async def _start_monitor(self):
        """The cycle each AXI-lite write is taken (AWREADY rises with the handshake)."""
        dut = self.dut
        while True:
            await RisingEdge(dut.s_axil_awready)
            await ReadOnly()
            addr, data = int(dut.s_axil_awaddr.value), int(dut.s_axil_wdata.value)
            data &= regmap.strobe_mask(int(dut.s_axil_wstrb.value))
            if regmap.register_at(addr) == regmap.BY_NAME["CTRL"] and data & regmap.CTRL_START:
                self.start_edge = self.edge()
                self.irq_edge = None
            if self.stamps is not None:
                self.stamps.append(("wr", addr, self.edge()))

    async def _read_monitor(self):
        dut = self.dut
        while True:
            await RisingEdge(dut.s_axil_arvalid)
            await ReadOnly()
            if self.stamps is not None:
                self.stamps.append(("rd", int(dut.s_axil_araddr.value), self.edge()))

    # --- register access (the driver's _rd/_wr) -------------------------------------------
    async def read(self, name: str) -> int:
        value, resp = await self.read_at(regmap.offset(name))
        if resp != regmap.RESP_OKAY:
            raise RuntimeError(f"the control slave answered a read of {name} with xRESP {resp:#b}")
        return value

    async def write(self, name: str, value: int) -> None:
        resp = await self.write_op(regmap.offset(name), value)
        if resp != regmap.RESP_OKAY:
            raise RuntimeError(f"the control slave answered a write of {name} with xRESP {resp:#b}")

    def port_address(self, offset: int) -> int:
        """The address the slave's port sees for an access at ``offset`` of its segment: the
        low bits its address port is wide (the block design wires the interconnect's address to
        the port's width)."""
        return offset & ((1 << len(self.dut.s_axil_araddr)) - 1)

    async def read_at(self, offset: int) -> tuple[int, int]:
        """(RDATA, RRESP) of a read at byte ``offset`` (4-byte aligned)."""
        res = await self.axil.read(self.port_address(offset), regmap.REG_BYTES)
        return int.from_bytes(res.data, "little"), int(res.resp)

    async def write_at(self, offset: int, value: int, strobe: int = regmap.ALL_BYTES) -> int:
        """BRESP of a one-beat write at byte ``offset`` (4-byte aligned): WDATA ``value`` on every
        lane, WSTRB ``strobe``. cocotbext-axi's ``write`` would zero the lanes a partial write
        does not strobe; a master may drive anything there, so this drives the value's bytes
        (a slave that ignored WSTRB would take them). The beat goes through the master's AW and
        W channels (their pause generators) and its B response through the master's own
        response process."""
        w_if = self.axil.write_if
        event = Event()
        w_if.in_flight_operations += 1
        w_if._idle.clear()
        await w_if.int_write_resp_command_queue.put(
            AxiLiteWriteRespCmd(offset, regmap.REG_BYTES, 1, AxiProt.NONSECURE, event))
        aw, w = w_if.aw_channel._transaction_obj(), w_if.w_channel._transaction_obj()
        aw.awaddr, aw.awprot = self.port_address(offset), AxiProt.NONSECURE
        w.wdata, w.wstrb = value & 0xFFFFFFFF, strobe
        await w_if.aw_channel.send(aw)
        await w_if.w_channel.send(w)
        await event.wait()
        return int(event.data.resp)

    async def write_op(self, offset: int, value: int, strobe: int = regmap.ALL_BYTES) -> int:
        """:meth:`write_at`, after the memory bus is quiet when the write STARTs a run; its BRESP."""
        if regmap.register_at(offset) == regmap.BY_NAME["CTRL"] and value & regmap.CTRL_START:
            await self.quiet_bus()
        return await self.write_at(offset, value, strobe)

    async def quiet_bus(self, limit: int = 100_000):
        """Wait until nothing of an earlier run is in flight on the memory bus, so a START runs
        at once (a board would see the same after the driver's register reads)."""
        dut = self.dut
        for _ in range(limit):
            if not (int(dut.chk_rd_out.value) or int(dut.chk_wr_out.value) or dut.m_axi_arvalid.value
                    or dut.m_axi_awvalid.value or dut.m_axi_wvalid.value):
                return
            await RisingEdge(dut.clk)

    async def pause(self):
        """Between STATUS polls: until irq rises, at most POLL_CYCLES cycles."""
        if not self.dut.irq.value:
            await First(RisingEdge(self.dut.irq), ClockCycles(self.dut.clk, POLL_CYCLES))
        await ClockCycles(self.dut.clk, 2)

    async def seconds(self) -> float:
        return get_sim_time("ns") * 1e-9

    def checker(self) -> dict:
        d = self.dut
        return {"checks": int(d.chk_checks.value), "violations": int(d.chk_violations.value),
                "rules": int(d.chk_rules.value), "rd_out": int(d.chk_rd_out.value),
                "wr_out": int(d.chk_wr_out.value)}

    def _memories(self) -> list:
        if self.srams is None:
            self.srams = [h for h in self.dut.dut if h._name.endswith("_mem")]
        return self.srams

    def save_srams(self) -> dict:
        """Every on-chip memory's words (hex), by name: what :meth:`load_srams` puts back."""
        return {mem._name: [format(int(mem[k].value), "x") for k in range(len(mem))] for mem in self._memories()}

    def load_srams(self, words: dict) -> None:
        for mem in self._memories():
            for k, word in enumerate(words[mem._name]):
                mem[k].value = int(word, 16)

    def clear_srams(self):
        """Zero every on-chip SRAM through the simulator (backdoor), so a program starts from a
        fresh simulator's all-zero SRAMs (the hardware itself never clears them)."""
        for mem in self._memories():
            try:
                mem.value = [0] * len(mem)
            except Exception:  # noqa: BLE001 - per-element fallback for simulators without array writes
                for k in range(len(mem)):
                    mem[k].value = 0

    # --- one program through the driver ---------------------------------------------------
    async def run_program(self, bundle: Bundle, budget: int, poison: list | None = None,
                          clear_srams: bool = True) -> dict:
        """Run ``bundle`` through the driver; ``clear_srams``: zero the SRAMs first (else they
        hold what the previous program left, as on the board)."""
        if clear_srams:
            self.clear_srams()
        self.retire = []
        before = self.checker()
        beats = self.memory.beats
        device = BenchDevice(self, bundle.config, poison or [])
        outcome = await bridge(device.run_bundle)(bundle, budget)
        await ClockCycles(self.dut.clk, 2)
        return program_record(outcome, self.retire, self.memory.beats - beats, self.start_edge, self.irq_edge,
                              before, self.checker(), self.memory.dump())

    # --- a raw register sequence ------------------------------------------------------------
    async def run_ops(self, bundle: Bundle | None, ops: list) -> dict:
        """``ops``: ["wr", reg, value(, strobe)] | ["rd", reg] | ["wait", cycles] | ["wait_irq",
        cycles]; ``reg`` a register name or a byte offset, ``strobe`` WSTRB (default all bytes).
        Returns every read as (reg, value, cycle its address was taken, RRESP) and every write
        as (reg, cycle, BRESP); the image (if any) is mapped at DRAM_BASE."""
        self.clear_srams()
        if bundle is not None:
            self.memory.load(DRAM_BASE, bundle.dram.tobytes())
        self.stamps = []
        monitor = cocotb.start_soon(self._read_monitor())
        reads, writes = [], []
        for op in ops:
            if op[0] == "wr":
                offset = _offset(op[1])
                resp = await self.write_op(offset, int(op[2]), int(op[3]) if len(op) > 3 else regmap.ALL_BYTES)
                writes.append((op[1], self._stamp("wr", self.port_address(offset)), resp))
            elif op[0] == "rd":
                offset = _offset(op[1])
                value, resp = await self.read_at(offset)
                reads.append((op[1], value, self._stamp("rd", self.port_address(offset)), resp))
            elif op[0] == "wait":
                await ClockCycles(self.dut.clk, int(op[1]))
            elif op[0] == "wait_irq":
                if not self.dut.irq.value:
                    await First(RisingEdge(self.dut.irq), ClockCycles(self.dut.clk, int(op[1])))
            else:
                raise ValueError(f"unknown register op {op!r}")
        monitor.cancel()
        self.stamps = None
        await self.quiet_bus()
        return {"reads": reads, "writes": writes, "axi_checks": self.checker()}

    def _stamp(self, kind: str, offset: int) -> int:
        for k in range(len(self.stamps) - 1, -1, -1):
            if self.stamps[k][0] == kind and self.stamps[k][1] == offset:
                return self.stamps.pop(k)[2]
        raise RuntimeError(f"no {kind} handshake seen at offset {offset:#x}")


def _offset(reg) -> int:
    """The byte offset of a register op's ``reg``: a register name or an offset."""
    return regmap.offset(reg) if isinstance(reg, str) else int(reg)


class BenchDevice(BenchRegisterDevice):
    """The driver's register device on the simulated design: registers over AXI-lite, polls
    that let the simulation run until irq. Runs in a bridge thread; every simulator access goes
    through a ``resume``-wrapped coroutine."""

    def __init__(self, bench: Bench, config, poison: list):
        super().__init__(config, bench.memory, poison)
        self._rd_async = resume(bench.read)
        self._wr_async = resume(bench.write)
        self._pause = resume(bench.pause)
        self._seconds = resume(bench.seconds)

    def _rd(self, name: str) -> int:
        return int(self._rd_async(name))

    def _wr(self, name: str, value: int) -> None:
        self._wr_async(name, value)

    def _clock(self) -> float:
        return self._seconds()

    def _sleep(self, seconds: float) -> None:
        self._pause()

    def run_bundle(self, bundle: Bundle, budget: int) -> dict:
        return run_outcome(self, bundle, budget)

@cocotb.test()
async def run_jobs(dut):
    """Run every item of the job file named by VDLA_RTL_JOB; write one result per item."""
    job = json.loads(open(os.environ["VDLA_RTL_JOB"]).read())
    cocotb.start_soon(Clock(dut.clk, CLOCK_PERIOD_NS, unit="ns").start())
    bench = Bench(dut, job["memory"])
    await bench.reset()
    if job.get("srams_in"):
        bench.load_srams(json.loads(open(job["srams_in"]).read()))
    for item in job["programs"]:
        bundle = Bundle.load(item["bundle"]) if item.get("bundle") else None
        if "ops" in item:
            res = await bench.run_ops(bundle, item["ops"])
            dram = np.zeros(0, dtype=np.uint8)
        else:
            res = await bench.run_program(bundle, int(item["budget"]), item.get("poison"),
                                          item.get("clear_srams", True))
            dram = res.pop("dram")
        np.savez(item["result"], dram=dram, meta=np.array(json.dumps(res)))
    if job.get("srams_out"):
        with open(job["srams_out"], "w") as out:
            out.write(json.dumps(bench.save_srams()))
