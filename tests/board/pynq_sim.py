"""A simulated PYNQ device, a test double: the ``pynq`` backend runs against the real pynq 3.x
package without a board (tests/board, and ``vdla serve --backend pynq`` through
``python -m tests.board.serve_simulated``).

Registration: pynq discovers devices through ``pynq.pl_server.device.DeviceMeta``: every
subclass of ``pynq.Device`` that defines ``_probe_`` and a unique ``_probe_priority_`` is
recorded when its class is created, and ``pynq.Device.devices`` (computed once, on first
access) concatenates the ``_probe_()`` lists in priority order; ``active_device`` is the first.
Importing this module defines :class:`SimulatedPynqDevice` (priority 1000, after pynq's own
``EmbeddedDevice`` at 50 and ``XrtDevice`` at 200, so on a real board the real device stays
active) and :func:`register` drops pynq's cached device list so the next access probes again.

The device has the ``REGISTER_RW`` capability, so ``pynq.MMIO`` routes every 32-bit access to
:meth:`read_registers`/:meth:`write_registers`, which serve the control slave from
:class:`driver.regmodel.RegisterModel` (vdla_sim at register level). DRAM buffers are
``pynq.buffer.PynqBuffer`` arrays at fake physical addresses. On a non-coherent port (HP0, the
bitstream's configuration not ``coherent``) each has a separate device-side copy, like the
board's cacheable buffers behind HP0: the model sees only what the driver flushed and the CPU
sees the results only after an invalidate, so missing cache maintenance fails tests; the device
also counts ``stale_reads`` (accelerator reads of bytes the CPU wrote but did not flush) and the
bytes ``flushed`` and ``invalidated``. On a coherent port (ACP) the accelerator reads and writes
the CPU's view directly (the SCU snoops the caches), and maintenance is still counted, so a test
can check the driver does none.
The "bitstream" is a JSON file naming the configuration of the simulated hardware
(:func:`tests.board.fake_bitstream.write_fake_bitstream`); its metadata (what pynq parses from the ``.hwh`` on a board)
comes from the manifest beside it.
"""

from __future__ import annotations

import json
import weakref
from pathlib import Path

import numpy as np
import pynq
from pynq.buffer import PynqBuffer

from driver.regmodel import RegisterModel
from tests.board.fake_bitstream import FAKE_FORMAT, write_fake_bitstream  # noqa: F401 - re-exported
from vdla_hw import regmap
from vdla_hw.config import Config, load_config

MEMORY_BASE = 0x1800_0000  # where the fake contiguous-memory allocator starts (CMA-like)


class _Metadata:
    """What pynq's HWH parser provides to an Overlay, built from the vdla bitstream manifest."""

    def __init__(self, manifest: dict):
        name = manifest["ip_name"]
        self.ip_dict = {name: {"fullpath": name, "type": "vdla:user:vdla_top:1.0", "phys_addr": manifest["control_base"],
                               "addr_range": manifest["control_span"], "state": None, "parameters": {},
                               "registers": {}, "interrupts": {}, "gpio": {}, "mem_id": name}}
        self.mem_dict, self.gpio_dict, self.hierarchy_dict = {}, {}, {}
        self.interrupt_pins, self.interrupt_controllers, self.clock_dict = {}, {}, {}
        self.systemgraph = None


class SimulatedPynqDevice(pynq.Device):
    """A PYNQ device whose programmable logic holds a register-level model of VDLA."""

    _probe_priority_ = 1000

    @classmethod
    def _probe_(cls):
        return [cls("vdla-sim")]

    def __init__(self, tag: str):
        super().__init__(tag)
        self.name = "vdla-simulated-pynq-z1"
        self.capabilities = {"REGISTER_RW": True}
        self.bitfile_name = None
        self.timestamp = ""
        self.model: RegisterModel | None = None
        self.control_base = None
        # address -> (host view, device copy, device-newer mask); coherent: the copy is the host memory
        self.buffers: dict[int, tuple[PynqBuffer, np.ndarray, np.ndarray]] = {}
        self._cursor = MEMORY_BASE
        self.downloads = 0
        self.coherent = False
        self.stale_reads = 0          # accelerator reads that saw bytes the CPU had not flushed
        self.flushed = self.invalidated = 0  # bytes, as the driver asked

    # --- bitstreams (what EmbeddedDevice does with the .bit and the .hwh) -----------------
    def get_bitfile_metadata(self, bitfile_name):
        manifest = json.loads(Path(bitfile_name).with_suffix(".json").read_text())
        return _Metadata(manifest)

    def download(self, bitstream, parser=None):
        try:
            data = json.loads(Path(bitstream.bitfile_name).read_text())
        except (OSError, ValueError):
            data = {}
        if data.get("format") != FAKE_FORMAT:
            raise RuntimeError(f"{bitstream.bitfile_name} is not a bitstream for the simulated PYNQ device")
        manifest = json.loads(Path(bitstream.bitfile_name).with_suffix(".json").read_text())
        self.control_base = int(manifest["control_base"])
        config = load_config(data["config"])
        self.coherent = config.coherent
        self.model = RegisterModel(config, self._device_read, self._device_write)
        self.downloads += 1
        self.post_download(bitstream, parser)

    # --- MMIO (REGISTER_RW) -------------------------------------------------------------
    def _offset(self, address: int) -> int:
        if self.model is None:
            raise RuntimeError("no bitstream loaded on the simulated PYNQ device")
        offset = address - self.control_base
        if not 0 <= offset < regmap.ADDRESS_SPACE:
            raise RuntimeError(f"address {address:#x} is outside the VDLA control slave's segment")
        return offset   # an offset of the segment without a register: the model raises SlaveError (SLVERR)

    def read_registers(self, address, length):
        words = [self.model.read(self._offset(address + k)) for k in range(0, length, 4)]
        return np.array(words, dtype="<u4").tobytes()[:length]

    def write_registers(self, address, data):
        words = np.frombuffer(bytes(data), dtype="<u4")
        for k, word in enumerate(words):
            self.model.write(self._offset(address + 4 * k), int(word))

    # --- memory (what the accelerator masters through HP0) ------------------------------
    def allocate(self, shape, dtype, **kwargs):
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        address = self._cursor
        self._cursor += -(-max(nbytes, 1) // 4096) * 4096
        size = max(nbytes, 1)
        backing = np.zeros(size, dtype=np.uint8)
        buf = PynqBuffer(shape, dtype, buffer=backing, device=self, device_address=address, coherent=False)
        buf.bo = address
        device_copy = backing if self.coherent else np.zeros(size, dtype=np.uint8)
        self.buffers[address] = (buf, device_copy, np.zeros(size, dtype=bool))
        weakref.finalize(buf, self.buffers.pop, address, None)  # freed with the host view
        return buf

    def _find(self, address: int, nbytes: int) -> tuple[int, int]:
        for base, (_, device_copy, _) in self.buffers.items():
            if base <= address and address + nbytes <= base + device_copy.size:
                return base, address - base
        raise KeyError(address)

    @staticmethod
    def _host(host: PynqBuffer) -> np.ndarray:
        return np.asarray(host).view(np.uint8).reshape(-1)

    def _device_read(self, address: int, nbytes: int) -> np.ndarray:
        base, start = self._find(address, nbytes)
        host, memory, newer = self.buffers[base]
        end = start + nbytes
        if not self.coherent:  # CPU bytes that never reached memory: the CPU wrote without a flush
            differ = self._host(host)[start:end] != memory[start:end]
            if np.any(differ & ~newer[start:end]):
                self.stale_reads += 1
        return memory[start:end].copy()

    def _device_write(self, address: int, data: np.ndarray) -> None:
        base, start = self._find(address, len(data))
        _, memory, newer = self.buffers[base]
        end = start + len(data)
        if not self.coherent:  # the bytes the device changed: the CPU's view of them is stale until an invalidate
            newer[start:end] |= memory[start:end] != data
        memory[start:end] = data

    def flush(self, bo, offset, vaddr, nbytes):
        """Clean the CPU's lines of the range to memory (the driver flushes the range it has just
        written, so every line of it is dirty in the CPU's cache)."""
        host, memory, newer = self.buffers[bo]
        self.flushed += nbytes
        end = offset + nbytes
        memory[offset:end] = self._host(host)[offset:end]
        newer[offset:end] = False

    def invalidate(self, bo, offset, vaddr, nbytes):
        host, memory, newer = self.buffers[bo]
        self.invalidated += nbytes
        end = offset + nbytes
        self._host(host)[offset:end] = memory[offset:end]
        newer[offset:end] = False


def register() -> SimulatedPynqDevice:
    """Make pynq probe again (so the simulated device is listed) and return it."""
    for attr in ("_devices", "_active_device"):
        if attr in pynq.Device.__dict__:
            delattr(pynq.Device, attr)
    devices = [d for d in pynq.Device.devices if isinstance(d, SimulatedPynqDevice)]
    if not devices:
        raise RuntimeError("pynq did not probe the simulated device (another subclass took priority 1000?)")
    return devices[0]
