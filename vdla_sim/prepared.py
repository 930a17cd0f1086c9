"""What the engine derives from a program before it runs it, computed once per bundle.

Decoding the stream, its static checks (``program.decode_checked``), every instruction's
timing cost (``timing.exec_cost``), the work count (``work.of``) and the routing tables of the
event loop are a pure function of the bundle's instruction bytes, its configuration and its
DRAM size (the transfer range checks). :func:`prepare` memoizes them on the bundle object
itself (no global cache), keyed on exactly those inputs, so a bundle whose image was changed
in place (or whose configuration was replaced) is prepared again; a bundle simulated several
times (benchmarks, the timing-only run next to the data run) decodes and checks once. Errors
are not memoized: a bad program raises on every call, as before.

Everything here is read-only after it is built (``Insn`` is immutable, the tables are tuples),
so runs sharing it cannot affect each other, except ``plans``: a cache of pure values (GEMM
plans and ALU waves keyed by loop fields and uop contents), so a run finds there what it would
have computed.
"""

from __future__ import annotations

from vdla_hw import isa, program, timing, work
from vdla_hw.bundle import Bundle
from vdla_hw.config import Config
from vdla_sim import cost
from vdla_sim.datapath import PlanCache

EXEC_MODULES = isa.EXEC_MODULES                 # load, compute, store (fetch routes)
QUEUE_NUMBER = {q: k for k, q in enumerate(isa.TOKEN_QUEUES)}  # a token queue's number
_ATTRIBUTE = "_vdla_sim_prepared"  # the bundle attribute holding its _Memo


class Prepared:
    """A program's decoded instructions and per-instruction tables, in program order.

    ``insns``: the checked instructions; ``costs``: their ``timing.exec_cost``; ``work``: their
    ``work.Work``; ``sim_units``: the simulator work of the whole program with every GEMM
    at its most expensive plan (``cost.worst_units``, counted once); ``mac_uops``: uops of its non-reset GEMMs; ``cmd``: module -> the instruction indices routed to it;
    ``module_of``: each instruction's module; ``pops`` / ``pushes``: the token queue numbers
    (``isa.TOKEN_QUEUES``) each instruction pops / pushes; ``runs``: :func:`load_run` of each
    instruction; ``plans``: the loop plans of its data runs (``datapath.PlanCache``)."""

    __slots__ = ("insns", "costs", "work", "sim_units", "mac_uops", "cmd", "module_of", "pops", "pushes", "runs", "plans")

    def __init__(self, insns: list[isa.Insn], config: Config):
        self.insns = insns
        self.costs = tuple(timing.exec_cost(config, insn) for insn in insns)
        self.work = work.of(insns, config, self.costs)
        self.sim_units = cost.worst_units(insns, config)
        self.mac_uops = sum(timing.uop_count(i) for i in insns if i.kind == "GEMM" and not i.reset)
        self.module_of = tuple(insn.module for insn in insns)
        self.cmd = {m: tuple(i for i, mod in enumerate(self.module_of) if mod == m) for m in EXEC_MODULES}
        pops, pushes, flags = [], [], {}
        for insn in insns:  # one pair of tuples per flag pattern, shared by its instructions
            key = (insn.module, insn.pop_prev, insn.pop_next, insn.push_prev, insn.push_next)
            both = flags.get(key)
            if both is None:
                both = flags[key] = (tuple(QUEUE_NUMBER[q] for q in isa.pops(insn)),
                                     tuple(QUEUE_NUMBER[q] for q in isa.pushes(insn)))
            pops.append(both[0])
            pushes.append(both[1])
        self.pops, self.pushes = tuple(pops), tuple(pushes)
        self.runs = tuple(load_run(insn, config) for insn in insns)
        self.plans = PlanCache(config)


def load_run(insn: isa.Insn, config: Config) -> tuple[str, int, int, int, int] | None:
    """A LOAD that copies one contiguous run of DRAM elements into consecutive SRAM elements
    (no padding, one row or rows without gaps; not into the uop SRAM, whose LOAD also decodes
    the uops) as (mem, first SRAM element, elements, first SRAM byte, first DRAM byte); None for
    any other instruction. Most LOADs of a convolution (its weights) are such runs."""
    if insn.kind != "LOAD" or insn.mem in ("uop", None):
        return None
    y, x = insn.y_size, insn.x_size
    if not (x and y) or insn.y_pad_top or insn.y_pad_bottom or insn.x_pad_left or insn.x_pad_right \
            or not (y == 1 or insn.x_stride == x):
        return None
    size = config.elem_bytes(insn.mem)
    return insn.mem, insn.sram_base, y * x, insn.sram_base * size, insn.dram_base * size


class _Memo:
    """A bundle's memo: the key it was prepared under and the result. It pickles (and copies)
    as an empty memo, so a saved or shipped bundle never carries simulator state."""

    __slots__ = ("key", "prepared")

    def __init__(self, key: tuple | None = None, prepared: Prepared | None = None):
        self.key, self.prepared = key, prepared

    def __reduce__(self):
        return _Memo, ()


def prepare(bundle: Bundle) -> Prepared:
    """The :class:`Prepared` program of ``bundle``, built on the first call and reused while
    the bundle's configuration, instruction bytes and DRAM size are unchanged."""
    key = (bundle.config, bundle.dram.size, bundle.insn_bytes)
    memo = bundle.__dict__.get(_ATTRIBUTE)
    if memo is not None and memo.key == key:
        return memo.prepared
    prepared = Prepared(program.decode_checked(bundle), bundle.config)
    bundle.__dict__[_ATTRIBUTE] = _Memo(key, prepared)
    return prepared
