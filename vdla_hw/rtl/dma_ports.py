"""Named interfaces of the data movers (fetch, the read DMA of load/compute, store) and of their
blocks (docs/rtl.md, "Blocks"): small groups of signals passed whole instead of positional lists,
like :class:`vdla_hw.rtl.compute_ports.WritePort` and :class:`vdla_hw.rtl.axi.AxiMaster`.

A data mover also takes its memory-port client (:class:`vdla_hw.rtl.memport.PortClient`: req,
desc, grant, rel, beat) and the port's :class:`vdla_hw.rtl.memport.BeatBus` (where the current
beat lies) as they are. Every width comes from the configuration (:class:`RtlParams`), the ISA
layout (:mod:`vdla_hw.rtl.decode`) or the register map."""

from __future__ import annotations

from myhdl import Signal, intbv

from vdla_hw.rtl.compute_ports import ReadPort, WritePort
from vdla_hw.rtl.params import MemGeom


class InsnPort:
    """A LOAD/STORE datapath's side of its module's instruction control (``exec_ctl``):
    ``start`` (the start cycle), ``insn`` (the command-queue entry, {index, instruction}, held
    from the start) and ``done`` (high in the retire cycle)."""

    def __init__(self, start, insn, done):
        self.start, self.insn, self.done = start, insn, done


class ErrReport:
    """An ERROR report: ``bits`` (vdla_hw.regmap.ERROR_BITS, 0 when none) and ``insn``, the index
    of the instruction it names."""

    def __init__(self, bits, insn):
        self.bits, self.insn = bits, insn


class QueuePush:
    """Fetch's side of one command queue: ``room`` in, ``push`` out (the entry is fetch's
    ``qdata``, shared by the three queues)."""

    def __init__(self, room, push):
        self.room, self.push = room, push


class WriteBeat:
    """The store's W beat: ``data`` (one beat) and its byte strobes ``strb``."""

    def __init__(self, data, strb):
        self.data, self.strb = data, strb


def sram_write(g: MemGeom, ports):
    """A memory's write side from its signal tuples (vdla_hw.rtl.top): one element
    :class:`WritePort` for a wide memory, or the two banks' ports of a narrow one (``we`` a
    lane mask, ``data`` a line of ``lanes`` elements)."""
    return tuple(WritePort(*bank) for bank in ports) if g.narrow else WritePort(*ports)


def sram_read(g: MemGeom, ports):
    """A memory's read side, like :func:`sram_write`: one :class:`ReadPort`, or one per bank."""
    return tuple(ReadPort(*bank) for bank in ports) if g.narrow else ReadPort(*ports)


def vec(width: int) -> Signal:
    """An unsigned register or wire of ``width`` bits."""
    return Signal(intbv(0)[width:])
