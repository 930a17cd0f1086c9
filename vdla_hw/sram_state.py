"""SRAM state between programs, and the check for reads of SRAM that nothing wrote
(docs/spec.md section 4, "SRAM state between programs").

The on-chip buffers keep their contents from one program to the next: START clears no SRAM.
:class:`SramState` is what they hold between two programs of a session (a device, or one run of
``vdla sim``/``vdla exec``): the contents (:class:`vdla_hw.semantics.Srams`) and, when the
session tracks it, which elements some program of the session wrote. A fresh state (a new
device, as after the bitstream is loaded) holds zeros and nothing written.

:class:`UninitTracker` is the ``--uninit`` check. A model calls :meth:`UninitTracker.step`
just before it executes an instruction, in the order it executes them, with the instruction's
decoded micro-ops; the tracker finds the first element the instruction reads that no
instruction of the session wrote before, in the order the instruction reads them, then marks
what the instruction writes. ``warn`` keeps the first such read (:attr:`UninitTracker.first`)
and goes on; ``error`` raises :class:`UninitError` naming it. The check is off unless asked
for: an untracked run calls nothing here.

What an instruction reads and writes (the reference semantics, vdla_hw/semantics.py):

* LOAD writes its footprint (padding included) of its memory type, and reads no SRAM;
* STORE reads OUT elements ``sram_base .. sram_base + y_size * x_size - 1``;
* GEMM and ALU read their micro-ops ``uop_bgn .. uop_end - 1`` (when the loops run at all);
  with the reset bit (:data:`RESET_KINDS`: GEMM only) they write ACC and OUT at every dst and read
  nothing else; otherwise each step reads ACC[dst] (and GEMM INP[src] and WGT[wgt], ALU
  ACC[src] unless it uses its immediate) and then writes ACC[dst] and OUT[dst].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vdla_hw import isa, program
from vdla_hw.config import Config
from vdla_hw.errors import ProgramError, VdlaError
from vdla_hw.limits import LOOP_CHUNK_BYTES
from vdla_hw.semantics import Srams

MODES = ("off", "warn", "error")
# kinds whose reset bit zeroes the accumulators instead of computing (docs/spec.md section 4)
RESET_KINDS = ("GEMM",)  # an ALU ignores its reset bit, as VTA's designs do
# what each kind of step reads, in the order a step reads it
_GEMM_READS = (("inp", 1), ("wgt", 2), ("acc", 0))


class UninitError(ProgramError):
    """A program read an SRAM element that no instruction of its session wrote (``--uninit error``)."""


@dataclass(frozen=True)
class UninitRead:
    """The first read of an element never written: instruction ``index`` (``kind``) reads
    element ``element`` of ``mem``; ``where`` says which step of its loop (or which field)."""

    index: int
    kind: str
    mem: str
    element: int
    field: str
    where: str

    @property
    def message(self) -> str:
        return (f"reads {self.mem.upper()} element {self.element} at {self.where}, never written in this session "
                "(uninitialised read: the SRAM holds what an earlier program left, zeros on a fresh device)")

    def error(self) -> UninitError:
        return UninitError(self.index, self.kind, self.field, self.message)

    def __str__(self) -> str:
        return str(self.error())


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise VdlaError(f"unknown --uninit mode {mode!r} (known: {', '.join(MODES)})")
    return mode


class SramState:
    """The SRAM contents of a session and, when tracked, a bool per element of each memory type
    (``written[mem]``): True where some instruction of the session wrote it. ``written`` is
    None when a program of the session ran untracked (then nothing can be said)."""

    def __init__(self, srams: Srams, written: dict[str, np.ndarray] | None):
        self.srams = srams
        self.written = written

    @classmethod
    def fresh(cls, config: Config) -> SramState:
        """A new device's SRAMs: zeros, nothing written."""
        return cls(Srams(config), {m: np.zeros(config.depth(m), dtype=bool) for m in isa.MEM_TYPES})

    def copy(self) -> SramState:
        srams = Srams.__new__(Srams)
        for mem in isa.MEM_TYPES:
            setattr(srams, mem, self.srams.of(mem).copy())
        written = None if self.written is None else {m: w.copy() for m, w in self.written.items()}
        return SramState(srams, written)

    def tracker(self, config: Config, mode: str) -> UninitTracker | None:
        """The tracker of a run in ``mode`` on this state (None for ``off``: the state's history
        is then unknown from this run on)."""
        if check_mode(mode) == "off":
            self.written = None
            return None
        if self.written is None:
            raise VdlaError("--uninit: an earlier program of this session ran without the uninitialised-read "
                            "check, so what it wrote is unknown; track every program of a session or none")
        return UninitTracker(config, mode, self.written)


class UninitTracker:
    """The ``--uninit`` check of one run (see the module docstring)."""

    def __init__(self, config: Config, mode: str, written: dict[str, np.ndarray]):
        self.config = config
        self.mode = check_mode(mode)
        self.written = written
        self.first: UninitRead | None = None
        self.chunk = max(1, LOOP_CHUNK_BYTES // (8 * 3))  # loop steps per piece: three int64 index arrays

    def step(self, insn: isa.Insn, index: int, uops: np.ndarray | None = None) -> None:
        """Check and mark instruction ``index`` before it executes; ``uops``: for GEMM/ALU, the
        decoded (n, 3) micro-ops of ``uop_bgn:uop_end`` as the uop SRAM holds them now.
        Range errors are the model's own (``vdla_hw.program``), raised here first."""
        kind = insn.kind
        if kind == "LOAD":
            rows, cols = program.footprint(insn)
            if rows * cols:
                self.written[insn.mem][insn.sram_base:insn.sram_base + rows * cols] = True
        elif kind == "STORE":
            if program.moves_data(insn):
                n = insn.y_size * insn.x_size
                self._store_reads(insn, index, np.arange(insn.sram_base, insn.sram_base + n))
        elif kind in ("GEMM", "ALU"):
            self._compute(insn, index, uops)

    # --- compute ----------------------------------------------------------------------------
    def _compute(self, insn: isa.Insn, index: int, uops: np.ndarray) -> None:
        program.check_uop_range(insn, self.config, index)
        program.check_loop_ranges(insn, uops, self.config, index)
        if len(uops) == 0 or insn.iter_out == 0 or insn.iter_in == 0:
            return
        found = self._unwritten(insn, index, "uop", np.arange(insn.uop_bgn, insn.uop_end),
                                lambda k: f"micro-op {insn.uop_bgn + k} of uop_bgn:uop_end", "uop_bgn")
        if found is not None:
            self._report(found)
        # Piece by piece in execution order (bounded memory); within a piece every read is
        # checked against what was written before the piece: a step reads ACC[dst] before it
        # writes it, so an element first written inside the piece was read unwritten there first
        # (an ALU's src written by an earlier step was that step's dst).
        for piece, piece_uops, first in program.loop_chunks(insn, uops, self.chunk):
            dst, src, wgt = program.loop_indices(piece, piece_uops)
            cols = (dst, src, wgt)
            if insn.reset and insn.kind in RESET_KINDS:
                reads = []
            elif insn.kind == "GEMM":
                reads = [(mem, cols[col]) for mem, col in _GEMM_READS]
            else:
                reads = [("acc", dst)] + ([] if insn.use_imm else [("acc", src)])
            best = None
            for mem, elems in reads:
                bad = np.flatnonzero(~self.written[mem][elems])
                if bad.size and (best is None or bad[0] < best[0]):
                    best = (int(bad[0]), mem, int(elems[bad[0]]))
            if best is not None and found is None:
                pos, mem, element = best
                found = UninitRead(index, insn.kind, mem, element, "uop",
                                   self._step_name(insn, len(uops), first + pos))
                self._report(found)
            self.written["acc"][dst] = True
            self.written["out"][dst] = True

    @staticmethod
    def _step_name(insn: isa.Insn, n_uops: int, pos: int) -> str:
        i, rest = divmod(pos, insn.iter_in * n_uops)
        j, u = divmod(rest, n_uops)
        return f"loop step i={i} j={j} micro-op {insn.uop_bgn + u}"

    # --- reads of a plain range ----------------------------------------------------------------
    def _unwritten(self, insn, index, mem, elems, where, field) -> UninitRead | None:
        elems = elems[elems < self.written[mem].size]  # past the SRAM: the model's own range error
        bad = np.flatnonzero(~self.written[mem][elems])
        if not bad.size:
            return None
        k = int(bad[0])
        return UninitRead(index, insn.kind, mem, int(elems[k]), field, where(k))

    def _store_reads(self, insn, index, elems) -> None:
        found = self._unwritten(insn, index, "out", elems, lambda k: f"row {k // insn.x_size} column "
                                f"{k % insn.x_size} of the STORE", "sram_base")
        if found is not None:
            self._report(found)

    def _report(self, found: UninitRead) -> None:
        if self.mode == "error":
            raise found.error()
        if self.first is None:
            self.first = found

    def reference_hook(self, insn: isa.Insn, index: int, srams: Srams) -> None:
        """:meth:`step` as ``vdla_hw.semantics.execute``'s ``before`` hook (it decodes the uops)."""
        uops = None
        if insn.kind in ("GEMM", "ALU"):
            uops = isa.decode_uops(srams.uop[insn.uop_bgn:insn.uop_end], self.config)
        self.step(insn, index, uops)


def execute(bundle, state: SramState | None = None, uninit: str = "off", **limits):
    """The reference semantics (``vdla_hw.semantics.execute``, ``limits``: its bounds) on the
    SRAM ``state`` (default: a fresh one), updated in place, with the ``uninit`` check;
    returns (ExecResult, the first uninitialised read or None)."""
    from vdla_hw import semantics

    state = SramState.fresh(bundle.config) if state is None else state
    tracker = state.tracker(bundle.config, uninit)
    result = semantics.execute(bundle, srams=state.srams, before=None if tracker is None else tracker.reference_hook,
                               **limits)
    return result, None if tracker is None else tracker.first
