"""LOAD data movers: the read DMA shared by the load module (inp, wgt) and compute (uop, acc).

Timing (vdla_hw.timing.exec_cycles of a LOAD): from the start cycle t_s, INSN_OVERHEAD cycles
of decode, then a port request (held until granted), the port transaction, then one cycle per
padding element; ``done`` is high in the retire cycle. A LOAD of padding rows only (y_size 0,
x_size and y padding non-zero) makes no request: its padding cycles follow the decode cycles. Data lands in SRAM as beats arrive;
padding zeros are written in cycles without a beat, from the cycle after the earliest request
cycle (the padding iterator's row bases come out of the decode pipeline). There are always
enough before retire: from the grant g (at or after the request cycle) the port is held P
cycles, released at g + P, and the retire is at g + P + pad; the B beats move in
[g + 1, g + P - 1] and P >= B + MEM_LATENCY + 1 (the first beat comes MEM_LATENCY >= 1 cycles
after the AR, raised at g + 1 at the earliest), so [g + 1, g + P + pad - 1] holds at least
pad + MEM_LATENCY beat-free cycles.
"""

from __future__ import annotations

from myhdl import Signal, always_comb, always_seq, block

from vdla_hw.rtl.compute_ports import count_bits
from vdla_hw.rtl.decode import insn_fields
from vdla_hw.rtl.dma_decode import LoadDecode, TransferFields, beats_per_elem, load_decode, transfer_latch
from vdla_hw.rtl.dma_ports import ErrReport, InsnPort, vec
from vdla_hw.rtl.dma_walk import DataPos, PadWrite, data_pos, pad_walk
from vdla_hw.rtl.dma_write import narrow_writer, wide_writer
from vdla_hw.rtl.memport import BeatBus, PortClient
from vdla_hw.rtl.params import DECODE_CYCLES, RtlParams, log2
from vdla_hw.rtl.portdesc import desc_elements

IDLE, PRE, REQ, HOLD, POST = range(5)


@block
def load_control(clk, rst, p: RtlParams, cmd: InsnPort, client: PortClient, f: TransferFields, d: LoadDecode, at_req,
                 rerr: ErrReport):
    """A LOAD's phases: PRE (the decode cycles), REQ (the port request, held until granted),
    HOLD (the port transaction, until ``client.rel``), POST (one cycle per padding element);
    ``at_req`` marks the earliest request cycle, where a failing range check reports and ends
    the LOAD. ``client.req``, ``cmd.done`` and ``rerr`` come from registers only."""
    OVH = p.config.INSN_OVERHEAD
    assert OVH >= DECODE_CYCLES, "rtl_params refuses this configuration"
    start, done, req, grant, rel_me = cmd.start, cmd.done, client.req, client.grant, client.rel
    moves, pads, npz, bad, err = f.moves, f.pads, d.npz, d.bad, d.err
    npadm1, np1 = d.npadm1, d.np1
    rbits, rinsn, c_idx = rerr.bits, rerr.insn, f.index
    phase = vec(count_bits(POST))
    dcnt = vec(log2(OVH + 1) + 1)      # PRE: decode cycles left - 1
    cnt = vec(len(npadm1))             # POST: padding cycles left - 1
    cz = Signal(bool(0))               # cnt == 0 (a register: done comes from registers)

    @always_comb
    def port_out():
        req.next = 0
        done.next = 0
        rbits.next = 0
        rinsn.next = c_idx
        if ((at_req and moves) or phase == REQ) and not bad:
            req.next = 1
        if at_req and (moves or pads):
            rbits.next = err
        if at_req and not moves and not pads:
            done.next = 1
        if phase == HOLD and rel_me and npz:
            done.next = 1
        if phase == POST and cz:
            done.next = 1

    @always_seq(clk.posedge, reset=rst)
    def seq():
        # at_req: the cycle phase is PRE with its count at 0 (a register; OVH >= 2: never right after a start)
        at_req.next = phase == PRE and dcnt == 1 and not start
        if start:
            phase.next = PRE
            dcnt.next = OVH - 1
        else:
            if phase == PRE:
                if at_req:
                    if pads:  # padding rows only: no port transaction, straight to the padding writes
                        phase.next = POST
                        cnt.next = npadm1
                        cz.next = np1
                    elif not moves:
                        phase.next = IDLE
                    elif grant:
                        phase.next = HOLD
                    else:
                        phase.next = REQ
                else:
                    dcnt.next = dcnt - 1
            elif phase == REQ:
                if grant:
                    phase.next = HOLD
            elif phase == HOLD:
                if rel_me:
                    if npz:
                        phase.next = IDLE
                    else:
                        phase.next = POST
                        cnt.next = npadm1
                        cz.next = np1
            elif phase == POST:
                if cz:
                    phase.next = IDLE
                else:
                    cnt.next = cnt - 1
                    cz.next = cnt == 1
            if at_req and (moves or pads) and bad:
                phase.next = IDLE
    return port_out, seq


@block
def dma_read(clk, rst, p: RtlParams, mems, cmd: InsnPort, client: PortClient, beat: BeatBus, rdata, sram: dict,
             dram_bytes, rerr: ErrReport):
    """Read DMA for LOAD instructions of the memory types ``mems``.

    ``cmd.start`` (with the entry ``cmd.insn``) begins a LOAD; ``cmd.done`` is high in its retire
    cycle. ``client``: this master's memory-port client; ``beat``: where the port's current beat
    lies (this master's when ``client.beat``); ``rdata`` the beat's data. ``sram[mem]``: the
    write side of each memory (:func:`vdla_hw.rtl.dma_ports.sram_write`).

    The start cycle only registers the fields (:func:`transfer_latch`); sums, products and the range
    check (vdla_hw.program.check_transfer, :mod:`vdla_hw.rtl.rangechk`) fill the decode cycles
    (:func:`load_decode`). In the earliest request cycle t_s + INSN_OVERHEAD (INSN_OVERHEAD >=
    DECODE_CYCLES) ``rerr.bits`` carries ERROR ``sram_range`` or ``dram_range`` for a failing
    transfer, with ``rerr.insn`` the instruction's index; the request is then never raised (no
    beat moves) and the DMA goes idle (:func:`load_control`). The data and padding walks
    (:mod:`vdla_hw.rtl.dma_walk`) start in that cycle too (their SRAM bases are products of the
    decode pipeline) and feed the SRAM writers (:mod:`vdla_hw.rtl.dma_write`).
    """
    ld = insn_fields(cmd.insn, p, "LOAD")
    f = TransferFields(ld)
    d = LoadDecode(p, mems, f, len(rerr.bits))
    at_req = Signal(bool(0))             # the earliest request cycle (decode over), a register
    pos = DataPos(p, d, max(beats_per_elem(p, p.mems[m]) for m in mems))
    pad = PadWrite(d)
    insts = [transfer_latch(clk, rst, cmd.start, ld, f),
             load_decode(clk, rst, p, mems, f, dram_bytes, d),
             load_control(clk, rst, p, cmd, client, f, d, at_req, rerr),
             data_pos(clk, rst, p, at_req, client.beat, beat.row_last, rdata, d, pos),
             pad_walk(clk, rst, at_req, client.beat, f, d, pad),
             desc_elements(clk, rst, client.desc, f.y_size, f.dram_base, f.x_stride, f.x_size, d.lge)]
    for m, sel in zip(mems, d.sel):
        g = p.mems[m]
        if g.narrow:
            insts.append(narrow_writer(g, p.lgB, sel, client.beat, beat, rdata, pos, pad, sram[m]))
        else:
            insts.append(wide_writer(g, p.lgB, sel, client.beat, rdata, pos, pad, sram[m]))
    return insts
