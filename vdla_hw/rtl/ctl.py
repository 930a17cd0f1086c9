"""The instruction control shared by load, compute and store (timing contract, "Modules"):
take the head of the command queue when free, wait until every token it pops is visible,
start (pop), run until the datapath says ``done``, retire (push) and take the next one in the
same cycle."""

from __future__ import annotations

from myhdl import Signal, always_comb, always_seq, block, intbv

from vdla_hw.rtl.decode import insn_fields
from vdla_hw.rtl.params import RtlParams


@block
def exec_ctl(clk, rst, p: RtlParams, avail, head, pop_cmd, tok_prev_ok, tok_next_ok, start, sinsn, done,
             pop_prev, pop_next, push_prev, push_next, ret_valid, ret_index, cur_opcode, active, tstall):
    """``head``/``sinsn``: command-queue entries {index, instruction} (vdla_hw.rtl.decode). ``tok_prev_ok`` /
    ``tok_next_ok``: a token is visible in the queue the pop_prev / pop_next flag pops (tie
    high for a flag the module cannot use). ``start`` is high in the cycle the instruction
    starts, with ``sinsn`` the starting instruction; ``done`` (from the datapath) in its retire
    cycle. Counters: ``active`` in the cycles [start, retire) of an instruction, ``tstall`` in
    the cycles [take, start) (waiting for tokens)."""
    busy = Signal(bool(0))
    running = Signal(bool(0))
    cur = Signal(intbv(0)[len(head):])
    free = Signal(bool(0))
    take = Signal(bool(0))
    go = Signal(bool(0))
    hd, sd, cd = (insn_fields(x, p, "FINISH") for x in (head, sinsn, cur))   # the header fields

    @always_comb
    def comb():
        free.next = not busy or done
        take.next = (not busy or done) and avail

    @always_comb
    def comb2():
        pop_cmd.next = take
        if take:
            sinsn.next = head
            go.next = (not hd.pop_prev or tok_prev_ok) and (not hd.pop_next or tok_next_ok)
        else:
            sinsn.next = cur
            go.next = busy and not running and (not cd.pop_prev or tok_prev_ok) and (not cd.pop_next or tok_next_ok)

    @always_comb
    def comb3():
        start.next = go
        pop_prev.next = go and sd.pop_prev
        pop_next.next = go and sd.pop_next
        push_prev.next = done and cd.push_prev
        push_next.next = done and cd.push_next
        ret_valid.next = done
        ret_index.next = cd.index
        cur_opcode.next = cd.opcode
        active.next = go or (running and not done)
        tstall.next = (take or (busy and not running)) and not go

    @always_seq(clk.posedge, reset=rst)
    def seq():
        if take:
            cur.next = head
            busy.next = 1
        elif done:
            busy.next = 0
        if go:
            running.next = 1
        elif done or take:
            running.next = 0
    return comb, comb2, comb3, seq
