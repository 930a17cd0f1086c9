"""The memory part of the timing contract: how one transaction moves over the AXI port
(docs/spec.md section 5; docs/timing.md, "Memory port", walks through it with numbers).

A **transaction** is the data movement of one instruction (all rows of a LOAD or STORE) or one
fetch chunk; it holds the port from its grant until it ends. Its rows are split into **bursts**
(:func:`burst_lengths`): a new burst at every row start, at every 4 kB boundary of the byte
address, and after ``MEM_MAX_BURST`` beats. Beats are ``MEM_BYTES_PER_BEAT`` wide and aligned: a
row covers beats ``floor(start / B) .. floor((start + bytes - 1) / B)``.

Timeline of a transaction granted at cycle 0 (the RTL's memory port, ``vdla_hw.rtl.memport``,
does exactly this; the simulator adds the grant cycle). Burst k has ``len_k`` beats.

DMA side (the master):

* **Address issue.** The address of burst k (AR for a read, AW for a write) is valid from cycle
  ``a_k = max(a_{k-1} + 1, done_{k-K} + 1)``, ``a_0 = 1``: one address per cycle, registered
  (hence cycle 1, not 0), and never more than K bursts in flight, K = ``MEM_READ_OUTSTANDING``
  for reads (a burst is in flight until its last beat ``e``) and ``MEM_WRITE_OUTSTANDING`` for
  writes (until its write response ``b``).
* **Write data.** The W beats of burst k start at ``s_k = max(a_k, w_{k-1} + 1 + GAP)``, one per
  cycle; ``w_k`` is the last one. Read data is always accepted (RREADY stays high).

Memory side (the slave the contract assumes: answers in order and never back-pressures):

* **Read data.** The first beat of burst k comes at ``f_k = max(a_k + MEM_LATENCY,
  e_{k-1} + 1 + GAP)`` and the burst's beats follow one per cycle, so ``e_k = f_k + len_k - 1``:
  the first-beat latency is paid once per transaction as long as enough bursts are in flight.
* **Write response.** ``b_k = w_k + MEM_WRITE_LATENCY``.
* GAP = ``MEM_BURST_GAP`` dead cycles between consecutive bursts on a data channel, and a DDR cap
  c = ``DDR_BYTES_PER_CYCLE_CAP`` > 0 spreads a burst's beats to one every B / c cycles (beat j at
  ``ceil(j * B / c)`` after the first): both describe the DDR behind the port. A cap of at least B
  bytes per cycle changes nothing (:func:`cap_binds`); the presets' caps come from the PYNQ-Z1's
  DDR3 (``vdla_hw.presets.PYNQ_Z1_DDR``) and bind only at clocks where that DDR delivers less than
  one beat per cycle.

The port is free again in the cycle after the last read beat (``e_last + 1``) or after the last
write response (``b_last + 1``): :func:`read_cycles` / :func:`write_cycles`.

**Rows one at a time** (``MEM_ROW_SERIAL`` = 1, VTA's HLS DMA: ``load_2d``, ``load_pad_2d`` and
``store`` of apache/tvm v0.6.0 ``vta/hardware/xilinx/src/vta.cc`` copy a 2-D transfer with one
``memcpy`` per row, and a ``memcpy`` ends when its last beat or write response is back): the
first burst of every row but the first is addressed no earlier than the cycle after the previous
burst completed, ``a_k >= e_{k-1} + 1`` (reads) or ``a_k >= b_{k-1} + 1`` (writes). Each row then
costs what it would alone, and the rows follow each other with one cycle less than separate
transactions would take (no grant between them). The RTL streams rows (the default, 0) and
refuses 1 (``vdla_hw.rtl.params``): the value describes other hardware, for the simulator.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from vdla_hw.config import Config

# AXI bursts never cross a 4 kB address boundary.
BURST_BOUNDARY = 4096


def burst_lengths(config: Config, starts, nbytes: int) -> np.ndarray:
    """Beats of every burst, in issue order, to move rows of ``nbytes`` bytes starting at byte
    addresses ``starts`` (one row after another)."""
    return burst_plan(config, starts, nbytes)[0]


def burst_plan(config: Config, starts, nbytes: int) -> tuple[np.ndarray, np.ndarray]:
    """(:func:`burst_lengths`, bursts of each row): the second array has one count per row."""
    starts = np.asarray(starts, dtype=np.int64).reshape(-1)
    if nbytes <= 0 or starts.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    bpb, maxb = config.MEM_BYTES_PER_BEAT, config.MEM_MAX_BURST
    page = BURST_BOUNDARY // bpb  # beats per 4 kB page (bpb is a power of two <= 128)
    first = starts // bpb
    last = (starts + nbytes - 1) // bpb
    pf, pl = first // page, last // page
    # pieces of each row between 4 kB boundaries: head, full middle pages, tail
    npieces = pl - pf + 1
    pieces = np.full(int(npieces.sum()), page, dtype=np.int64)
    ends = np.cumsum(npieces)
    heads = ends - npieces
    pieces[heads] = np.where(pf == pl, last - first + 1, (pf + 1) * page - first)
    crossing = pf != pl
    pieces[ends[crossing] - 1] = last[crossing] - pl[crossing] * page + 1
    # each piece into bursts of at most MEM_MAX_BURST beats, the short one last
    counts = -(-pieces // maxb)
    out = np.full(int(counts.sum()), maxb, dtype=np.int64)
    out[np.cumsum(counts) - 1] = pieces - (counts - 1) * maxb
    return out, np.add.reduceat(counts, heads)


def _row_firsts(n: int, row_bursts) -> np.ndarray:
    """True at the first burst of every row but the first (the bursts that wait when rows go one
    at a time); all False without ``row_bursts``."""
    flags = np.zeros(n, dtype=bool)
    if row_bursts is not None and len(row_bursts) > 1:
        flags[np.cumsum(row_bursts)[:-1]] = True
    return flags


def _rows(lengths: np.ndarray, row_bursts) -> list[np.ndarray]:
    return np.split(lengths, np.cumsum(row_bursts)[:-1])


def cap_binds(config: Config) -> bool:
    """True when the DDR cap slows a burst down: 0 < DDR_BYTES_PER_CYCLE_CAP < MEM_BYTES_PER_BEAT
    (a cap of one beat per cycle or more leaves every beat where the port puts it)."""
    return 0 < config.DDR_BYTES_PER_CYCLE_CAP < config.MEM_BYTES_PER_BEAT


def _durations(config: Config, lengths: np.ndarray) -> np.ndarray:
    """Cycles from a burst's first beat to its last, plus one (``len`` without a binding DDR cap)."""
    cap = config.DDR_BYTES_PER_CYCLE_CAP
    if not cap_binds(config):
        return lengths
    spread = np.ceil((lengths - 1) * config.MEM_BYTES_PER_BEAT / cap).astype(np.int64)
    return 1 + np.maximum(lengths - 1, spread)


def _issue_times(done: np.ndarray, limit: int) -> np.ndarray:
    """a_k = max(a_{k-1} + 1, done_{k-limit} + 1), a_0 = 1, for given completion cycles."""
    n = done.size
    k = np.arange(n, dtype=np.int64)
    slack = np.full(n, 1, dtype=np.int64)          # a_k - k from the one-per-cycle chain
    if n > limit:
        slack[limit:] = np.maximum(1, done[:n - limit] + 1 - k[limit:])
    return k + np.maximum.accumulate(slack)


def read_timeline(config: Config, lengths, row_bursts=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, f, e) of every burst of a read transaction granted at cycle 0: address valid, first
    beat, last beat. Exact recurrence, burst by burst (the reference for :func:`read_cycles`).
    ``row_bursts`` (bursts per row, :func:`burst_plan`) matters with ``MEM_ROW_SERIAL``."""
    lengths = np.asarray(lengths, dtype=np.int64)
    dur = _durations(config, lengths)
    lat, gap, lim = config.MEM_LATENCY, config.MEM_BURST_GAP, config.MEM_READ_OUTSTANDING
    n = lengths.size
    waits = _row_firsts(n, row_bursts) if config.MEM_ROW_SERIAL else np.zeros(n, dtype=bool)
    a, f, e = (np.zeros(n, dtype=np.int64) for _ in range(3))
    for k in range(n):
        a[k] = 1 if k == 0 else max(a[k - 1] + 1, e[k - lim] + 1 if k >= lim else 0,
                                    e[k - 1] + 1 if waits[k] else 0)
        f[k] = a[k] + lat if k == 0 else max(a[k] + lat, e[k - 1] + 1 + gap)
        e[k] = f[k] + dur[k] - 1
    return a, f, e


def write_timeline(config: Config, lengths, row_bursts=None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(a, s, w, b) of every burst of a write transaction granted at cycle 0: address valid,
    first and last data beat, write response. Exact recurrence (the reference for
    :func:`write_cycles`); ``row_bursts`` as for :func:`read_timeline`."""
    lengths = np.asarray(lengths, dtype=np.int64)
    dur = _durations(config, lengths)
    wlat, gap, lim = config.MEM_WRITE_LATENCY, config.MEM_BURST_GAP, config.MEM_WRITE_OUTSTANDING
    n = lengths.size
    waits = _row_firsts(n, row_bursts) if config.MEM_ROW_SERIAL else np.zeros(n, dtype=bool)
    a, s, w, b = (np.zeros(n, dtype=np.int64) for _ in range(4))
    for k in range(n):
        a[k] = 1 if k == 0 else max(a[k - 1] + 1, b[k - lim] + 1 if k >= lim else 0,
                                    b[k - 1] + 1 if waits[k] else 0)
        s[k] = a[k] if k == 0 else max(a[k], w[k - 1] + 1 + gap)
        w[k] = s[k] + dur[k] - 1
        b[k] = w[k] + wlat
    return a, s, w, b


def read_cycles(config: Config, lengths, row_bursts=None) -> int:
    """Cycles a read transaction of bursts ``lengths`` holds the port (0 without bursts);
    ``row_bursts`` (bursts per row) matters with ``MEM_ROW_SERIAL``."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if lengths.size == 0:
        return 0
    if config.MEM_ROW_SERIAL and row_bursts is not None and len(row_bursts) > 1:
        if config.MEM_LATENCY < config.MEM_BURST_GAP:   # a row's first beat waits for the gap: burst by burst
            return int(read_timeline(config, lengths, row_bursts)[2][-1]) + 1
        rows = _rows(lengths, row_bursts)   # each row alone, the next addressed the cycle after its last beat
        return sum(read_cycles(config, row) for row in rows) - (len(rows) - 1)
    dur = _durations(config, lengths)
    lat, gap = config.MEM_LATENCY, config.MEM_BURST_GAP
    # Streaming guess: no burst waits for its address, data back to back (plus the gaps).
    f = 1 + lat + np.concatenate(([0], np.cumsum(dur[:-1] + gap)))
    e = f + dur - 1
    a = _issue_times(e, config.MEM_READ_OUTSTANDING)
    if np.all(a + lat <= f):
        return int(e[-1]) + 1   # the guess satisfies the recurrence, whose solution is unique
    return int(read_timeline(config, lengths)[2][-1]) + 1


def write_cycles(config: Config, lengths, row_bursts=None) -> int:
    """Cycles a write transaction of bursts ``lengths`` holds the port, up to and including its
    last write response (0 without bursts); ``row_bursts`` as for :func:`read_cycles`."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if lengths.size == 0:
        return 0
    if config.MEM_ROW_SERIAL and row_bursts is not None and len(row_bursts) > 1:
        if config.MEM_WRITE_LATENCY < config.MEM_BURST_GAP:
            return int(write_timeline(config, lengths, row_bursts)[3][-1]) + 1
        rows = _rows(lengths, row_bursts)   # each row alone, the next addressed after its last response
        return sum(write_cycles(config, row) for row in rows) - (len(rows) - 1)
    dur = _durations(config, lengths)
    wlat, gap = config.MEM_WRITE_LATENCY, config.MEM_BURST_GAP
    s = 1 + np.concatenate(([0], np.cumsum(dur[:-1] + gap)))
    w = s + dur - 1
    a = _issue_times(w + wlat, config.MEM_WRITE_OUTSTANDING)
    if np.all(a <= s):
        return int(w[-1]) + wlat + 1
    return int(write_timeline(config, lengths)[3][-1]) + 1


@functools.lru_cache(maxsize=1 << 14)
def rows_cost(config: Config, write: bool, base: int, stride: int, rows: int, nbytes: int) -> tuple[int, int]:
    """(port cycles, beats) of ``rows`` rows of ``nbytes`` bytes at byte ``base + r * stride``.
    Only the addresses modulo 4 kB matter, so callers pass them reduced (a cache key)."""
    starts = base + np.arange(rows, dtype=np.int64) * stride
    lengths, row_bursts = burst_plan(config, starts, nbytes)
    cycles = (write_cycles if write else read_cycles)(config, lengths, row_bursts)
    return cycles, int(lengths.sum())


def transaction_cost(config: Config, write: bool, base: int, stride: int, rows: int, nbytes: int) -> tuple[int, int]:
    """:func:`rows_cost` with the addresses reduced modulo 4 kB (equal costs, cached)."""
    if rows <= 0 or nbytes <= 0:
        return 0, 0
    return rows_cost(config, write, base % BURST_BOUNDARY, stride % BURST_BOUNDARY if rows > 1 else 0, rows, nbytes)


def full_rate_outstanding(config: Config) -> int:
    """The fewest read bursts in flight that hide MEM_LATENCY behind full-length bursts:
    K - 1 bursts of MEM_MAX_BURST beats must cover the latency (``ceil(L / MAXB) + 1``)."""
    return math.ceil(config.MEM_LATENCY / config.MEM_MAX_BURST) + 1
