"""The cocotb testbench of the top level (run by :mod:`vdla_hw.rtl.runner`, never imported
by the package otherwise).

One simulation runs many program bundles back to back, as the board driver would: for each it
reads ID_ISA/ID_CONFIG, writes DRAM_BASE, DRAM_BYTES, INSN_ADDR, INSN_COUNT, writes CTRL=START
through cocotbext-axi's AXI-lite master, polls STATUS until DONE or ERROR, reads the cycle
counter and the error registers and writes CTRL=CLEAR (vdla_hw.regmap). The memory port is
served from vdla_sim's memory model (vdla_sim.memory.MemoryPort.read/write) in the cycle the
DUT moves each beat; a monitor records every retire (instruction index, module, cycle).
A run that does not finish within its cycle budget is stopped and reported as a timeout.
"""

from __future__ import annotations

import json
import os

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, RisingEdge
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam

from vdla_hw import regmap
from vdla_hw.bundle import Bundle
from vdla_hw.config import ISA_VERSION
from vdla_sim.memory import MemoryPort

MODULES = ("load", "compute", "store")
DRAM_BASE = 0x1000_0000
POLL = 64
AXI_RAM_BYTES = 1 << 21


class Testbench:
    """Clock, reset, the AXI-lite driver, the memory server and the retire monitor."""

    def __init__(self, dut):
        self.dut = dut
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        self.axi = hasattr(dut, "m_axi_awvalid")
        if self.axi:  # FPGA top: the memory is cocotbext-axi's AxiRam behind the AXI3 master
            self.B = len(dut.m_axi_rdata) // 8
            self.ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst, size=AXI_RAM_BYTES)
        else:
            self.B = len(dut.mem_rdata) // 8
        self.mems = None

    async def reset(self):
        dut = self.dut
        if not self.axi:
            dut.mem_rdata.value = 0
        dut.rst.value = 1
        await ClockCycles(dut.clk, 4)
        dut.rst.value = 0
        await ClockCycles(dut.clk, 2)

    def clear_srams(self):
        """Zero every on-chip SRAM through the simulator (backdoor), so each program starts
        from the simulator's all-zero SRAMs (the hardware itself never clears them)."""
        if self.mems is None:
            self.mems = [h for h in self.dut if h._name.endswith("_mem")]
        for mem in self.mems:
            try:
                mem.value = [0] * len(mem)
            except Exception:  # noqa: BLE001 - per-element fallback for simulators without array writes
                for k in range(len(mem)):
                    mem[k].value = 0

    async def rd(self, name):
        return await self.axil.read_dword(regmap.offset(name))

    async def wr(self, name, value):
        await self.axil.write_dword(regmap.offset(name), value & 0xFFFFFFFF)

    async def serve(self, port: MemoryPort, base: int, size: int, log: dict):
        """Every cycle: answer a read beat with image bytes, apply a write beat's strobed bytes,
        record retires. Runs until cancelled."""
        dut, B = self.dut, self.B
        active = True
        while True:
            if not active and not self.axi:
                await RisingEdge(dut.dbg_active)
            await FallingEdge(dut.clk)
            active = bool(dut.dbg_active.value)
            if self.axi:
                rv = int(dut.ret_valid.value)
                if rv:
                    cyc = int(dut.dbg_cycle.value)
                    for k, m in enumerate(MODULES):
                        if rv >> k & 1 and (not log["retire"] or log["retire"][-1][2] != cyc
                                            or all(r[1] != m for r in log["retire"] if r[2] == cyc)):
                            log["retire"].append((int(getattr(dut, "ret_index_" + m).value), m, cyc))
                continue
            if dut.mem_rd.value:
                addr = int(dut.mem_addr.value) - base
                n = max(0, min(B, size - addr))
                data = port.read(addr, n) if n > 0 and addr >= 0 else b""
                dut.mem_rdata.value = int.from_bytes(data + bytes(B - len(data)), "little")
                log["beats"] += 1
            if dut.mem_wr.value:
                addr = int(dut.mem_addr.value) - base
                strb = int(dut.mem_wstrb.value)
                bits = str(dut.mem_wdata.value)
                # unstrobed lanes may carry never-written (X) SRAM bits; only strobed bytes count
                data = int("".join(ch if ch in "01" else "0" for ch in bits), 2).to_bytes(B, "little")
                for k in range(B):
                    if strb >> k & 1:
                        if not 0 <= addr + k < size:
                            log["oob"] += 1
                        else:
                            port.write(addr + k, data[k:k + 1])
                log["beats"] += 1
            rv = int(dut.ret_valid.value)
            if rv:
                cyc = int(dut.dbg_cycle.value)
                for k, m in enumerate(MODULES):
                    if rv >> k & 1:
                        log["retire"].append((int(getattr(dut, "ret_index_" + m).value), m, cyc))

    async def run(self, bundle: Bundle, budget: int, regs: dict | None = None) -> dict:
        """Run one bundle like the driver; ``regs`` overrides register values (bad sequences)."""
        dut = self.dut
        config = bundle.config
        out = {"id_ok": True}
        isa_v, cfg = await self.rd("ID_ISA"), await self.rd("ID_CONFIG")
        out["id_ok"] = isa_v == ISA_VERSION and cfg == config.fingerprint_hash
        self.clear_srams()
        dram = bundle.dram.copy()
        port = MemoryPort(config, dram)
        if self.axi:
            self.ram.write(0, dram.tobytes())
        values = {"DRAM_BASE": 0 if self.axi else DRAM_BASE, "DRAM_BYTES": dram.size, "INSN_ADDR": bundle.insn_offset,
                  "INSN_COUNT": bundle.insn_count}
        values.update(regs or {})
        for name in ("DRAM_BASE", "DRAM_BYTES", "INSN_ADDR", "INSN_COUNT"):
            await self.wr(name, values[name])
        log = {"retire": [], "beats": 0, "oob": 0}
        server = cocotb.start_soon(self.serve(port, values["DRAM_BASE"], dram.size, log))
        await self.wr("CTRL", regmap.CTRL_START)
        if regs and regs.get("start_twice"):
            await self.wr("CTRL", regmap.CTRL_START)
        waited, status = 0, 0
        while True:
            status = await self.rd("STATUS")
            if status & (regmap.STATUS_DONE | regmap.STATUS_ERROR) or waited > budget:
                break
            await ClockCycles(dut.clk, POLL)
            waited += POLL
        server.cancel()
        if self.axi:
            dram[:] = np.frombuffer(self.ram.read(0, dram.size), dtype=np.uint8)
        lo = await self.rd("CYCLES_LO")
        hi = await self.rd("CYCLES_HI")
        out.update(status=status, timeout=not status & (regmap.STATUS_DONE | regmap.STATUS_ERROR),
                   cycles=lo | hi << 32, error=await self.rd("ERROR"), error_insn=await self.rd("ERROR_INSN"),
                   counters={m: await self.rd(regmap.counter_name(m, "insns")) for m in ("fetch",) + MODULES},
                   modules={m: {c: await self.rd(regmap.counter_name(m, c)) for c in regmap.MODULE_COUNTERS}
                            for m in ("fetch",) + MODULES},
                   retire=log["retire"], beats=log["beats"], oob=log["oob"], dram=dram)
        if out["timeout"]:
            # stop the device the way a driver would give up: CLEAR, then reset
            await self.wr("CTRL", regmap.CTRL_CLEAR)
            await self.reset()
        else:
            await self.wr("CTRL", regmap.CTRL_CLEAR)
        return out


@cocotb.test()
async def run_programs(dut):
    """Run every program of the job file named by VDLA_RTL_JOB; write one result per program."""
    job = json.loads(open(os.environ["VDLA_RTL_JOB"]).read())
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    tb = Testbench(dut)
    await tb.reset()
    for item in job["programs"]:
        bundle = Bundle.load(item["bundle"])
        res = await tb.run(bundle, int(item["budget"]), item.get("regs"))
        np.savez(item["result"], dram=res.pop("dram"), meta=np.array(json.dumps(res)))
