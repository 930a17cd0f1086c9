"""Small structural helpers on buses of lanes (constant slices only, so conversion is plain)."""

from __future__ import annotations

from myhdl import ConcatSignal, Signal, always_comb, block, intbv


@block
def _add_lane(a, b, s):
    t = Signal(intbv(0)[33:])

    @always_comb
    def add():
        t.next = a + b

    @always_comb
    def out():
        s.next = t[32:0]
    return add, out


@block
def vec_add32(a, b, s, n):
    """s = a + b per 32-bit lane, wrapping."""
    outs = [Signal(intbv(0)[32:]) for _ in range(n)]
    insts = [_add_lane(a(32 * k + 32, 32 * k), b(32 * k + 32, 32 * k), outs[k]) for k in range(n)]
    cat = ConcatSignal(*reversed(outs)) if n > 1 else outs[0]

    @always_comb
    def out():
        s.next = cat
    insts.append(out)
    return insts


@block
def low_bytes(a, s, n):
    """s = the low byte of every 32-bit lane of a (int32 -> int8 truncation)."""
    cat = ConcatSignal(*[a(32 * k + 8, 32 * k) for k in reversed(range(n))]) if n > 1 else a(8, 0)

    @always_comb
    def out():
        s.next = cat
    return out


@block
def replicate(x, s, n):
    """s = n copies of x."""
    cat = ConcatSignal(*([x] * n)) if n > 1 else x

    @always_comb
    def out():
        s.next = cat
    return out
