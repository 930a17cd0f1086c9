"""The compute module's uop pipeline behind the loop (vdla_hw/rtl/compute.py has the stage table):
the operand reads (uop word, addresses, SRAM read enables), the GEMM/ALU datapath, and the
accumulator/OUT writes with the forwarding of compute's own accumulator write."""

from __future__ import annotations

from myhdl import Signal, always_comb, always_seq, block, intbv

from vdla_hw.rtl.compute_ports import ComputeMode, ReadPort, UopIssue, UopStages, WritePort
from vdla_hw.rtl.decode import sign_extend
from vdla_hw.rtl.gemm import alu_core, gemm_core
from vdla_hw.rtl.params import RtlParams
from vdla_hw.rtl.vec import low_bytes, replicate, vec_add


def _wrap_add_bits(a, b) -> int:
    """Bits of the sum of an index field ``a`` and an offset ``b`` before it wraps to an index."""
    return max(len(a), len(b)) + 1


@block
def operand_read(clk, rst, p: RtlParams, uf, issue: UopIssue, is_alu, uop: ReadPort, inp: ReadPort,
                 wgt: ReadPort, acc: ReadPort, st: UopStages):
    """Stage a: read the uop word ``issue.uop``. Stage a+1: the uop's fields ``uf`` (of
    ``uop.data``) plus the loop offsets give dst/src/wgt; GEMM reads inp[src], wgt[wgt], ALU reads
    acc[dst]. Stage a+2: ALU reads acc[src]. Stage a+3: GEMM reads acc[dst]. Drives ``st``."""
    accb, inpb, wgtb = (p.mems[m].ibits for m in ("acc", "inp", "wgt"))
    DB, SB, WB = (_wrap_add_bits(f, o) for f, o in ((uf.dst_idx, issue.dst), (uf.src_idx, issue.src),
                                                     (uf.wgt_idx, issue.wgt)))
    od1, os1, ow1 = (Signal(intbv(0)[len(s):]) for s in (issue.dst, issue.src, issue.wgt))
    dst_c = Signal(intbv(0)[accb:])
    srci_c = Signal(intbv(0)[inpb:])
    srca_c = Signal(intbv(0)[accb:])
    wgt_c = Signal(intbv(0)[wgtb:])

    @always_comb
    def uop_port():
        uop.re.next = issue.iss
        uop.addr.next = issue.uop

    @always_comb
    def addr1():
        a = intbv(0)[DB:]
        a[:] = uf.dst_idx + od1
        dst_c.next = a[accb:]
        s = intbv(0)[SB:]
        s[:] = uf.src_idx + os1
        srci_c.next = s[inpb:]
        srca_c.next = s[accb:]
        w = intbv(0)[WB:]
        w[:] = uf.wgt_idx + ow1
        wgt_c.next = w[wgtb:]

    @always_comb
    def reads():
        inp.re.next = st.v1 and not is_alu
        inp.addr.next = srci_c
        wgt.re.next = st.v1 and not is_alu
        wgt.addr.next = wgt_c
        acc.re.next = 0
        acc.addr.next = st.dst3
        if is_alu:
            if st.v1:
                acc.re.next = 1
                acc.addr.next = dst_c
            elif st.v2:
                acc.re.next = 1
                acc.addr.next = st.src2
        elif st.v3:
            acc.re.next = 1

    @always_seq(clk.posedge, reset=rst)
    def pipe():
        st.v1.next = issue.iss
        od1.next = issue.dst
        os1.next = issue.src
        ow1.next = issue.wgt
        st.v2.next = st.v1
        st.dst2.next = dst_c
        st.src2.next = srca_c
        st.v3.next = st.v2
        st.dst3.next = st.dst2
        st.v4.next = st.v3
        st.dst4.next = st.dst3

    return uop_port, addr1, reads, pipe


@block
def datapath(clk, rst, p: RtlParams, mode: ComputeMode, st: UopStages, inp_rd, wgt_rd, accv, new):
    """``new``, the value written at a+4: 0 for a reset, else GEMM: acc[dst] (``accv`` read at
    a+3) + the adder tree of inp/wgt (read at a+1); ALU: op(acc[dst] latched at a+2 -- or the
    write of that cycle to it --, imm or acc[src] read at a+2), operands registered at a+3."""
    c = p.config
    n = p.batch * p.block_out
    W = p.mems["acc"].width          # n int32 lanes
    aval, bop, immv, sums, gemm_new, alu_new = (Signal(intbv(0)[W:]) for _ in range(6))
    immx = Signal(intbv(0)[c.acc_bits:])      # imm sign-extended to an ACC element
    # the pipeline registers load only in their uop's stage: GEMM products at a+2 (inp/wgt data),
    # the adder tree at a+3; the ALU's operand stage at a+3
    insts = [gemm_core(clk, p, st.v2, st.v3, inp_rd, wgt_rd, sums), vec_add(accv, sums, gemm_new, n),
             alu_core(clk, p, st.v3, mode.alu_opcode, aval, bop, alu_new), replicate(immx, immv, n),
             sign_extend(mode.imm, immx)]

    @always_comb
    def operand():
        if mode.use_imm:
            bop.next = immv
        else:
            bop.next = accv

    @always_comb
    def result():
        if mode.reset:
            new.next = 0
        elif mode.is_alu:
            new.next = alu_new
        else:
            new.next = gemm_new

    @always_seq(clk.posedge, reset=rst)
    def dst_latch():
        if st.v2:
            if st.v4 and st.dst4 == st.dst2:
                aval.next = new
            else:
                aval.next = accv

    return insts + [operand, result, dst_latch]


@block
def write_forward(clk, p: RtlParams, st: UopStages, new, acc: ReadPort, acc_w: WritePort, out_w: WritePort,
                  dma_w: WritePort, accv):
    """At a+4 write ``new`` to acc[dst] and its low bytes to out[dst]; otherwise the acc write
    port is the LOAD DMA's (``dma_w``). ``accv`` is ``acc.data`` with compute's own write of the
    read's cycle forwarded (the SRAM does not forward)."""
    n = p.batch * p.block_out
    new_lo = Signal(intbv(0)[len(out_w.data):])
    fwd_hit = Signal(bool(0))          # the last acc read was of the address written in its cycle
    fwd_d = Signal(intbv(0)[len(new):])  # ... and this was written
    insts = [low_bytes(new, new_lo, n)]

    @always_comb
    def writes():
        out_w.we.next = st.v4
        out_w.addr.next = st.dst4
        out_w.data.next = new_lo
        if st.v4:
            acc_w.we.next = 1
            acc_w.addr.next = st.dst4
            acc_w.data.next = new
        else:
            acc_w.we.next = dma_w.we
            acc_w.addr.next = dma_w.addr
            acc_w.data.next = dma_w.data

    @always_seq(clk.posedge, reset=None)
    def fwd_reg():
        if acc.re:
            fwd_hit.next = st.v4 and acc.addr == st.dst4
            fwd_d.next = new

    @always_comb
    def forward():
        if fwd_hit:
            accv.next = fwd_d
        else:
            accv.next = acc.data

    return insts + [writes, fwd_reg, forward]
