"""Modelled seconds on a CPU: kernels from their code, and the host's work around an offload.

Kernel time (``CpuModel.kernel_cost``), from the code-level analysis of :mod:`.analysis`::

    core    = sum over machine blocks of executions x cycles per execution (llvm-mca + bounds)
    branch  = loop entries x mispredict_cycles          (each loop's exit is mispredicted once)
    l2, dram, hidden                                    (:mod:`.memory`: line fills at the pace
                                                         of the fill buffers and the bandwidth;
                                                         only what the core's window covers
                                                         overlaps with compute)
    cycles  = core + branch + l2 + dram - hidden

The baseline (``baseline=``, data in ``compiler/data/baselines``, :mod:`.baselines`) says which
kernel an op is priced by: ``int8``, our own kernel; ``fp32``, the FP32 kernel of the same shape
in the style of TVM's ARM schedule (:mod:`..fp32`); ``tcpu``, the TVM paper's measured CPU path
(int8 convs with VTA's 2018 schedule table, :mod:`..int8_pack`). With ``threads=2`` each kernel's outer loop
is split over two cores (:mod:`.threads`): the larger share's own analysis gives the core and L1
counts, the whole kernel's gives the shared L2's DRAM traffic (at most, for the spatial-pack
convs, one share's stream plus the other share's own buffers: the cores read the packed input in
step, :func:`.threads.split_args`), the DRAM bandwidth is shared
(:func:`.memory.memory_cycles`), and every split kernel pays the thread pool's ``fork_join_s``.

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

A runtime like VTA's own (``runtime.keeps_layouts``, ``runtime.writes_stream``:
``vdla.host_runtime``) keeps a tensor passing between two offloaded ops in its packed layout on
the device (the caller then gives no pack, copy or unpack for it) and writes the instruction
stream and micro-ops into device memory on every run: ``instructions`` (``stream_bytes`` at the
memcpy rate; the CPU work that builds them is not priced), a part only such a runtime has.

A runtime that copies whole images instead (``runtime.image_copies`` per run, plus the caller's
``extra_copies``, of ``image_bytes``: the driver before the loaded model) is still modelled, for
comparison: those copies are charged, and maintained, on top.

Not modelled: the Python interpreter's own time per driver call, buffer allocation (``pynq``
CMA) and freeing, and the ctypes call into each CPU kernel.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field

from .analysis import analyse, is_cached, remember
from .baselines import Baseline, load_baseline
from .cpus import Cpu, load_cpu
from .memory import MemoryTraffic, exposed_cycles, memory_cycles
from .threads import share, split_args

DEFAULT_CPU = "cortex-a9"
DEFAULT_BASELINE = "int8"
THREADS = (1, 2)


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
    keeps_layouts: bool = False  # a tensor between two offloaded ops stays packed on the device
    writes_stream: bool = False  # the instruction stream and micro-ops are written on every run


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

    def __init__(self, cpu: str | Cpu = DEFAULT_CPU, *, baseline: str | Baseline = DEFAULT_BASELINE,
                 threads: int = 1, workers: int | None = None):
        from .cpus import CpuError

        self.cpu = load_cpu(cpu) if isinstance(cpu, str) else cpu
        self.baseline = load_baseline(baseline) if isinstance(baseline, str) else baseline
        if threads not in THREADS or threads > self.cpu.cores:
            raise CpuError(f"{self.cpu.name}: {threads} threads cannot be modelled (1, or 2 on a CPU with "
                           f"at least 2 cores; it has {self.cpu.cores})")
        self.threads = threads
        self.basis = (f"llvm-mca {self.cpu.mca.cpu} + memory model, {self.baseline.name} baseline, "
                      f"{threads} thread{'s' if threads > 1 else ''}")
        self.workers = (os.cpu_count() or 1) if workers is None else workers
        self._pending = {}

    def analysed_specs(self, spec) -> list:
        """Every kernel spec whose analysis prices ``spec`` (its baseline's kernels, their shares)."""
        specs = []
        for kernel, _ in self.baseline.price(spec).kernels:
            specs.append(kernel)
            part = share(kernel) if self.threads == 2 else None
            specs += [part] if part is not None else []
        return specs

    def prefetch(self, specs) -> int:
        """Start analysing the uncached ones of ``specs`` (and the kernels that price them) in
        worker processes (the caller goes on with its own work; ``kernel_cost`` waits for a
        pending one). Returns how many started."""
        wanted = [k for s in dict.fromkeys(specs) for k in self.analysed_specs(s)]
        todo = [s for s in dict.fromkeys(wanted) if s not in self._pending and not is_cached(s, self.cpu)]
        if self.workers < 2 or len(todo) < self.PREFETCH_MIN:
            return 0
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with _sigint_held():   # the workers start in the submits
            pool = ProcessPoolExecutor(max_workers=min(self.workers, len(todo)),
                                       mp_context=multiprocessing.get_context("spawn"), initializer=_quiet_on_sigint)
            for spec in todo:
                self._pending[spec] = pool.submit(analyse, spec, self.cpu)
            pool.shutdown(wait=False)  # the workers finish the queue, then exit
        return len(todo)

    @property
    def name(self) -> str:
        return self.cpu.name

    def describe(self) -> dict:
        return {**self.cpu.as_dict(), "basis": self.basis, "baseline": self.baseline.as_dict(),
                "threads": self.threads}

    def _analysis(self, spec):
        pending = self._pending.pop(spec, None)
        return remember(spec, self.cpu, pending.result()) if pending is not None else analyse(spec, self.cpu)

    def kernel_cost(self, spec) -> KernelCost:
        """Modelled time of one call of ``spec`` (a kernel of the functional path), priced by the
        baseline's kernels for it, on ``threads`` cores."""
        priced = self.baseline.price(spec)
        basis = self.basis + (f" ({self.baseline.stand_in_note})" if priced.stand_in else "")
        if not priced.kernels:
            return KernelCost(0.0, 0.0, basis + " (no such op in this baseline)", {"bound": "none"})
        cycles, parts = 0.0, {}
        for kernel, calls in priced.kernels:
            one = self._kernel_cycles(kernel)
            cycles += calls * one["cycles"]
            for key, value in one.items():
                if key in ("cores", "loops", "stand_ins", "estimated_share"):
                    parts[key] = max(parts.get(key, 0), value)
                elif isinstance(value, (int, float)) and not isinstance(value, bool):
                    parts[key] = parts.get(key, 0) + calls * value
                else:
                    parts[key] = value
        parts["priced_by"] = [k.family for k, _ in priced.kernels]
        return KernelCost(cycles / self.cpu.clock_hz, cycles, basis, parts)

    def _kernel_cycles(self, spec) -> dict:
        """Cycles and their parts of one call of ``spec`` itself on ``threads`` cores."""
        cpu = self.cpu
        whole = self._analysis(spec)
        part = share(spec) if self.threads == 2 else None
        own = self._analysis(part) if part is not None else whole
        cores = 2 if part is not None else 1
        # DRAM traffic of the whole kernel through the shared L2 (both cores' streams pass it).
        dram_lines = whole.l2_misses - (0 if cpu.write_allocate else whole.l2_store_misses)
        split = split_args(spec) if part is not None else None
        if split is not None:
            # The cores walk their shared inputs in step (the same tiles in the same order, one
            # half of the channel blocks each), so a shared line one core brings into the L2
            # serves the other: the pair reads one core's stream plus the other's own lines. The
            # whole kernel's single stream re-reads the shared data once per channel block, from
            # DRAM once it outgrows the L2 (the spatial pack's data_vec).
            own_lines = own.l2_misses - (0 if cpu.write_allocate else own.l2_store_misses)
            other = sum(-(-arg.nbytes // cpu.line_bytes) for arg in part.args() if arg.name in split)
            dram_lines = min(dram_lines, own_lines + other)
        written = sum(arg.nbytes for arg in spec.args() if not arg.is_input)  # dirty lines written back
        dram_bytes = cpu.line_bytes * dram_lines + -(-written // cpu.line_bytes) * cpu.line_bytes
        core_lines = dram_lines / cores  # one core's share of the DRAM line fills
        l2_lines = max(0.0, own.l1_misses - core_lines) if cores > 1 else whole.l1_misses - whole.l2_misses
        traffic = MemoryTraffic(l2_lines, core_lines, dram_bytes)
        l2, dram = memory_cycles(cpu, traffic, cores)
        core = own.core_cycles
        mispredicts = sum(own.loop_entries.values())
        branch = mispredicts * cpu.mispredict_cycles
        cycles, hidden = exposed_cycles(cpu, core + branch, [(l2, l2_lines), (dram, core_lines)])
        fork_join = cpu.fork_join_s * cpu.clock_hz if cores > 1 else 0.0
        return {"cycles": cycles + fork_join, "core_cycles": core, "branch_cycles": branch,
                "mispredicts": mispredicts, "l2_cycles": l2, "dram_cycles": dram, "hidden_cycles": hidden,
                "fork_join_cycles": fork_join, "l2_lines": l2_lines, "dram_bytes": dram_bytes, "cores": cores,
                "bound": "compute" if core + branch >= l2 + dram else "memory",
                "estimated_share": own.estimated_cycles / core if core else 0.0,
                "loops": len(own.loop_entries), "stand_ins": len(own.stand_ins)}

    def seconds(self, spec) -> float:
        return self.kernel_cost(spec).seconds

    def offload_cost(self, *, runtime: RuntimeProfile, packs=(), unpacks=(), written_bytes: int | None = None,
                     read_bytes: int | None = None, accelerator_s: float = 0.0, image_bytes: int = 0,
                     input_bytes: int = 0, extra_copies: int = 0, stream_bytes: int = 0) -> HostCost:
        """Host seconds around one run whose inputs are packed by the kernel specs ``packs`` and
        whose output is unpacked by ``unpacks``, the accelerator busy ``accelerator_s``.
        ``written_bytes``/``read_bytes``: the bytes the driver writes into / reads from device
        buffers (default: the packed inputs of ``packs`` / the packed outputs of ``unpacks``).
        A whole-image runtime: ``image_bytes`` copied ``runtime.image_copies + extra_copies`` times,
        plus ``input_bytes`` written into the image (see the module docstring). ``stream_bytes``:
        the instruction and micro-op bytes a ``runtime.writes_stream`` runtime writes per run."""
        cpu = self.cpu
        written = sum(s.io_bytes()[1] for s in packs) if written_bytes is None else int(written_bytes)
        read = sum(s.io_bytes()[0] for s in unpacks) if read_bytes is None else int(read_bytes)
        copies = runtime.image_copies + extra_copies
        whole = image_bytes if copies else 0   # a whole-image runtime keeps the whole image coherent
        stream = int(stream_bytes) if runtime.writes_stream else 0
        flushed, invalidated = written + whole + stream, read + whole
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
        if runtime.writes_stream:
            parts["instructions"] = stream / cpu.memcpy_bytes_per_s
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


@contextlib.contextmanager
def _sigint_held():
    """Hold back Ctrl-C (SIGINT) while prefetch workers start, then deliver it.

    A KeyboardInterrupt in the middle of starting a worker cut its start-up data short, and the
    worker printed 'EOFError: Ran out of input'. Inside: SIGINT is blocked in this thread (the
    workers inherit the blocked signal until :func:`_quiet_on_sigint`) and, on the main thread,
    one delivered to another thread is only noted; on leaving, a noted one goes to the previous
    handler (vdla's, which raises KeyboardInterrupt)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            yield
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        return
    noted = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: noted.append(signum))
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)   # one still pending is noted now
        signal.signal(signal.SIGINT, previous)
    if noted and callable(previous):
        previous(signal.SIGINT, None)


def _quiet_on_sigint() -> None:
    """A prefetch worker's start: Ctrl-C (SIGINT, sent to the whole foreground process group)
    ends it at once without a traceback, the default action, and is no longer held back (the
    worker inherits its parent's blocked SIGINT from the moment it was started)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
