"""The compute module's datapath: LOAD of uop/acc (read DMA), GEMM and ALU over the two-level
uop loop, FINISH.

Loop timing (vdla_hw.timing.gemm_cycles / alu_cycles): from the start cycle t_s, INSN_OVERHEAD
cycles, then uop k issues at a_k = t_s + INSN_OVERHEAD + P*k (P = 1 for GEMM,
ALU_CYCLES_PER_UOP for ALU), then the pipeline drains; ``done`` at a_last + P + DEPTH.

Pipeline of a uop issued at a (the accumulator write lands params.GEMM_WRITE_CYCLES /
ALU_WRITE_CYCLES = 4 cycles after issue, before the retire cycle; rtl_params checks it):
  a    uop SRAM read
  a+1  dst/src/wgt = uop fields + loop offsets; GEMM reads inp/wgt; ALU reads acc[dst]
  a+2  GEMM: packed multiplies + bias into the DSP P registers;
       ALU: reads acc[src], latches acc[dst] (or the result written in this cycle)
  a+3  GEMM: adder trees registered, reads acc[dst];
       ALU: operands, shift amount and comparisons registered
  a+4  GEMM: acc[dst] += tree;  ALU: acc[dst] = op(acc[dst], imm or acc[src]);
       reset: acc[dst] = 0; the low bytes go to out[dst]
Compute forwards its own accumulator write to its acc read of the same cycle (the DMA's
LOAD writes never meet a GEMM/ALU read: one instruction at a time), and the ALU's acc[dst]
latch takes the write of the cycle it latches in (its predecessor's, at ALU_CYCLES_PER_UOP 2),
so an ALU uop sees the uop before it; a GEMM uop reads its accumulator one cycle before writing
it, as before the pipelining (timing.GEMM_HAZARD_DISTANCE is unchanged).
"""

from __future__ import annotations

from myhdl import Signal, always_comb, always_seq, block, intbv

from vdla_hw import isa
from vdla_hw.rtl.decode import field_reg, insn_fields, sign_extend, uop_fields
from vdla_hw.rtl.dma import dma_read
from vdla_hw.rtl.gemm import alu_core, gemm_core
from vdla_hw.rtl.params import RtlParams
from vdla_hw.rtl.vec import low_bytes, replicate, vec_add32

IDLE, PRE, ISSUE, DRAIN = range(4)


@block
def compute(clk, rst, p: RtlParams, start, sinsn, done, finish,
            req, desc, grant, rel_me, port, rdata,
            uop_wports, uop_r, inp_r, wgt_r, acc_r, acc_w, out_w, dram_bytes, rerr, rerr_insn):
    """``uop_r``/``inp_r``/``wgt_r``/``acc_r``: element read ports (re, raddr, rdata);
    ``acc_w``/``out_w``: element write ports (we, waddr, wdata); ``uop_wports``: the uop
    SRAM's write ports for the DMA. ``dram_bytes``, ``rerr``, ``rerr_insn``: the LOAD range
    check of the DMA (dma_read)."""
    uop_re, uop_ra, uop_rd = uop_r
    inp_re, inp_ra, inp_rd = inp_r
    wgt_re, wgt_ra, wgt_rd = wgt_r
    acc_re, acc_ra, acc_rd = acc_r
    acc_we, acc_wa, acc_wd = acc_w
    out_we, out_wa, out_wd = out_w
    c = p.config
    OVH = c.INSN_OVERHEAD
    PA = c.ALU_CYCLES_PER_UOP
    DG = 1 + c.GEMM_PIPELINE_DEPTH
    DA = PA + c.ALU_PIPELINE_DEPTH
    n = p.batch * p.block_out

    gi, ai = insn_fields(sinsn, p, "GEMM"), insn_fields(sinsn, p, "ALU")
    OPC_LOAD, OPC_GEMM, OPC_ALU, OPC_FIN = (isa.OPCODES[k] for k in ("LOAD", "GEMM", "ALU", "FINISH"))
    uf = uop_fields(uop_rd, p)
    accb, inpb, wgtb, uopb = (p.mems[m].ibits for m in ("acc", "inp", "wgt", "uop"))

    dma_start = Signal(bool(0))
    dma_done = Signal(bool(0))
    dw_we, dw_wa, dw_wd = Signal(bool(0)), Signal(intbv(0)[accb:]), Signal(intbv(0)[p.mems["acc"].width:])
    acc_dw = (dw_we, dw_wa, dw_wd)
    insts = [dma_read(clk, rst, p, ["uop", "acc"], dma_start, sinsn, dma_done, req, desc, grant, rel_me, port, rdata,
                      {"uop": uop_wports, "acc": acc_dw}, dram_bytes, rerr, rerr_insn)]

    phase = Signal(intbv(0)[2:])
    cnt = Signal(intbv(0)[8:])
    fin_cnt = Signal(intbv(0)[8:])
    fin_act = Signal(bool(0))
    is_alu = Signal(bool(0))
    rst_f = Signal(bool(0))
    ubgn = Signal(intbv(0)[uopb + 1:])
    uend = Signal(intbv(0)[uopb + 1:])
    itout = field_reg(gi.iter_out)
    itin = field_reg(gi.iter_in)
    dfo, dfi, sfo, sfi, wfo, wfi = (Signal(intbv(0)[32:]) for _ in range(6))
    aop = field_reg(ai.alu_opcode)
    use_imm = Signal(bool(0))
    u = Signal(intbv(0)[uopb + 1:])
    i = field_reg(gi.iter_out)
    j = field_reg(gi.iter_in)
    od, os_, ow, ood, oos, oow = (Signal(intbv(0)[32:]) for _ in range(6))
    sp = Signal(intbv(0)[8:])
    iss = Signal(bool(0))
    empty = Signal(bool(0))
    seq_done = Signal(bool(0))
    fin_done = Signal(bool(0))
    # pipeline
    v1, v2, v3, v4 = (Signal(bool(0)) for _ in range(4))
    od1, os1, ow1 = (Signal(intbv(0)[32:]) for _ in range(3))
    dst_c = Signal(intbv(0)[accb:])
    srci_c = Signal(intbv(0)[inpb:])
    srca_c = Signal(intbv(0)[accb:])
    wgt_c = Signal(intbv(0)[wgtb:])
    dst2, dst3, dst4 = (Signal(intbv(0)[accb:]) for _ in range(3))
    fwd_hit = Signal(bool(0))         # the last acc read was of the address written in its cycle
    fwd_d = Signal(intbv(0)[32 * n:])  # ... and this was written
    accv = Signal(intbv(0)[32 * n:])  # acc read data, forwarded
    src2 = Signal(intbv(0)[accb:])
    aval = Signal(intbv(0)[32 * n:])
    bop = Signal(intbv(0)[32 * n:])
    imm = field_reg(ai.imm)           # the running ALU instruction's imm (registered at its start)
    immx = Signal(intbv(0)[32:])      # imm sign-extended to an ACC element
    immv = Signal(intbv(0)[32 * n:])
    sums = Signal(intbv(0)[32 * n:])
    gemm_new = Signal(intbv(0)[32 * n:])
    alu_new = Signal(intbv(0)[32 * n:])
    new = Signal(intbv(0)[32 * n:])
    new_lo = Signal(intbv(0)[len(out_wd):])
    insts += [gemm_core(clk, p, inp_rd, wgt_rd, sums), vec_add32(accv, sums, gemm_new, n),
              alu_core(clk, p, aop, aval, bop, alu_new), replicate(immx, immv, n),
              sign_extend(imm, immx), low_bytes(new, new_lo, n)]

    @always_comb
    def dispatch():
        op = gi.opcode
        dma_start.next = start and op == OPC_LOAD

    @always_comb
    def status():
        empty.next = itout == 0 or itin == 0 or uend <= ubgn
        iss.next = (phase == PRE and cnt == 0 and not (itout == 0 or itin == 0 or uend <= ubgn)) or \
            (phase == ISSUE and sp == 0)
        seq_done.next = (phase == PRE and cnt == 0 and (itout == 0 or itin == 0 or uend <= ubgn)) or \
            (phase == DRAIN and cnt == 0)
        fin_done.next = fin_act and fin_cnt == 0

    @always_comb
    def outs():
        done.next = dma_done or seq_done or fin_done
        finish.next = fin_done

    @always_seq(clk.posedge, reset=rst)
    def seq():
        op = gi.opcode
        if start and op == OPC_FIN:
            fin_act.next = 1
            fin_cnt.next = OVH - 1
        elif fin_act:
            if fin_cnt == 0:
                fin_act.next = 0
            else:
                fin_cnt.next = fin_cnt - 1
        if start and (op == OPC_GEMM or op == OPC_ALU):
            phase.next = PRE
            cnt.next = OVH - 1
            is_alu.next = op == OPC_ALU
            rst_f.next = gi.reset
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
            aop.next = ai.alu_opcode
            use_imm.next = ai.use_imm
            imm.next = ai.imm
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
                        od.next = (od + dfi) & 0xFFFFFFFF
                        os_.next = (os_ + sfi) & 0xFFFFFFFF
                        ow.next = (ow + wfi) & 0xFFFFFFFF
                    else:
                        j.next = 0
                        if i + 1 != itout:
                            i.next = i + 1
                            ood.next = (ood + dfo) & 0xFFFFFFFF
                            oos.next = (oos + sfo) & 0xFFFFFFFF
                            oow.next = (oow + wfo) & 0xFFFFFFFF
                            od.next = (ood + dfo) & 0xFFFFFFFF
                            os_.next = (oos + sfo) & 0xFFFFFFFF
                            ow.next = (oow + wfo) & 0xFFFFFFFF
                        else:
                            phase.next = DRAIN
                            if is_alu:
                                cnt.next = DA - 1
                            else:
                                cnt.next = DG - 1

    @always_comb
    def uop_port():
        uop_re.next = iss
        uop_ra.next = u[uopb:]

    @always_comb
    def addr1():
        a = intbv(0)[33:]
        a[:] = uf.dst_idx + od1
        dst_c.next = a[accb:]
        s = intbv(0)[33:]
        s[:] = uf.src_idx + os1
        srci_c.next = s[inpb:]
        srca_c.next = s[accb:]
        w = intbv(0)[33:]
        w[:] = uf.wgt_idx + ow1
        wgt_c.next = w[wgtb:]

    @always_comb
    def reads():
        inp_re.next = v1 and not is_alu
        inp_ra.next = srci_c
        wgt_re.next = v1 and not is_alu
        wgt_ra.next = wgt_c
        acc_re.next = 0
        acc_ra.next = dst3
        if is_alu:
            if v1:
                acc_re.next = 1
                acc_ra.next = dst_c
            elif v2:
                acc_re.next = 1
                acc_ra.next = src2
        elif v3:
            acc_re.next = 1

    @always_comb
    def operand():
        if use_imm:
            bop.next = immv
        else:
            bop.next = accv

    @always_comb
    def result():
        if rst_f:
            new.next = 0
        elif is_alu:
            new.next = alu_new
        else:
            new.next = gemm_new

    @always_comb
    def writes():
        out_we.next = v4
        out_wa.next = dst4
        out_wd.next = new_lo
        if v4:
            acc_we.next = 1
            acc_wa.next = dst4
            acc_wd.next = new
        else:
            acc_we.next = dw_we
            acc_wa.next = dw_wa
            acc_wd.next = dw_wd

    @always_seq(clk.posedge, reset=rst)
    def pipe():
        v1.next = iss
        od1.next = od
        os1.next = os_
        ow1.next = ow
        v2.next = v1
        dst2.next = dst_c
        src2.next = srca_c
        v3.next = v2
        dst3.next = dst2
        v4.next = v3
        dst4.next = dst3
        if v2:
            if v4 and dst4 == dst2:
                aval.next = new
            else:
                aval.next = accv

    @always_seq(clk.posedge, reset=None)
    def fwd_reg():
        if acc_re:
            fwd_hit.next = v4 and acc_ra == dst4
            fwd_d.next = new

    @always_comb
    def forward():
        if fwd_hit:
            accv.next = fwd_d
        else:
            accv.next = acc_rd

    insts += [dispatch, status, outs, seq, uop_port, addr1, reads, operand, result, writes, pipe, fwd_reg, forward]
    return insts
