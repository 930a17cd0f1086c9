"""Virtual threads: split an outer loop over N threads with partitioned buffers, then interleave.

A producer (the tensorizer) assigns the iterations of an outer loop to threads with
:func:`split`, gives each thread its own slice of every SRAM with :func:`partition`, and writes
each thread's instructions as a list of :class:`~compiler.annotated.Segment` (a segment is
what a thread issues before another thread may go, e.g. "load tile k, then compute on it").
:func:`interleave` merges the threads segment by segment, round robin. Because the threads
touch disjoint buffers, one thread's loads can run while another computes; the token pass
(:mod:`compiler.latency_hiding.tokens`) then makes every module wait exactly where it must.
"""

from __future__ import annotations

from typing import Sequence, TypeVar

from compiler.annotated import Op, Segment

T = TypeVar("T")


def split(items: Sequence[T], threads: int) -> list[list[T]]:
    """Round-robin assignment of loop iterations to ``threads`` virtual threads."""
    return [list(items[t::threads]) for t in range(threads)]


def partition(depth: int, threads: int, base: int = 0) -> list[tuple[int, int]]:
    """(base, size) of each thread's equal slice of ``depth`` SRAM elements from ``base``."""
    size = (depth - base) // threads
    return [(base + t * size, size) for t in range(threads)]


def interleave(threads: Sequence[Sequence[Segment]]) -> list[Op]:
    """Merge per-thread segment lists round robin: T0 seg0, T1 seg0, ..., T0 seg1, ..."""
    merged: list[Op] = []
    longest = max((len(t) for t in threads), default=0)
    for k in range(longest):
        for segments in threads:
            if k < len(segments):
                merged.extend(segments[k].ops)
    return merged
