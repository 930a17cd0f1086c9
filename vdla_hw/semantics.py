"""Reference semantics: a plain numpy interpreter that runs a bundle's modules each in program order.

This is the living definition of what a program computes (docs/spec.md section 4). It is short and
slow on purpose; the simulator, the RTL and the board are all checked against it.

Work bounds, both checked from the instructions before anything runs (vdla_hw/work.py):
``max_uops`` bounds the interpreter's steps (an instruction, each of its micro-ops, each DRAM
row it moves: about 28 k per second), ``max_cycles`` the program's serial work (every
instruction's cost under the timing contract, as if nothing overlapped). A program that passes
either is refused naming the first instruction past it (the interpreter's memory does not
depend on loop trip counts).

Token rule: the load, compute and store modules each run their instructions in program order;
an instruction first takes its pops, waiting while a queue it pops is empty, executes, then
makes its pushes. Among the modules that can run, the one whose next instruction is first in
program order goes (:func:`_token_order`), so a program whose tokens are always pushed before
they are popped runs in program order; when every unfinished module waits, the program
deadlocks (an error naming the first waiting instruction). Tokens left at the end are
reported, not an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vdla_hw import alu, isa, limits, program, work
from vdla_hw.alu import wrap32  # the GEMM wraps its sums like the ALU
from vdla_hw.bundle import Bundle
from vdla_hw.config import Config
from vdla_hw.errors import LimitError, ProgramError


@dataclass
class Counters:
    """VTA-style counters: DRAM bytes moved per memory type, micro-ops executed, instructions."""

    load_bytes: dict = field(default_factory=lambda: {m: 0 for m in ("uop", "wgt", "inp", "acc")})
    store_bytes: int = 0
    gemm_uops: int = 0
    alu_uops: int = 0
    insns: dict = field(default_factory=lambda: {k: 0 for k in isa.OPCODES})

    def as_dict(self) -> dict:
        return {"load_bytes": dict(self.load_bytes), "store_bytes": self.store_bytes,
                "gemm_uops": self.gemm_uops, "alu_uops": self.alu_uops, "insns": dict(self.insns)}


@dataclass
class ExecResult:
    dram: np.ndarray
    counters: Counters
    tokens_left: dict
    srams: Srams | None = None  # the SRAMs at FINISH (what the next program of the session starts from)


class Srams:
    """The on-chip buffers, one numpy array per memory type, indexed by element."""

    def __init__(self, config: Config):
        self.uop = np.zeros(config.depth("uop"), dtype=np.uint32)
        self.inp = np.zeros((config.depth("inp"), *config.elem_shape("inp")), dtype=np.int8)
        self.wgt = np.zeros((config.depth("wgt"), *config.elem_shape("wgt")), dtype=np.int8)
        self.acc = np.zeros((config.depth("acc"), *config.elem_shape("acc")), dtype=np.int32)
        self.out = np.zeros((config.depth("out"), *config.elem_shape("out")), dtype=np.int8)

    def of(self, mem: str) -> np.ndarray:
        return getattr(self, mem)


def alu_op(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """One ALU operation on int32 arrays ``a`` (accumulator) and ``b`` (operand): the op's entry
    in the ALU table (vdla_hw/alu.py, docs/spec.md section 4)."""
    return alu.apply(op, a, b)


def execute(bundle: Bundle, max_cycles: int | None = None, max_uops: int | None = None, *,
            srams: Srams | None = None, before=None) -> ExecResult:
    """Run ``bundle`` (the token rule above); returns the final DRAM image, counters and leftover tokens.
    ``max_cycles`` (default ``limits.DEFAULT_MAX_CYCLES``) bounds the serial work, ``max_uops``
    (default ``limits.REFERENCE_MAX_UOPS``) the interpreter's steps (see above). ``srams``: the
    SRAMs at START, updated in place (default zeros: a fresh device; docs/spec.md section 4,
    "SRAM state between programs"); ``before(insn, index, srams)`` is called before each
    instruction executes (the ``--uninit`` check: vdla_hw/sram_state.py)."""
    config = bundle.config
    insns = program.decode_checked(bundle)
    check_work(work.of(insns, config), max_cycles, max_uops)
    dram = bundle.dram.copy()
    srams = Srams(config) if srams is None else srams
    counters = Counters()
    order, tokens = _token_order(insns)
    for index in order:
        insn = insns[index]
        if before is not None:
            before(insn, index, srams)
        counters.insns[insn.kind] += 1
        if insn.kind == "LOAD":
            _load(insn, config, dram, srams, counters, index)
        elif insn.kind == "STORE":
            _store(insn, config, dram, srams, counters, index)
        elif insn.kind in ("GEMM", "ALU"):
            _compute(insn, config, srams, counters, index)
    return ExecResult(dram=dram, counters=counters, tokens_left=tokens, srams=srams)


def _token_order(insns: list) -> tuple[list[int], dict]:
    """(the order the reference runs ``insns`` in, the tokens left in each queue at the end): the load, compute and store modules each take
    their instructions in program order, an instruction waits until every queue it pops holds
    a token, and among the modules able to run the one whose next instruction comes first in
    program order goes (so a program whose pops all find their tokens in program order runs
    in program order). When no module can run before all are done, the program deadlocks: a
    ProgramError naming the first waiting instruction, the queue and the other waits."""
    heads = {m: [i for i, insn in enumerate(insns) if insn.module == m] for m in isa.EXEC_MODULES}
    pos = {m: 0 for m in heads}
    tokens = {q: 0 for q in isa.TOKEN_QUEUES}
    order: list[int] = []
    while len(order) < len(insns):
        waiting = sorted(heads[m][pos[m]] for m in heads if pos[m] < len(heads[m]))
        for index in waiting:
            if all(tokens[q] > 0 for q in isa.pops(insns[index])):
                break
        else:
            return _deadlock(insns, waiting, tokens)
        insn = insns[index]
        for queue in isa.pops(insn):
            tokens[queue] -= 1
        for queue in isa.pushes(insn):
            tokens[queue] += 1
        pos[insn.module] += 1
        order.append(index)
    return order, tokens


def _deadlock(insns: list, waiting: list[int], tokens: dict):
    """Raise the ProgramError of a deadlock: every unfinished module's next instruction pops an
    empty token queue."""
    def empty_pop(index):
        insn = insns[index]
        flag = next(f for f in ("pop_prev", "pop_next") if insn.fields.get(f, 0)
                    and tokens[isa.FLAG_QUEUE[(insn.module, f)]] == 0)
        return insn, flag, isa.FLAG_QUEUE[(insn.module, flag)]
    first, flag, queue = empty_pop(waiting[0])
    others = "".join(f"; instruction {i} ({insns[i].kind}) waits on {empty_pop(i)[2]}" for i in waiting[1:])
    raise ProgramError(waiting[0], first.kind, flag, f"pops the empty {queue} token queue and no module can run "
                       f"to push its token (deadlock: every unfinished module waits{others})")


def check_work(program_work: work.Work, max_cycles: int | None = None, max_uops: int | None = None) -> None:
    """Refuse (LimitError) a program past either bound of the interpreter, before it runs."""
    limit = limits.DEFAULT_MAX_CYCLES if max_cycles is None else max_cycles
    total = 0
    for index, step in enumerate(program_work.steps):
        total += step.cycles
        if total > limit:
            raise LimitError(f"instruction {index} ({step.kind}) brings the program's serial work to {total:,} "
                             f"cycles, past the limit of {limit:,}; raise --max-cycles if it is really that long")
    work.check(program_work, work.reference_units, limits.REFERENCE_MAX_UOPS if max_uops is None else max_uops,
               model="the reference semantics", unit="micro-ops", rate=limits.REFERENCE_UOPS_PER_S,
               option="--max-uops")


def _dram_view(dram: np.ndarray, config: Config, mem: str) -> np.ndarray:
    """The image as an array of whole ``mem`` elements (trailing partial element dropped)."""
    size = config.elem_bytes(mem)
    usable = dram[: dram.size // size * size]
    return usable.view(config.elem_dtype(mem)).reshape(-1, *config.elem_shape(mem))


def _load(insn, config, dram, srams, counters, index):
    program.check_transfer(insn, config, dram.size, index)
    rows, cols = program.footprint(insn)
    if not rows:
        return
    mem, src = insn.mem, _dram_view(dram, config, insn.mem)
    tile = np.zeros((rows, cols, *config.elem_shape(mem)), dtype=config.elem_dtype(mem))
    for r in range(insn.y_size):
        start = insn.dram_base + r * insn.x_stride
        tile[insn.y_pad_top + r, insn.x_pad_left:insn.x_pad_left + insn.x_size] = src[start:start + insn.x_size]
    target = srams.of(mem)
    target[insn.sram_base:insn.sram_base + rows * cols] = tile.reshape(target[:rows * cols].shape)
    counters.load_bytes[mem] += insn.y_size * insn.x_size * config.elem_bytes(mem)


def _store(insn, config, dram, srams, counters, index):
    program.check_transfer(insn, config, dram.size, index)
    if not program.moves_data(insn):
        return
    dst = _dram_view(dram, config, "out")
    for r in range(insn.y_size):
        start = insn.dram_base + r * insn.x_stride
        first = insn.sram_base + r * insn.x_size
        dst[start:start + insn.x_size] = srams.out[first:first + insn.x_size]
    counters.store_bytes += insn.y_size * insn.x_size * config.elem_bytes("out")


def _compute(insn, config, srams, counters, index):
    program.check_uop_range(insn, config, index)
    uops = isa.decode_uops(srams.uop[insn.uop_bgn:insn.uop_end], config)
    program.check_loop_ranges(insn, uops, config, index)
    if len(uops) == 0:
        return  # an empty uop range: the loops do nothing (and cost nothing to skip)
    op = isa.ALU_OPS[insn.alu_opcode] if insn.kind == "ALU" else None
    for i in range(insn.iter_out):
        for j in range(insn.iter_in):
            for dst0, src0, wgt0 in uops:
                dst = dst0 + i * insn.dst_factor_out + j * insn.dst_factor_in
                src = src0 + i * insn.src_factor_out + j * insn.src_factor_in
                if insn.kind == "GEMM" and insn.reset:
                    srams.acc[dst] = 0
                elif insn.kind == "GEMM":
                    w = wgt0 + i * insn.wgt_factor_out + j * insn.wgt_factor_in
                    product = srams.inp[src].astype(np.int64) @ srams.wgt[w].astype(np.int64).T
                    srams.acc[dst] = wrap32(srams.acc[dst].astype(np.int64) + product)
                else:
                    operand = np.full_like(srams.acc[dst], insn.imm) if insn.use_imm else srams.acc[src]
                    srams.acc[dst] = alu_op(op, srams.acc[dst], operand)
                srams.out[dst] = srams.acc[dst].astype(np.int8)  # low 8 bits, two's complement
                if insn.kind == "GEMM":
                    counters.gemm_uops += 1
                else:
                    counters.alu_uops += 1
