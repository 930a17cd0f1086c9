"""The device API every backend implements, and ``open_device`` to pick one by name.

A device has DRAM buffers (``allocate``/``write``/``read``/``free``), identification registers
(``identify``: ISA version and configuration fingerprint hash), and runs one program bundle at
a time: ``start(bundle, buffer)`` then ``wait(timeout)``, or both at once with ``run(bundle)``.
``counters()`` returns the last run's per-module counters (``vdla_hw.regmap.MODULE_COUNTERS``).
``loaded_model(key)`` keeps a model's bundles resident in device buffers between runs
(:class:`driver.session.LoadedModel`; one model at a time per device).
Backends: ``sim`` (vdla_sim, here), ``rtl`` (the MyHDL RTL under Verilator,
:mod:`driver.rtl_device`) and ``pynq`` (the board through pynq 3.x, :mod:`driver.pynq_device`).
"""

from __future__ import annotations

import importlib
import itertools
from dataclasses import dataclass, field

import numpy as np

from vdla_hw import regmap
from vdla_hw.bundle import Bundle
from vdla_hw.config import ISA_VERSION, Config, load_config
from vdla_hw.errors import LimitError, VdlaError

# Where the host-memory backends pretend their buffers live (any 32-bit address works).
HOST_DRAM_BASE = 0x1000_0000
DEFAULT_TIMEOUT_S = 60.0


class DeviceError(VdlaError):
    """A device cannot run a program: wrong configuration, timeout, device error, lost connection.

    ``state`` holds what the device reported (status, error bits, per-module counters) when known.
    """

    def __init__(self, message: str, state: dict | None = None):
        super().__init__(message)
        self.state = state or {}


@dataclass
class RunResult:
    """One program run: the final DRAM image, the cycle count (the device's cycle counter) and
    the backend's counters (``vdla_sim.SimResult.as_dict()`` keys where the backend has them;
    every backend fills ``cycles`` and ``modules``: module -> MODULE_COUNTERS values)."""

    dram: np.ndarray
    cycles: int
    seconds: float
    counters: dict = field(default_factory=dict)
    details: object = None  # the backend's own result object (e.g. a SimResult)


@dataclass
class Buffer:
    """A DRAM buffer of a device: ``size`` bytes at physical byte address ``address``."""

    size: int
    address: int
    handle: object = None  # the backend's own object (numpy array, pynq buffer)


class Device:
    """A VDLA device of one configuration. Subclasses implement ``_alloc``/``_write``/``_read``,
    ``_start`` and ``_wait`` (and ``identify`` when the device has ID registers)."""

    target = "abstract"

    def __init__(self, config: Config | str | None = None):
        self.config = load_config(config)
        self._last_counters: dict = {}
        self._running: tuple[Bundle, Buffer] | None = None
        self._read_back = True  # whether wait() reads the run's whole image back (see wait)
        self._model = None      # the resident LoadedModel (loaded_model)

    # --- identification -----------------------------------------------------------------
    def identify(self) -> tuple[int, int]:
        """(ID_ISA, ID_CONFIG) as the device reports them."""
        return ISA_VERSION, self.config.fingerprint_hash

    def check_bundle(self, bundle: Bundle) -> None:
        """The bundle must be built for this device: its configuration and the ID registers."""
        if bundle.config.fingerprint != self.config.fingerprint:
            raise DeviceError(f"{self.target} device has configuration {self.config.fingerprint} "
                              f"({self.config.name}) but the bundle was built for {bundle.config.fingerprint} "
                              f"({bundle.config.name}); recompile for the device or open it with that config")
        isa, fingerprint = self.identify()
        if isa != ISA_VERSION or fingerprint != bundle.config.fingerprint_hash:
            raise DeviceError(f"{self.target} device reports ISA v{isa} and configuration hash {fingerprint:08x}, "
                              f"but the bundle needs ISA v{ISA_VERSION} and {bundle.config.fingerprint} "
                              f"({bundle.config.name}); load the bitstream built for that configuration")

    # --- buffers ------------------------------------------------------------------------
    def allocate(self, nbytes: int) -> Buffer:
        """A DRAM buffer of ``nbytes`` bytes (contents undefined)."""
        if nbytes <= 0:
            raise DeviceError(f"cannot allocate a buffer of {nbytes} bytes")
        return self._alloc(int(nbytes))

    def write(self, buffer: Buffer, data, offset: int = 0) -> None:
        """Copy ``data`` (bytes or a numpy array, as raw bytes) into ``buffer`` at byte ``offset``."""
        raw = np.frombuffer(memoryview(np.ascontiguousarray(data)).cast("B"), dtype=np.uint8)
        if offset < 0 or offset + raw.size > buffer.size:
            raise DeviceError(f"write of {raw.size} bytes at offset {offset} overflows the {buffer.size}-byte buffer")
        self._write(buffer, raw, offset)

    def read(self, buffer: Buffer, offset: int = 0, nbytes: int | None = None) -> np.ndarray:
        """A copy of ``nbytes`` bytes (default: to the end) of ``buffer`` from byte ``offset``."""
        nbytes = buffer.size - offset if nbytes is None else nbytes
        if offset < 0 or nbytes < 0 or offset + nbytes > buffer.size:
            raise DeviceError(f"read of {nbytes} bytes at offset {offset} overflows the {buffer.size}-byte buffer")
        return self._read(buffer, offset, nbytes)

    def free(self, buffer: Buffer) -> None:
        """Release ``buffer`` (host-memory backends: nothing to do)."""

    # --- running ------------------------------------------------------------------------
    def start(self, bundle: Bundle, buffer: Buffer) -> None:
        """Start ``bundle`` whose image has been written to ``buffer``; returns at once."""
        self.check_bundle(bundle)
        if buffer.size < bundle.dram.size:
            raise DeviceError(f"buffer of {buffer.size} bytes is smaller than the {bundle.dram.size}-byte image")
        if self._running is not None:
            raise DeviceError(f"{self.target} device is busy with another program; wait for it first")
        self._running = (bundle, buffer)
        self._start(bundle, buffer)

    def wait(self, *, timeout_s: float | None = None, timeout_cycles: int | None = None,
             read_back: bool = True) -> RunResult:
        """Wait for the started program; the result's image is read back from its buffer
        (``read_back=False``: not by the register-level backends, whose result then has an empty
        ``dram``; the caller reads what it needs with ``read``).

        A program that does not finish within ``timeout_s`` seconds (wall clock) or
        ``timeout_cycles`` device cycles raises DeviceError naming each module's state."""
        if self._running is None:
            raise DeviceError(f"{self.target} device: wait() without a started program")
        bundle, buffer = self._running
        self._read_back = read_back
        try:
            result = self._wait(bundle, buffer, DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s,
                                timeout_cycles)
        finally:
            self._running = None
        self._last_counters = result.counters
        return result

    def run(self, bundle: Bundle, *, timeout_cycles: int | None = None, timeout_s: float | None = None) -> RunResult:
        """Allocate a buffer, write the image, start, wait and read the final image back."""
        self.check_bundle(bundle)
        buffer = self.allocate(bundle.dram.size)
        try:
            self.write(buffer, bundle.dram)
            self.start(bundle, buffer)
            return self.wait(timeout_s=timeout_s, timeout_cycles=timeout_cycles)
        finally:
            self.free(buffer)

    def counters(self) -> dict:
        """The last finished run's counters (empty before the first run)."""
        return dict(self._last_counters)

    def loaded_model(self, key: str | None = None):
        """The model resident on this device under ``key`` (a package digest): the one loaded
        before if its key is ``key``, else a new empty one (the previous model's buffers are freed
        first: one loaded model per device). ``key=None`` always gives a new one."""
        from driver.session import LoadedModel

        if key is not None and self._model is not None and self._model.key == key:
            return self._model
        self.unload_model()
        self._model = LoadedModel(self, key)
        return self._model

    def unload_model(self) -> None:
        """Free the resident model's buffers (if any)."""
        if self._model is not None:
            self._model.close()
            self._model = None

    # --- backend hooks ------------------------------------------------------------------
    def _alloc(self, nbytes: int) -> Buffer:
        raise NotImplementedError

    def _write(self, buffer: Buffer, raw: np.ndarray, offset: int) -> None:
        raise NotImplementedError

    def _read(self, buffer: Buffer, offset: int, nbytes: int) -> np.ndarray:
        raise NotImplementedError

    def _start(self, bundle: Bundle, buffer: Buffer) -> None:
        """Default: nothing; the host-side backends do the work in ``_wait``."""

    def _wait(self, bundle: Bundle, buffer: Buffer, timeout_s: float, timeout_cycles: int | None) -> RunResult:
        raise NotImplementedError

    def close(self) -> None:
        """Release the device: the resident model's buffers (the simulator has nothing else)."""
        self.unload_model()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class HostMemoryDevice(Device):
    """A device whose DRAM is host memory (the sim and rtl backends)."""

    def __init__(self, config: Config | str | None = None):
        super().__init__(config)
        self._next = itertools.count()
        self._cursor = HOST_DRAM_BASE

    def _alloc(self, nbytes: int) -> Buffer:
        address = self._cursor
        self._cursor += -(-nbytes // 4096) * 4096
        return Buffer(nbytes, address, np.zeros(nbytes, dtype=np.uint8))

    def _write(self, buffer: Buffer, raw: np.ndarray, offset: int) -> None:
        buffer.handle[offset:offset + raw.size] = raw

    def _read(self, buffer: Buffer, offset: int, nbytes: int) -> np.ndarray:
        return buffer.handle[offset:offset + nbytes].copy()

    @staticmethod
    def image_bundle(bundle: Bundle, buffer: Buffer) -> Bundle:
        """The bundle as the device sees it: the image is the buffer's current contents."""
        image = buffer.handle[:bundle.dram.size]
        return bundle.with_dram(image.copy())


class SimDevice(HostMemoryDevice):
    """The cycle-level simulator as a device. Its SRAMs persist from one program to the next,
    as on the board (``sram``: a ``vdla_hw.sram_state.SramState``, zeros when the device
    opens; docs/spec.md section 4, "SRAM state between programs"); ``uninit`` ("off", "warn",
    "error") checks every program for reads of SRAM no program of this device wrote (warn:
    ``counters["uninit"]`` names the first of a run)."""

    target = "sim"

    def __init__(self, config: Config | str | None = None, *, race_check: bool = True, uninit: str = "off",
                 max_work: int | None = None):
        from vdla_hw.sram_state import SramState, check_mode

        super().__init__(config)
        self.race_check = race_check
        self.max_work = max_work  # the simulator's work bound per program (None: limits.SIM_MAX_WORK)
        self.uninit = check_mode(uninit)
        self.sram = SramState.fresh(self.config)

    def _wait(self, bundle: Bundle, buffer: Buffer, timeout_s: float, timeout_cycles: int | None) -> RunResult:
        import vdla_sim
        from driver import status

        try:
            result = vdla_sim.simulate(self.image_bundle(bundle, buffer), max_cycles=timeout_cycles,
                                       race_check=self.race_check, sram=self.sram, uninit=self.uninit,
                                       max_work=self.max_work)
        except (vdla_sim.CycleLimitError, vdla_sim.DeadlockError) as err:
            raise self._hang(timeout_cycles, err) from None
        except LimitError as err:  # the simulator's own work bound, checked before it ran
            raise DeviceError(f"sim device refused the program before running it: {err}") from None
        except VdlaError as err:
            bits, index = status.error_bits_for(err)
            raise DeviceError(f"sim device stopped with error {status.describe_error(bits, index)}: {err}",
                              {"error": bits, "error_insn": index}) from None
        buffer.handle[:result.dram.size] = result.dram
        counters = result.as_dict()  # with "modules", the counter registers' values
        if result.uninit is not None:
            counters["uninit"] = str(result.uninit)
        return RunResult(dram=result.dram, cycles=result.cycles, seconds=result.seconds,
                         counters=counters, details=result)


    def _hang(self, timeout_cycles: int | None, err: VdlaError) -> DeviceError:
        """The timeout the hardware would give for the simulator's ``err`` (a DeadlockError or
        CycleLimitError), with each module's counters where it stopped (carried by the error)."""
        import vdla_sim
        from driver import status

        limit = f"{timeout_cycles} cycles" if timeout_cycles is not None else "its cycle limit"
        if isinstance(err, vdla_sim.DeadlockError):
            limit = "a deadlock (the hardware would wait forever)"
        message = status.timeout_message(self.target, limit, regmap.STATUS_BUSY, err.cycle, err.modules)
        return DeviceError(f"{message} [{err}]", {"timeout": True, "cycles": err.cycle, "modules": err.modules})


# target name -> class, or "module:Class" loaded on first use (their dependencies are optional).
BACKENDS: dict[str, object] = {"sim": SimDevice, "rtl": "driver.rtl_device:RtlDevice",
                               "pynq": "driver.pynq_device:PynqDevice"}


def backend_class(target: str) -> type[Device]:
    if target not in BACKENDS:
        raise DeviceError(f"unknown target {target!r} (available: {', '.join(BACKENDS)})")
    entry = BACKENDS[target]
    if isinstance(entry, str):
        module, name = entry.split(":")
        entry = getattr(importlib.import_module(module), name)
    return entry


def open_device(target: str = "sim", config: Config | str | None = None, **options) -> Device:
    """A device of backend ``target`` with configuration ``config`` (default osdi18)."""
    return backend_class(target)(config, **options)
