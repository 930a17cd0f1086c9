"""The core's queues and instruction control (docs/rtl.md, "Blocks"): the three command queues
fetch fills, the four dependency-token FIFOs (``vdla_hw.isa.FLAG_QUEUE``) and each execution
module's :func:`vdla_hw.rtl.ctl.exec_ctl` wired to them, as named interfaces instead of
positional lists (:class:`vdla_hw.rtl.ctl.CmdQueue`, :class:`vdla_hw.rtl.ctl.ModuleCtl`,
:class:`TokenQueue`)."""

from __future__ import annotations

from myhdl import Signal, block

from vdla_hw import isa
from vdla_hw.isa import FLAG_QUEUE
from vdla_hw.rtl.ctl import exec_ctl
from vdla_hw.rtl.params import RtlParams
from vdla_hw.rtl.prims import cmd_queue, token_queue, wire

EXEC = isa.EXEC_MODULES                 # the modules with a command queue and an exec_ctl
TOKEN_QUEUES = isa.TOKEN_QUEUES
FLAGS = isa.FLAGS


class TokenQueue:
    """One dependency-token FIFO: ``push``, ``pop``, ``avail`` (a token is visible) and
    ``over`` (a push would overflow it: token_overflow)."""

    def __init__(self):
        self.push, self.pop, self.avail, self.over = (Signal(bool(0)) for _ in range(4))


def token_queue_of(tq: dict, module: str, flag: str):
    """The token FIFO ``module``'s ``flag`` pops or pushes, or None if the module cannot."""
    key = (module, flag)
    return tq[FLAG_QUEUE[key]] if key in FLAG_QUEUE else None


@block
def queues(clk, rst, p: RtlParams, qdata, q: dict, tq: dict):
    """The command queues ``q`` (module -> :class:`vdla_hw.rtl.ctl.CmdQueue`; fetch pushes ``qdata``) and the
    token FIFOs ``tq`` (name -> :class:`TokenQueue`), with the contract's depths and latency."""
    c = p.config
    insts = [cmd_queue(clk, rst, q[m].push, qdata, q[m].room, q[m].pop, q[m].avail, q[m].head, c.CMD_QUEUE_DEPTH,
                       c.QUEUE_LATENCY) for m in EXEC]
    insts += [token_queue(clk, rst, tq[n].push, tq[n].pop, tq[n].avail, tq[n].over, c.TOKEN_QUEUE_DEPTH,
                          c.QUEUE_LATENCY) for n in TOKEN_QUEUES]
    return insts


@block
def module_ctls(clk, rst, p: RtlParams, q: dict, tq: dict, ctl: dict):
    """Each module's exec_ctl on its command queue, seeing the tokens of the FIFOs its pop flags
    name (tied high where it has none), and its token strobes driving those FIFOs."""
    one = Signal(bool(1))
    insts = []
    for m in EXEC:
        prev_q, next_q = token_queue_of(tq, m, "pop_prev"), token_queue_of(tq, m, "pop_next")
        insts.append(exec_ctl(clk, rst, p, q[m], prev_q.avail if prev_q else one, next_q.avail if next_q else one,
                              ctl[m]))
    for m in EXEC:
        for flag in FLAGS:
            t = token_queue_of(tq, m, flag)
            if t is not None:
                insts.append(wire(getattr(ctl[m], flag), t.pop if flag.startswith("pop") else t.push))
    return insts
