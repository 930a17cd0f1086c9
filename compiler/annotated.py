"""Annotated instructions: an instruction plus the on-chip ranges it reads and writes.

The latency-hiding passes work on lists of :class:`Op`; they need to know, for every
instruction, which SRAM elements it touches, and nothing else. :func:`accesses` derives the
ranges from the instruction and the micro-ops it runs, so producers rarely write them by hand.

A range is ``(mem, lo, hi)``: elements ``lo <= index < hi`` of the SRAM ``mem`` (``uop``,
``inp``, ``wgt``, ``acc``, ``out``). Ranges are conservative (a bounding interval); that can
only add synchronisation, never remove it. GEMM and ALU write ``acc`` and mirror into
``out``; LOAD ACC writes ``acc`` only (docs/spec.md section 4).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vdla_hw import isa, program

Range = tuple[str, int, int]


@dataclass
class Op:
    """One instruction of a stream being compiled, with its SRAM accesses.

    ``thread`` is the virtual thread it belongs to (for interleaving and reports); ``tag`` a
    free-form label (e.g. ``"gemm"``, ``"load inp"``) that tests and traces may use.
    """

    insn: isa.Insn
    reads: tuple[Range, ...] = ()
    writes: tuple[Range, ...] = ()
    thread: int = 0
    tag: str = ""

    @property
    def module(self) -> str:
        return self.insn.module


@dataclass
class Segment:
    """A run of ops that a virtual thread issues together (the unit of interleaving)."""

    ops: list[Op] = field(default_factory=list)


def _span(base: np.ndarray, insn: isa.Insn, factor: str) -> tuple[int, int]:
    """[lo, hi) of ``base + i*factor_out + j*factor_in`` over the instruction's loop nest."""
    io, ii = max(insn.iter_out - 1, 0), max(insn.iter_in - 1, 0)
    lo = int(base.min())
    hi = int(base.max()) + io * insn.fields.get(factor + "_out", 0) + ii * insn.fields.get(factor + "_in", 0)
    return lo, hi + 1


def accesses(insn: isa.Insn, uops: np.ndarray | None = None) -> tuple[tuple[Range, ...], tuple[Range, ...]]:
    """(reads, writes) of ``insn``; GEMM/ALU need ``uops``, the (n, 3) rows of their uop range."""
    kind = insn.kind
    if kind in ("LOAD", "STORE"):
        rows, cols = program.footprint(insn)  # a LOAD of padding rows only writes them
        if not rows:
            return (), ()
        rng = (insn.mem, insn.sram_base, insn.sram_base + rows * cols)
        return ((rng,), ()) if kind == "STORE" else ((), (rng,))
    if kind == "FINISH":
        return (), ()
    uop_rng = ("uop", insn.uop_bgn, insn.uop_end)
    if uops is None or len(uops) == 0 or insn.iter_out == 0 or insn.iter_in == 0:
        return (uop_rng,), ()
    uops = np.asarray(uops).reshape(-1, 3)
    dlo, dhi = _span(uops[:, 0], insn, "dst_factor")
    writes = (("acc", dlo, dhi), ("out", dlo, dhi))
    if kind == "GEMM" and insn.reset:
        return (uop_rng,), writes
    reads = [uop_rng, ("acc", dlo, dhi)]
    if kind == "GEMM":
        reads.append(("inp", *_span(uops[:, 1], insn, "src_factor")))
        reads.append(("wgt", *_span(uops[:, 2], insn, "wgt_factor")))
    elif not insn.use_imm:
        reads.append(("acc", *_span(uops[:, 1], insn, "src_factor")))
    return tuple(reads), writes


def annotate(insn: isa.Insn, uops: np.ndarray | None = None, *, thread: int = 0, tag: str = "") -> Op:
    """An :class:`Op` whose ranges come from :func:`accesses`."""
    reads, writes = accesses(insn, uops)
    return Op(insn, reads, writes, thread, tag or insn.kind.lower())
