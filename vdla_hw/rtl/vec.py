"""Small structural helpers on buses of ``n`` equal lanes, lane 0 at the low bits (constant
slices only, so conversion is plain); a lane's width is the bus width / ``n``."""

from __future__ import annotations

from myhdl import ConcatSignal, Signal, always_comb, block, intbv


@block
def _add_lane(a, b, s):
    W = len(s)
    t = Signal(intbv(0)[W + 1:])

    @always_comb
    def add():
        t.next = a + b

    @always_comb
    def out():
        s.next = t[W:0]
    return add, out


@block
def vec_add(a, b, s, n):
    """s = a + b per lane (int32 accumulators), wrapping."""
    W = len(s) // n
    outs = [Signal(intbv(0)[W:]) for _ in range(n)]
    insts = [_add_lane(a(W * k + W, W * k), b(W * k + W, W * k), outs[k]) for k in range(n)]
    cat = ConcatSignal(*reversed(outs)) if n > 1 else outs[0]

    @always_comb
    def out():
        s.next = cat
    insts.append(out)
    return insts


@block
def low_bytes(a, s, n):
    """s = the low bits of every lane of a, len(s) // n per lane (int32 -> int8 truncation)."""
    W, LO = len(a) // n, len(s) // n
    cat = ConcatSignal(*[a(W * k + LO, W * k) for k in reversed(range(n))]) if n > 1 else a(LO, 0)

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
