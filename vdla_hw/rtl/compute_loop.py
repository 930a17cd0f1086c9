"""The compute module's two-level affine uop loop (vdla_hw.timing.gemm_cycles / alu_cycles).

From the start cycle t_s of a GEMM or ALU instruction: INSN_OVERHEAD cycles (PRE), then uop k
issues at a_k = t_s + INSN_OVERHEAD + P*k (ISSUE; P = 1 for GEMM, ALU_CYCLES_PER_UOP for ALU),
then the pipeline drains (DRAIN); ``seq_done`` at a_last + P + DEPTH (DEPTH = GEMM_PIPELINE_DEPTH
or ALU_PIPELINE_DEPTH), or at the end of PRE when the loop is empty. Uop u of
[uop_bgn, uop_end) runs inside j < iter_in inside i < iter_out, with the offsets
dst = i*dst_factor_out + j*dst_factor_in (and src, wgt alike) kept as running sums.
"""

from __future__ import annotations

from myhdl import Signal, always_comb, always_seq, block, intbv

from vdla_hw import isa
from vdla_hw.rtl.compute_ports import ComputeMode, UopIssue, count_bits
from vdla_hw.rtl.decode import field_reg
from vdla_hw.rtl.params import RtlParams

IDLE, PRE, ISSUE, DRAIN = range(4)
OPC_GEMM, OPC_ALU = isa.OPCODES["GEMM"], isa.OPCODES["ALU"]


@block
def mode_regs(clk, rst, start, gi, ai, mode: ComputeMode):
    """Register the mode of a GEMM/ALU instruction (``gi``/``ai``: its fields) at its start."""

    @always_seq(clk.posedge, reset=rst)
    def seq():
        if start and (gi.opcode == OPC_GEMM or gi.opcode == OPC_ALU):
            mode.is_alu.next = gi.opcode == OPC_ALU
            mode.reset.next = gi.reset and gi.opcode == OPC_GEMM  # the ALU ignores the bit
            mode.alu_opcode.next = ai.alu_opcode
            mode.use_imm.next = ai.use_imm
            mode.imm.next = ai.imm
    return seq


@block
def uop_loop(clk, rst, p: RtlParams, start, gi, ai, is_alu, out: UopIssue):
    """The loop of the GEMM/ALU instruction started by ``start`` (fields ``gi``/``ai``);
    ``is_alu`` is the registered mode (mode_regs)."""
    c = p.config
    OVH, PA = c.INSN_OVERHEAD, c.ALU_CYCLES_PER_UOP
    DG, DA = 1 + c.GEMM_PIPELINE_DEPTH, PA + c.ALU_PIPELINE_DEPTH
    uopb = p.mems["uop"].ibits
    DM, SM, WM = ((1 << len(s)) - 1 for s in (out.dst, out.src, out.wgt))
    phase = Signal(intbv(0)[count_bits(DRAIN):])
    cnt = Signal(intbv(0)[count_bits(max(OVH, DG, DA) - 1):])
    sp = Signal(intbv(0)[count_bits(PA - 1):])
    ubgn, uend, u = (Signal(intbv(0)[uopb + 1:]) for _ in range(3))
    itout, itin = field_reg(gi.iter_out), field_reg(gi.iter_in)
    i, j = field_reg(gi.iter_out), field_reg(gi.iter_in)
    dfo, dfi = field_reg(gi.dst_factor_out), field_reg(gi.dst_factor_in)
    sfo, sfi = (Signal(intbv(0)[len(out.src):]) for _ in range(2))
    wfo, wfi = field_reg(gi.wgt_factor_out), field_reg(gi.wgt_factor_in)
    od, ood = (Signal(intbv(0)[len(out.dst):]) for _ in range(2))
    os_, oos = (Signal(intbv(0)[len(out.src):]) for _ in range(2))
    ow, oow = (Signal(intbv(0)[len(out.wgt):]) for _ in range(2))
    empty = Signal(bool(0))
    iss, seq_done = out.iss, out.seq_done

    @always_comb
    def status():
        empty.next = itout == 0 or itin == 0 or uend <= ubgn
        iss.next = (phase == PRE and cnt == 0 and not (itout == 0 or itin == 0 or uend <= ubgn)) or \
            (phase == ISSUE and sp == 0)
        seq_done.next = (phase == PRE and cnt == 0 and (itout == 0 or itin == 0 or uend <= ubgn)) or \
            (phase == DRAIN and cnt == 0)

    @always_comb
    def outs():
        out.uop.next = u[uopb:]
        out.dst.next = od
        out.src.next = os_
        out.wgt.next = ow

    @always_seq(clk.posedge, reset=rst)
    def seq():
        op = gi.opcode
        if start and (op == OPC_GEMM or op == OPC_ALU):
            phase.next = PRE
            cnt.next = OVH - 1
            ubgn.next = gi.uop_bgn
            u.next = gi.uop_bgn
            uend.next = gi.uop_end
            itout.next = gi.iter_out
            itin.next = gi.iter_in
            dfo.next = gi.dst_factor_out
            dfi.next = gi.dst_factor_in
            if op == OPC_ALU:
                sfo.next = ai.src_factor_out
                sfi.next = ai.src_factor_in
            else:
                sfo.next = gi.src_factor_out
                sfi.next = gi.src_factor_in
            wfo.next = gi.wgt_factor_out
            wfi.next = gi.wgt_factor_in
            i.next = 0
            j.next = 0
            od.next = 0
            os_.next = 0
            ow.next = 0
            ood.next = 0
            oos.next = 0
            oow.next = 0
            sp.next = 0
        else:
            if phase == PRE:
                if cnt == 0:
                    if empty:
                        phase.next = IDLE
                    else:
                        phase.next = ISSUE
                else:
                    cnt.next = cnt - 1
            elif phase == DRAIN:
                if cnt == 0:
                    phase.next = IDLE
                else:
                    cnt.next = cnt - 1
            elif phase == ISSUE and sp != 0:
                sp.next = sp - 1
            if iss:
                if is_alu:
                    sp.next = PA - 1
                else:
                    sp.next = 0
                if u + 1 != uend:
                    u.next = u + 1
                else:
                    u.next = ubgn
                    if j + 1 != itin:
                        j.next = j + 1
                        od.next = (od + dfi) & DM
                        os_.next = (os_ + sfi) & SM
                        ow.next = (ow + wfi) & WM
                    else:
                        j.next = 0
                        if i + 1 != itout:
                            i.next = i + 1
                            ood.next = (ood + dfo) & DM
                            oos.next = (oos + sfo) & SM
                            oow.next = (oow + wfo) & WM
                            od.next = (ood + dfo) & DM
                            os_.next = (oos + sfo) & SM
                            ow.next = (oow + wfo) & WM
                        else:
                            phase.next = DRAIN
                            if is_alu:
                                cnt.next = DA - 1
                            else:
                                cnt.next = DG - 1

    return status, outs, seq
