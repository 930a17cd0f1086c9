"""Modelled seconds on a CPU: kernels from their code, and the host's work around an offload.

Kernel time (``CpuModel.kernel_cost``), from the code-level analysis of :mod:`.analysis`::

    core    = sum over machine blocks of executions x cycles per execution (llvm-mca + bounds)
    branch  = loop entries x mispredict_cycles          (each loop's exit is mispredicted once)
    l2      = lines L1 missed but L2 held x l2_line_cycles
    dram    = (lines read from DRAM x line_bytes + output and scratch bytes written back)
              / DRAM bandwidth
    cycles  = max(core + branch, l2 + dram)             (an out-of-order core and its prefetcher
                                                         overlap memory traffic with compute)

Host overheads of one offloaded layer (``CpuModel.offload_cost``), from what the runtime does on
the board (``RuntimeProfile``, read off the driver: ``driver.registers.run_profile``). The
runtime is a loaded model (``driver/session.py``, as VTA's: weights, micro-ops and instruction
streams are written once at load), so per run only the bytes that cross between CPU and
accelerator move, which the driver counts (``written_bytes``/``read_bytes``):

    pack        NCHW -> blocked layout of the inputs from the CPU (the code-level cost of our
                pack kernel)
    copy        the bytes written (packed inputs) and read back (outputs) per run, at the
                CPU data's measured memcpy rate (``memcpy_bytes_per_s``)
    flush       clean the written bytes' cache lines before the accelerator reads them
                (``cache_maintenance_cycles_per_line`` per line, plus the dirty bytes written back
                at the DRAM rate); 0 on a coherent port (ACP: ``runtime.coherent``)
    registers   control-register writes and reads (not the STATUS polls), ``mmio_access_s`` each
    poll        how much later than the accelerator's finish the exponential-back-off poll
                sees DONE (sleeps stretched by the kernel's timer slack)
    invalidate  invalidate the read bytes' cache lines before the CPU reads them; 0 on ACP
    unpack      blocked -> NCHW of the output for the CPU (code-level cost of our unpack kernel)

A runtime that copies whole images instead (``runtime.image_copies`` per run, plus the caller's
``extra_copies``, of ``image_bytes``: the driver before the loaded model) is still modelled, for
comparison: those copies are charged, and maintained, on top.

Not modelled: the Python interpreter's own time per driver call, buffer allocation (``pynq``
CMA) and freeing, and the ctypes call into each CPU kernel.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .analysis import analyse, is_cached, remember
from .cpus import Cpu, load_cpu

DEFAULT_CPU = "cortex-a9"


@dataclass(frozen=True)
class KernelCost:
    """Modelled time of one kernel call: seconds, cycles, what it rests on and its parts."""

    seconds: float
    cycles: float
    basis: str
    parts: dict = field(default_factory=dict)

    @property
    def bound(self) -> str:
        return self.parts.get("bound", "")


@dataclass(frozen=True)
class RuntimeProfile:
    """What the board runtime does per offloaded layer, read off the driver
    (``driver.registers.run_profile``: the driver says what it does)."""

    register_writes: int
    register_reads: int
    poll_first_s: float
    poll_max_s: float
    image_copies: int = 0      # whole-image copies per run (0: a loaded model moves only its inputs/outputs)
    coherent: bool = False     # the port snoops the CPU caches (ACP): no flush, no invalidate
    sleep_slack_s: float = 50e-6  # Linux default timer slack of a normal thread, prctl(2) PR_SET_TIMERSLACK


@dataclass(frozen=True)
class HostCost:
    """Modelled host seconds around one offloaded layer, by part (see the module docstring)."""

    seconds: float
    parts: dict


class CpuModel:
    """Modelled CPU time from generated code, for one CPU (``"cortex-a9"``, ``"cortex-a53"``, ...).

    ``kernel_cost(spec)`` -> :class:`KernelCost`; ``offload_cost(...)`` -> :class:`HostCost`;
    ``describe()`` -> name, clock and every parameter with its source. Analyses are cached on
    disk (see :mod:`.analysis`), so a second run costs a file read per kernel.
    """

    PREFETCH_MIN = 4  # fewer uncached kernels than this are analysed in-process, on demand

    def __init__(self, cpu: str | Cpu = DEFAULT_CPU, *, workers: int | None = None):
        self.cpu = load_cpu(cpu) if isinstance(cpu, str) else cpu
        self.basis = f"llvm-mca {self.cpu.mca.cpu} + memory model"
        self.workers = (os.cpu_count() or 1) if workers is None else workers
        self._pending = {}

    def prefetch(self, specs) -> int:
        """Start analysing the uncached ones of ``specs`` in worker processes (the caller goes on
        with its own work; ``kernel_cost`` waits for a pending one). Returns how many started."""
        todo = [s for s in dict.fromkeys(specs) if s not in self._pending and not is_cached(s, self.cpu)]
        if self.workers < 2 or len(todo) < self.PREFETCH_MIN:
            return 0
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        pool = ProcessPoolExecutor(max_workers=min(self.workers, len(todo)),
                                   mp_context=multiprocessing.get_context("spawn"))
        for spec in todo:
            self._pending[spec] = pool.submit(analyse, spec, self.cpu)
        pool.shutdown(wait=False)  # the workers finish the queue, then exit
        return len(todo)

    @property
    def name(self) -> str:
        return self.cpu.name

    def describe(self) -> dict:
        return {**self.cpu.as_dict(), "basis": self.basis}

    def kernel_cost(self, spec) -> KernelCost:
        cpu = self.cpu
        pending = self._pending.pop(spec, None)
        analysis = remember(spec, cpu, pending.result()) if pending is not None else analyse(spec, cpu)
        core = analysis.core_cycles
        mispredicts = sum(analysis.loop_entries.values())
        branch = mispredicts * cpu.mispredict_cycles
        l2_lines = analysis.l1_misses - analysis.l2_misses
        dram_read = cpu.line_bytes * (analysis.l2_misses - (0 if cpu.write_allocate else analysis.l2_store_misses))
        # Outputs and workspaces (scratch) leave dirty lines that are written back.
        written = sum(arg.nbytes for arg in spec.args() if not arg.is_input)
        dram_write = -(-written // cpu.line_bytes) * cpu.line_bytes
        l2 = l2_lines * cpu.l2_line_cycles
        dram = (dram_read + dram_write) / cpu.dram_bytes_per_s * cpu.clock_hz
        cycles = max(core + branch, l2 + dram)
        parts = {"core_cycles": core, "branch_cycles": branch, "mispredicts": mispredicts,
                 "l2_cycles": l2, "dram_cycles": dram, "l2_lines": l2_lines, "dram_bytes": dram_read + dram_write,
                 "bound": "compute" if core + branch >= l2 + dram else "memory",
                 "estimated_share": analysis.estimated_cycles / core if core else 0.0,
                 "loops": len(analysis.loop_entries), "stand_ins": len(analysis.stand_ins)}
        return KernelCost(cycles / cpu.clock_hz, cycles, self.basis, parts)

    def seconds(self, spec) -> float:
        return self.kernel_cost(spec).seconds

    def offload_cost(self, *, runtime: RuntimeProfile, packs=(), unpacks=(), written_bytes: int | None = None,
                     read_bytes: int | None = None, accelerator_s: float = 0.0, image_bytes: int = 0,
                     input_bytes: int = 0, extra_copies: int = 0) -> HostCost:
        """Host seconds around one run whose inputs are packed by the kernel specs ``packs`` and
        whose output is unpacked by ``unpacks``, the accelerator busy ``accelerator_s``.
        ``written_bytes``/``read_bytes``: the bytes the driver writes into / reads from device
        buffers (default: the packed inputs of ``packs`` / the packed outputs of ``unpacks``).
        A whole-image runtime: ``image_bytes`` copied ``runtime.image_copies + extra_copies`` times,
        plus ``input_bytes`` written into the image (see the module docstring)."""
        cpu = self.cpu
        written = sum(s.io_bytes()[1] for s in packs) if written_bytes is None else int(written_bytes)
        read = sum(s.io_bytes()[0] for s in unpacks) if read_bytes is None else int(read_bytes)
        copies = runtime.image_copies + extra_copies
        whole = image_bytes if copies else 0   # a whole-image runtime keeps the whole image coherent
        flushed, invalidated = written + whole, read + whole
        if runtime.coherent:
            flush = invalidate = 0.0
        else:
            dirty = min(flushed, cpu.l2_bytes)  # copies of larger images wrote most lines back already
            flush = self._maintenance(flushed) + dirty / cpu.dram_bytes_per_s
            invalidate = self._maintenance(invalidated)
        parts = {
            "pack": sum(self.seconds(spec) for spec in packs),
            "copy": (written + read + copies * image_bytes + input_bytes) / cpu.memcpy_bytes_per_s,
            "flush": flush,
            "registers": (runtime.register_writes + runtime.register_reads) * cpu.mmio_access_s,
            "poll": poll_delay(accelerator_s, runtime, cpu.mmio_access_s),
            "invalidate": invalidate,
            "unpack": sum(self.seconds(spec) for spec in unpacks),
        }
        return HostCost(sum(parts.values()), parts)

    def _maintenance(self, nbytes: int) -> float:
        """Seconds to clean or invalidate ``nbytes`` by cache line (the lines they cover, taken
        from a line-aligned start: every symbol starts on a 64-byte boundary)."""
        lines = -(-nbytes // self.cpu.line_bytes)
        return lines * self.cpu.cache_maintenance_cycles_per_line / self.cpu.clock_hz


def poll_delay(busy_s: float, runtime: RuntimeProfile, read_s: float) -> float:
    """How long after the accelerator finishes (``busy_s`` after START) the driver's poll loop
    reads DONE: it reads STATUS at once, then after sleeps of poll_first_s, doubling up to
    poll_max_s, each stretched by the timer slack."""
    now, pause = read_s, runtime.poll_first_s
    while now < busy_s:
        now += pause + runtime.sleep_slack_s + read_s
        pause = min(2 * pause, runtime.poll_max_s)
    return now - busy_s
