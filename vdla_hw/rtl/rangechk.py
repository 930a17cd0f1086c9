"""The LOAD/STORE range check (vdla_hw.program.check_transfer) as a pipeline over the decode
cycles, shared by the read DMA and the store module.

An instruction's fields are registered in its start cycle t_s (valid from t_s + 1). Every
stage then recomputes from the stage before it in every cycle (no enables: the fields hold
still until the next start), so each stage's registers hold the instruction's values from:

* t_s + 2, stage 1: the footprint operands, y_size - 1, SRAM room (depth - sram_base) and the
  DRAM end of row 0 (dram_base + x_size);
* t_s + 3, stage 2: the two products in DSP48E1 product registers (footprint ``fp`` and
  (y_size - 1) * x_stride) and the DRAM room (image elements - end of row 0);
* t_s + 4, stage 3: ``err`` (ERROR ``sram_range``, else ``dram_range``, else 0) and ``bad``.

So ``err`` is valid from t_s + :data:`vdla_hw.rtl.params.DECODE_CYCLES`, the earliest request
cycle the RTL allows (rtl_params refuses INSN_OVERHEAD below it); the port request and the
error report then depend on registers only.
"""

from __future__ import annotations

from myhdl import Signal, always_comb, always_seq, block, intbv

from vdla_hw import regmap


@block
def range_check(clk, rst, fa, fb, sbase, depth, dbase, ys, xs, xst, elems, fp, err, bad):
    """``fa * fb``: the SRAM footprint in elements (LOAD: rows * cols with padding; STORE:
    y_size * x_size), ``fa``/``fb`` registers or sums of registers; ``depth``: the SRAM's depth
    in elements; ``elems``: the DRAM image size in elements. Outputs (registers): ``fp`` = fa *
    fb (stage 2, for the caller's padding arithmetic), ``err``/``bad`` (stage 3)."""
    E_SRAM, E_DRAM = regmap.ERROR_BITS["sram_range"], regmap.ERROR_BITS["dram_range"]
    assert len(fp) >= len(fa) + len(fb), "the footprint product is truncated"
    # wide enough for every value below: the products, the DRAM end of row 0, the rooms
    W = max(len(fa) + len(fb), len(ys) + len(xst), max(len(dbase), len(xs)) + 1, len(depth), len(sbase),
            len(elems))
    fa1, fb1 = Signal(intbv(0)[len(fa):]), Signal(intbv(0)[len(fb):])
    ysm1, xst1 = Signal(intbv(0)[len(ys):]), Signal(intbv(0)[len(xst):])
    room1, end1, elems1 = (Signal(intbv(0)[W:]) for _ in range(3))
    over1 = Signal(bool(0))                                      # sram_base alone passes the depth
    prod2, room2, droom2 = (Signal(intbv(0)[W:]) for _ in range(3))
    over2, dover2 = Signal(bool(0)), Signal(bool(0))

    @always_seq(clk.posedge, reset=rst)
    def stage1():
        fa1.next = fa
        fb1.next = fb
        xst1.next = xst
        if ys != 0:
            ysm1.next = ys - 1
        else:
            ysm1.next = 0
        over1.next = sbase > depth
        if sbase > depth:
            room1.next = 0
        else:
            room1.next = depth - sbase
        if ys != 0:
            end1.next = dbase + xs
        else:  # no DRAM row (a LOAD of padding rows only): nothing to check
            end1.next = 0
        elems1.next = elems

    @always_seq(clk.posedge, reset=rst)
    def stage2():
        fp.next = fa1 * fb1
        prod2.next = ysm1 * xst1
        room2.next = room1
        over2.next = over1
        dover2.next = end1 > elems1
        if end1 > elems1:
            droom2.next = 0
        else:
            droom2.next = elems1 - end1

    @always_seq(clk.posedge, reset=rst)
    def stage3():
        if over2 or fp > room2:
            err.next = E_SRAM
            bad.next = 1
        elif dover2 or prod2 > droom2:
            err.next = E_DRAM
            bad.next = 1
        else:
            err.next = 0
            bad.next = 0

    return stage1, stage2, stage3

