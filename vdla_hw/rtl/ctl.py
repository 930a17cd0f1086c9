"""The instruction control shared by load, compute and store (timing contract, "Modules"):
take the head of the command queue when free, wait until every token it pops is visible,
start (pop), run until the datapath says ``done``, retire (push) and take the next one in the
same cycle."""

from __future__ import annotations

from myhdl import Signal, always_comb, always_seq, block, intbv

from vdla_hw import isa
from vdla_hw.rtl.decode import ENTRY_BITS, insn_fields
from vdla_hw.rtl.dma_ports import InsnPort
from vdla_hw.rtl.params import INDEX_BITS, RtlParams


class CmdQueue:
    """One command queue: fetch's side ``push`` / ``room``, the module's ``pop`` / ``avail`` /
    ``head`` (the entry {index, instruction} at the head)."""

    def __init__(self):
        self.push, self.room, self.pop, self.avail = (Signal(bool(0)) for _ in range(4))
        self.head = Signal(intbv(0)[ENTRY_BITS:])


class ModuleCtl:
    """What one module's instruction control gives its datapath and the core (exec_ctl's
    outputs): ``start`` / ``sinsn`` / ``done`` (also as the datapath's :class:`InsnPort`
    ``cmd``; ``done`` comes from the datapath), the token strobes ``pop_prev`` ... ``push_next``
    of the starting and retiring instructions, the retire ``ret_valid`` with ``ret_index``, the
    running ``opcode``, and for the counters ``active`` ([start, retire)) and ``tstall``
    ([take, start))."""

    def __init__(self, p: RtlParams):
        self.start, self.done = Signal(bool(0)), Signal(bool(0))
        self.sinsn = Signal(intbv(0)[ENTRY_BITS:])
        self.cmd = InsnPort(self.start, self.sinsn, self.done)
        self.pop_prev, self.pop_next, self.push_prev, self.push_next = (Signal(bool(0)) for _ in range(4))
        self.ret_valid = Signal(bool(0))
        self.ret_index = Signal(intbv(0)[INDEX_BITS:])
        self.opcode = Signal(intbv(0)[isa.layout("FINISH", p.config)["opcode"].width:])
        self.active, self.tstall = Signal(bool(0)), Signal(bool(0))


@block
def exec_ctl(clk, rst, p: RtlParams, cq: CmdQueue, tok_prev_ok, tok_next_ok, m: ModuleCtl):
    """The module's command queue ``cq`` (entries {index, instruction}, vdla_hw.rtl.decode);
    ``tok_prev_ok`` / ``tok_next_ok``: a token is visible in the queue the pop_prev / pop_next
    flag pops (tie high for a flag the module cannot use). ``m.start`` is high in the cycle the
    instruction starts, with ``m.sinsn`` the starting instruction; ``m.done`` (from the
    datapath) in its retire cycle."""
    avail, head, pop_cmd = cq.avail, cq.head, cq.pop
    start, sinsn, done = m.start, m.sinsn, m.done
    pop_prev, pop_next, push_prev, push_next = m.pop_prev, m.pop_next, m.push_prev, m.push_next
    ret_valid, ret_index, cur_opcode, active, tstall = m.ret_valid, m.ret_index, m.opcode, m.active, m.tstall
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
