"""The protocol checker's totals (:mod:`vdla_hw.rtl.axi_check`): every rule group's flags and
check counts of a cycle summed into the ``checks`` / ``violations`` counters and OR-ed into
``rules``, through chains of two-input blocks."""

from __future__ import annotations

from myhdl import Signal, always_comb, always_seq, block, intbv

from vdla_hw.rtl.prims import wire

# the checks / flags of all rule groups in one cycle (at most 35 / 11)
CYCLE_COUNT_BITS = 8


@block
def accumulate(clk, rst, flags, counts, checks, violations, rules):
    """checks += sum(counts); violations += number of flags set; rules |= OR of flags."""
    nf = len(flags)
    all_f = Signal(intbv(0)[len(rules):])
    n_f = Signal(intbv(0)[CYCLE_COUNT_BITS:])
    n_c = Signal(intbv(0)[CYCLE_COUNT_BITS:])
    C_MASK, V_MASK = (1 << len(checks)) - 1, (1 << len(violations)) - 1
    insts = [_or_tree(flags, all_f), _count_tree(flags, n_f), _sum_tree(counts, n_c)]

    @always_seq(clk.posedge, reset=rst)
    def acc():
        checks.next = (checks + n_c) & C_MASK
        violations.next = (violations + n_f) & V_MASK
        rules.next = rules | all_f
    insts.append(acc)
    assert nf > 0
    return insts


@block
def _or_tree(flags, out):
    return _reduce(flags, out, "or")


@block
def _count_tree(flags, out):
    return _reduce(flags, out, "count")


@block
def _sum_tree(counts, out):
    return _reduce(counts, out, "sum")


@block
def _reduce(sigs, out, how):
    """out = OR / number of nonzero / sum of ``sigs`` (a chain of two-input blocks)."""
    insts = []
    width = len(out)
    prev = Signal(intbv(0)[width:])
    insts.append(_first(sigs[0], prev, how))
    for sig in sigs[1:]:
        nxt = Signal(intbv(0)[width:])
        insts.append(_step(prev, sig, nxt, how))
        prev = nxt
    insts.append(wire(prev, out))
    return insts


@block
def _first(a, out, how):
    if how == "count":
        @always_comb
        def comb():
            if a != 0:
                out.next = 1
            else:
                out.next = 0
    else:
        @always_comb
        def comb():
            out.next = a
    return comb


@block
def _step(a, b, out, how):
    if how == "or":
        @always_comb
        def comb():
            out.next = a | b
    elif how == "count":
        @always_comb
        def comb():
            if b != 0:
                out.next = a + 1
            else:
                out.next = a
    else:
        @always_comb
        def comb():
            out.next = a + b
    return comb
