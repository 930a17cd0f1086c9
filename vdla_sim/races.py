"""Race detection with vector clocks over the three executing modules.

Happens-before comes from two sources only: the order of one module's instructions (each runs
after the previous one of its module retired) and tokens (the k-th pop from a queue waits for
the k-th push into it, which happens when its instruction retires). Each instruction gets a
vector clock (load, compute, store sequence numbers it is ordered after) when it starts.

Only three SRAMs are shared between modules: INP and WGT (load writes, compute reads) and OUT
(compute writes, store reads). For each element the tracker keeps the last writer and the last
reader; because one module's accesses are ordered, the latest access per module is enough.
Accesses are checked in the order the simulator executes them: an access conflicting with an
earlier one that does not happen-before it is a race, whatever the timing happened to be.
"""

from __future__ import annotations

import numpy as np

from vdla_hw.config import Config
from vdla_sim.errors import RaceError

SLOT = {"load": 0, "compute": 1, "store": 2}
# SRAM -> (writer module, reader module)
SMALL = 16  # accesses of at most this many elements are checked without a numpy reduction
SHARED = {"inp": ("load", "compute"), "wgt": ("load", "compute"), "out": ("compute", "store")}


class RaceTracker:
    def __init__(self, config: Config, insns):
        self.insns = insns
        self.seq_count = [0, 0, 0]
        self.module_vc = [(0, 0, 0)] * 3
        self.vc: dict[int, tuple[int, int, int]] = {}
        self.seq: dict[int, int] = {}
        self.by_seq = [dict(), dict(), dict()]  # slot -> seq -> instruction index
        # per shared SRAM: last write seq, last read seq (0 = none)
        self.write = {m: np.zeros(config.depth(m), dtype=np.int64) for m in SHARED}
        self.read = {m: np.zeros(config.depth(m), dtype=np.int64) for m in SHARED}

    def begin(self, index: int, module: str, pushers: list[int]) -> None:
        """Instruction ``index`` of ``module`` starts after the instructions that pushed the
        tokens it popped (``pushers``) and after its module's previous instruction."""
        slot = SLOT[module]
        a, b, c = self.module_vc[slot]
        for p in pushers:  # the element-wise maximum with each pusher's clock
            pa, pb, pc = self.vc[p]
            a, b, c = (pa if pa > a else a), (pb if pb > b else b), (pc if pc > c else c)
        seq = self.seq_count[slot] = self.seq_count[slot] + 1
        vc = (seq, b, c) if slot == 0 else (a, seq, c) if slot == 1 else (a, b, seq)
        self.vc[index], self.seq[index] = vc, seq
        self.module_vc[slot] = vc
        self.by_seq[slot][seq] = index

    def _conflict(self, table: np.ndarray, elems, other: str, index: int, mem: str, writes: bool) -> None:
        """Raise RaceError if an element of ``elems`` was last accessed (per ``table``) by an
        instruction of module ``other`` that does not happen-before ``index``."""
        seen = table[elems]
        limit = self.vc[index][SLOT[other]]
        if seen.size <= SMALL:  # a few elements (a LOAD of a few weights): plain Python is cheaper
            if not seen.size or max(seen.tolist()) <= limit:
                return
        elif int(seen.max()) <= limit:
            return
        bad = int(np.flatnonzero(seen > limit)[0])
        elem = (np.arange(table.size)[elems])[bad] if isinstance(elems, slice) else int(np.asarray(elems)[bad])
        first = self.by_seq[SLOT[other]][int(seen[bad])]
        writer, reader = (index, first) if writes else (first, index)
        early, late = sorted((index, first))
        kinds = self.insns
        why = (f"{mem} element {elem} is written by {writer} ({kinds[writer].kind}) and read by {reader} "
               f"({kinds[reader].kind}); " + ("the read may see the old value (RAW)" if writer < reader
                                              else "the write may clobber it before the read (WAR)"))
        raise RaceError(early, kinds[early].kind, late, kinds[late].kind, why)

    def write_elems(self, mem: str, elems, index: int) -> None:
        """``index`` writes elements ``elems`` (slice or index array) of shared SRAM ``mem``."""
        table = self.read[mem]
        if isinstance(elems, slice) and elems.stop - elems.start <= SMALL:  # the common LOAD: inline
            seen = table[elems].tolist()
            if seen and max(seen) > self.vc[index][SLOT[SHARED[mem][1]]]:
                self._conflict(table, elems, SHARED[mem][1], index, mem, True)
        else:
            self._conflict(table, elems, SHARED[mem][1], index, mem, True)
        self.write[mem][elems] = self.seq[index]

    def write_run(self, mem: str, start: int, stop: int, index: int) -> None:
        """:meth:`write_elems` of the elements start:stop (start < stop), without building a slice
        for the common few-element LOAD."""
        if stop - start > SMALL:
            self.write_elems(mem, slice(start, stop), index)
            return
        reader = SHARED[mem][1]
        if max(self.read[mem][start:stop].tolist()) > self.vc[index][SLOT[reader]]:
            self._conflict(self.read[mem], slice(start, stop), reader, index, mem, True)
        self.write[mem][start:stop] = self.seq[index]

    def read_elems(self, mem: str, elems, index: int) -> None:
        """``index`` reads elements ``elems`` of shared SRAM ``mem``."""
        self._conflict(self.write[mem], elems, SHARED[mem][0], index, mem, False)
        self.read[mem][elems] = self.seq[index]
