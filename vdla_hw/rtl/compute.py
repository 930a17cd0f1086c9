"""The compute module: LOAD of uop/acc (read DMA), GEMM and ALU over the two-level uop loop,
FINISH. Its blocks, each with one job and named ports (compute_ports):

* ``insn_control`` (here): dispatch of LOAD to the DMA, FINISH's INSN_OVERHEAD cycles, ``done``;
* ``mode_regs`` / ``uop_loop`` (compute_loop): the instruction's mode and its uop loop timing
  (vdla_hw.timing.gemm_cycles / alu_cycles);
* ``operand_read``, ``datapath``, ``write_forward`` (compute_pipe): the uop pipeline.

Pipeline of a uop issued at a (the accumulator write lands params.GEMM_WRITE_CYCLES /
ALU_WRITE_CYCLES = 4 cycles after issue, before the retire cycle; rtl_params checks it):
  a    uop SRAM read
  a+1  dst/src/wgt = uop fields + loop offsets; GEMM reads inp/wgt; ALU reads acc[dst]
  a+2  GEMM: packed multiplies + bias into the DSP P registers;
       ALU: reads acc[src], latches acc[dst] (or the result written in this cycle)
  a+3  GEMM: adder trees registered, reads acc[dst];
       ALU: operands, shift amount and comparisons registered
  a+4  GEMM: acc[dst] += tree;  ALU: acc[dst] = op(acc[dst], imm or acc[src]);
       reset GEMM: acc[dst] = 0 (an ALU ignores reset); the low bytes go to out[dst]
Compute forwards its own accumulator write to its acc read of the same cycle (the DMA's
LOAD writes never meet a GEMM/ALU read: one instruction at a time), and the ALU's acc[dst]
latch takes the write of the cycle it latches in (its predecessor's, at ALU_CYCLES_PER_UOP 2),
so an ALU uop sees the uop before it; a GEMM uop reads its accumulator one cycle before writing
it, so with the forwarding it sees the write of the uop issued the cycle before: a repeated
accumulator computes the sequential result at no cost (timing.gemm_cycles; the hazard rule,
timing.gemm_hazard, is VTA's pipeline's and is checked before the RTL runs).
"""

from __future__ import annotations

from myhdl import Signal, always_comb, always_seq, block, intbv

from vdla_hw import isa
from vdla_hw.rtl.compute_loop import mode_regs, uop_loop
from vdla_hw.rtl.compute_pipe import datapath, operand_read, write_forward
from vdla_hw.rtl.compute_ports import ComputeMode, ReadPort, UopIssue, UopStages, WritePort, count_bits
from vdla_hw.rtl.decode import insn_fields, uop_fields
from vdla_hw.rtl.dma import dma_read
from vdla_hw.rtl.dma_ports import ErrReport, InsnPort, sram_write
from vdla_hw.rtl.memport import BeatBus, PortClient
from vdla_hw.rtl.params import RtlParams
from vdla_hw.rtl.sram import SramPorts

OPC_LOAD, OPC_FIN = isa.OPCODES["LOAD"], isa.OPCODES["FINISH"]


@block
def insn_control(clk, rst, p: RtlParams, start, opcode, dma_start, dma_done, seq_done, done, finish):
    """Start the DMA on a LOAD; a FINISH takes INSN_OVERHEAD cycles and raises ``finish`` with
    its ``done``; ``done`` ends any instruction (DMA, uop loop or FINISH)."""
    OVH = p.config.INSN_OVERHEAD
    fin_cnt = Signal(intbv(0)[count_bits(OVH - 1):])
    fin_act = Signal(bool(0))
    fin_done = Signal(bool(0))

    @always_comb
    def dispatch():
        dma_start.next = start and opcode == OPC_LOAD
        fin_done.next = fin_act and fin_cnt == 0

    @always_comb
    def outs():
        done.next = dma_done or seq_done or fin_done
        finish.next = fin_done

    @always_seq(clk.posedge, reset=rst)
    def seq():
        if start and opcode == OPC_FIN:
            fin_act.next = 1
            fin_cnt.next = OVH - 1
        elif fin_act:
            if fin_cnt == 0:
                fin_act.next = 0
            else:
                fin_cnt.next = fin_cnt - 1

    return dispatch, outs, seq


@block
def compute(clk, rst, p: RtlParams, cmd: InsnPort, finish, client: PortClient, beat: BeatBus, rdata, sp: SramPorts,
            dram_bytes, rerr: ErrReport):
    """``cmd``: the instruction's start, entry and done (exec_ctl); ``finish``: a FINISH retires;
    ``client`` / ``beat`` / ``rdata``: the memory port for its LOAD DMA (uop, acc), with
    ``dram_bytes`` and ``rerr`` the LOAD range check (dma_read); ``sp``: the SRAM ports it reads
    (uop, inp, wgt, acc elements) and writes (acc, out elements; uop through the DMA)."""
    start, sinsn, done = cmd.start, cmd.insn, cmd.done
    gi, ai = insn_fields(sinsn, p, "GEMM"), insn_fields(sinsn, p, "ALU")
    uop, inp, wgt, acc = (ReadPort(*r) for r in (sp.uop_r, sp.inp_r, sp.wgt_r, sp.acc_r))
    acc_wp, out_wp = WritePort(*sp.acc_w), WritePort(*sp.out_w)
    uf = uop_fields(uop.data, p)
    dma_w = WritePort.new(p.mems["acc"].ibits, p.mems["acc"].width)    # the LOAD DMA's acc writes
    dma_start, dma_done = Signal(bool(0)), Signal(bool(0))
    mode, issue, st = ComputeMode(gi, ai), UopIssue(p, uf), UopStages(p)
    accv, new = (Signal(intbv(0)[p.mems["acc"].width:]) for _ in range(2))   # acc read (forwarded), write
    return [dma_read(clk, rst, p, ["uop", "acc"], InsnPort(dma_start, sinsn, dma_done), client, beat, rdata,
                     {"uop": sram_write(p.mems["uop"], sp.uop_w), "acc": dma_w}, dram_bytes, rerr),
            insn_control(clk, rst, p, start, gi.opcode, dma_start, dma_done, issue.seq_done, done, finish),
            mode_regs(clk, rst, start, gi, ai, mode),
            uop_loop(clk, rst, p, start, gi, ai, mode.is_alu, issue),
            operand_read(clk, rst, p, uf, issue, mode.is_alu, uop, inp, wgt, acc, st),
            datapath(clk, rst, p, mode, st, inp.data, wgt.data, accv, new),
            write_forward(clk, p, st, new, acc, acc_wp, out_wp, dma_w, accv)]
