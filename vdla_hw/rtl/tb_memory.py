"""The test bench's DDR: a cocotbext-axi slave on the design's memory master with the timing
the contract assumes (``vdla_hw.membus``), optional random stalls, and injected error responses.
Imported only inside a cocotb simulation (by the bench, ``driver/rtl_bench.py``).

Behaviour (cycles are rising clock edges; "a burst's address at cycle a" means its AR/AW
handshake is sampled at the edge ending cycle a):

* **Read.** Bursts are answered in order. The first beat of a burst is valid in cycle
  ``a + latency`` or, if the previous burst is still streaming, right after it; its beats follow
  one per cycle. AR is always ready.
* **Write.** AW and W are always ready; the B response of a burst is valid in cycle
  ``w + write_latency``, w the cycle of its last W beat.
* **Stalls** (``stall`` = p > 0): each of the five channels is paused in each cycle with
  probability p (AR/AW/W: READY low; R/B: VALID low), and each burst's response gets a random
  extra latency of up to ``latency`` cycles with probability p. Only the DMA's waiting grows;
  the data is the same.
* **Errors.** Addresses outside the loaded image's pages answer DECERR (reads return zeros,
  writes are dropped); :meth:`AxiMemory.poison` makes a byte range answer SLVERR or DECERR.

This is cocotbext-axi's slave (its channel drivers, pause generators and reset handling) with
the read and write processes replaced, so the latency is the contract's and exact.
"""

from __future__ import annotations

import random

import numpy as np
from cocotb.triggers import RisingEdge, Timer
from cocotb.utils import get_sim_time
from cocotbext.axi import AxiBus
from cocotbext.axi.axi_slave import AxiSlaveRead, AxiSlaveWrite
from cocotbext.axi.constants import AxiResp

CLOCK_PERIOD_NS = 10
PAGE = 4096


class _Clock:
    """Edge numbers from simulation time (the bench's clock has a fixed period)."""

    def __init__(self, clk):
        self.clk = clk
        self.t0 = None

    async def sync(self):
        await RisingEdge(self.clk)
        self.t0 = get_sim_time("ps")

    def edge(self) -> int:
        """The number of the last rising edge (at or before now)."""
        return int((get_sim_time("ps") - self.t0) // (CLOCK_PERIOD_NS * 1000))

    async def until_cycle(self, cycle: int):
        """Wait until the middle of cycle ``cycle`` (after its rising edge ``cycle``): whatever a
        source queues then, it drives at edge ``cycle + 1``."""
        target = self.t0 + cycle * CLOCK_PERIOD_NS * 1000 + CLOCK_PERIOD_NS * 500
        now = get_sim_time("ps")
        if target > now:
            await Timer(target - now, unit="ps")


def _stamped(cls, clock: _Clock):
    """A transaction class that records the edge at which its handshake was sampled."""

    class Stamped(cls):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.edge = clock.edge()
    return Stamped


def pauses(seed: int, p: float):
    """A cocotbext-axi pause generator: pause in each cycle with probability ``p``."""
    rng = random.Random(seed)
    while True:
        yield rng.random() < p


class AxiMemory:
    """The memory behind the design's ``m_axi`` master: ``load``/``dump`` the image at
    ``base``; ``latency``/``write_latency`` in cycles; ``stall`` probability; ``seed``."""

    def __init__(self, dut, prefix: str, clk, rst, *, beat_bytes: int, latency: int, write_latency: int,
                 stall: float = 0.0, seed: int = 0):
        if latency < 2 or write_latency < 2:
            raise ValueError("the bench memory needs MEM_LATENCY and MEM_WRITE_LATENCY >= 2")
        self.clock = _Clock(clk)
        self.B = beat_bytes
        self.latency, self.write_latency = latency, write_latency
        self.stall = stall
        self.rng = random.Random(seed)
        self.base, self.size, self.image = 0, 0, np.zeros(0, dtype=np.uint8)
        self.poisoned: list[tuple[int, int, AxiResp]] = []
        self.beats = 0
        bus = AxiBus.from_prefix(dut, prefix)
        self.read_if = _Read(bus.read, clk, rst, memory=self)
        self.write_if = _Write(bus.write, clk, rst, memory=self)
        channels = (self.read_if.ar_channel, self.read_if.r_channel, self.write_if.aw_channel,
                    self.write_if.w_channel, self.write_if.b_channel)
        for k, ch in enumerate(channels):
            ch.queue_occupancy_limit = -1          # never back-pressure by itself
            if stall > 0:
                ch.set_pause_generator(pauses(seed * 7919 + k, stall))
        for ch in (self.read_if.ar_channel, self.write_if.aw_channel, self.write_if.w_channel):
            ch._transaction_obj = _stamped(ch._transaction_obj, self.clock)

    async def start(self):
        await self.clock.sync()

    # --- contents ---------------------------------------------------------------------------
    def load(self, base: int, data) -> None:
        """Map ``data`` at ``base``, in whole 4 kB pages like a page allocator's buffer (the
        bytes after the image up to the page end read as zeros); outside them is DECERR."""
        raw = np.frombuffer(bytes(data), dtype=np.uint8)
        self.base, self.size = base, raw.size
        self.image = np.zeros(-(-max(raw.size, 1) // PAGE) * PAGE, dtype=np.uint8)
        self.image[:raw.size] = raw
        self.poisoned = []

    def dump(self) -> np.ndarray:
        """The image's bytes (its page padding left out)."""
        return self.image[:self.size].copy()

    def poison(self, lo: int, hi: int, resp: str = "slverr") -> None:
        """Bytes [lo, hi) of the image answer ``resp`` ("slverr" or "decerr"): reads return
        zeros, writes are dropped."""
        self.poisoned.append((lo, hi, {"slverr": AxiResp.SLVERR, "decerr": AxiResp.DECERR}[resp]))

    def _resp(self, addr: int, n: int) -> AxiResp:
        off = addr - self.base
        if off < 0 or off + n > self.image.size:
            return AxiResp.DECERR
        for lo, hi, resp in self.poisoned:
            if lo < off + n and off < hi:
                return resp
        return AxiResp.OKAY

    def read_beat(self, addr: int) -> tuple[int, AxiResp]:
        resp = self._resp(addr, self.B)
        if resp != AxiResp.OKAY:
            return 0, resp
        off = addr - self.base
        return int.from_bytes(self.image[off:off + self.B].tobytes(), "little"), resp

    def write_beat(self, addr: int, data: int, strb: int) -> AxiResp:
        resp = self._resp(addr, self.B)
        if resp == AxiResp.OKAY:
            raw = data.to_bytes(self.B, "little")
            off = addr - self.base
            for k in range(self.B):
                if strb >> k & 1:
                    self.image[off + k] = raw[k]
        return resp

    def extra(self) -> int:
        """Random extra latency of one burst (0 without stalls)."""
        if self.stall > 0 and self.rng.random() < self.stall:
            return self.rng.randint(1, self.latency)
        return 0


class _Read(AxiSlaveRead):
    def __init__(self, bus, clk, rst, memory: AxiMemory):
        self.memory = memory
        super().__init__(bus, clk, rst)

    async def _process_read(self):
        m = self.memory
        while True:
            ar = await self.ar_channel.recv()
            addr, beats = int(ar.araddr), int(ar.arlen) + 1
            # AR sampled at edge ar.edge: first beat valid in cycle ar.edge - 1 + latency, so
            # it is queued in the cycle before (the source drives at the next edge)
            await m.clock.until_cycle(ar.edge + m.latency - 2 + m.extra())
            for n in range(beats):
                data, resp = m.read_beat(addr + n * m.B)
                r = self.r_channel._transaction_obj()
                r.rid, r.rdata, r.rresp, r.rlast = int(getattr(ar, "arid", 0)), data, resp, n == beats - 1
                self.r_channel.send_nowait(r)
            m.beats += beats


class _Write(AxiSlaveWrite):
    def __init__(self, bus, clk, rst, memory: AxiMemory):
        self.memory = memory
        super().__init__(bus, clk, rst)

    async def _process_write(self):
        m = self.memory
        while True:
            aw = await self.aw_channel.recv()
            addr, beats = int(aw.awaddr), int(aw.awlen) + 1
            resp = AxiResp.OKAY
            for n in range(beats):
                w = await self.w_channel.recv()
                r = m.write_beat(addr + n * m.B, int(w.wdata), int(w.wstrb))
                if r != AxiResp.OKAY:
                    resp = r
                last = w.edge
            m.beats += beats
            # last W beat sampled at edge `last`: B valid in cycle last - 1 + write_latency
            await m.clock.until_cycle(last + m.write_latency - 2 + m.extra())
            b = self.b_channel._transaction_obj()
            b.bid, b.bresp = int(getattr(aw, "awid", 0)), resp
            self.b_channel.send_nowait(b)
