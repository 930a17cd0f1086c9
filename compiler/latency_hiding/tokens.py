"""Dependency tokens: derive them from SRAM accesses, then fold them onto instructions.

The modules (load, compute, store) each run their instructions in program order and meet
only through the four token FIFOs (docs/spec.md section 1). Given an annotated stream in program
order (the order of the reference semantics), :func:`insert_tokens` finds, for every
instruction ``j`` and each neighbouring module ``A``, the latest earlier instruction ``i`` of
``A`` that ``j`` conflicts with:

- RAW: ``j`` reads what ``i`` wrote (load -> compute: tiles; compute -> store: outputs);
- WAR: ``j`` writes what ``i`` read (compute -> load: a buffer about to be reloaded, the
  loop-carried pair of double buffering; store -> compute: an output region about to be
  rewritten);
- WAW: ``j`` writes what ``i`` wrote.

Token FIFOs are anonymous, so the k-th pop on a queue takes the k-th push: a pop is added only
when ``i`` is later than everything the consumer already waited for, which keeps pushes and pops
in the same order on both sides, at most one of each per instruction and queue. Each push
precedes its pop in program order, so the stream runs under the reference token rule, and no
initial credits are needed: a buffer's first use waits for nothing. FINISH waits for the last
instruction of every other module.

:func:`fold_tokens` then turns the explicit push/pop markers into instruction flags: a pop onto
the next instruction of its module, a push onto the previous one; where that instruction
cannot carry the flag (already set, or FINISH pushing) a flag-only no-op is emitted (a LOAD or
STORE with ``x_size = 0``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from compiler.annotated import Op
from vdla_hw import isa
from vdla_hw.config import MEM_TYPES, Config
from vdla_hw.errors import VdlaError

# Neighbouring modules and the queue from producer to consumer (docs/spec.md section 1).
QUEUE = {ends: queue for queue, ends in isa.TOKEN_ENDS.items()}
NEIGHBOURS = {m: tuple(p for p in isa.EXEC_MODULES if (p, m) in QUEUE) for m in isa.EXEC_MODULES}
# (module, queue) -> the flag that module sets to pop or push that queue.
FLAG = {(module, queue): flag for (module, flag), queue in isa.FLAG_QUEUE.items()}
EXECUTING = isa.EXEC_MODULES


@dataclass(frozen=True)
class Token:
    """An explicit token operation of ``module`` on ``queue``: ``action`` is push or pop."""

    action: str
    queue: str
    module: str


def dependencies(ops: list[Op], config: Config) -> list[tuple[int, int, str]]:
    """(producer index, consumer index, queue) edges, non-crossing per queue, in consumer order."""
    depth = {mem: config.depth(mem) for mem in MEM_TYPES}
    last_w = {m: {mem: np.full(depth[mem], -1, dtype=np.int64) for mem in MEM_TYPES} for m in EXECUTING}
    last_r = {m: {mem: np.full(depth[mem], -1, dtype=np.int64) for mem in MEM_TYPES} for m in EXECUTING}
    last_index = {m: -1 for m in EXECUTING}
    synced = {q: -1 for q in QUEUE.values()}
    edges = []
    for j, op in enumerate(ops):
        consumer = op.module
        for producer in NEIGHBOURS[consumer]:
            if op.insn.kind == "FINISH":
                need = last_index[producer]
            else:
                need = -1
                for mem, lo, hi in op.reads:
                    if hi > lo:
                        need = max(need, int(last_w[producer][mem][lo:hi].max()))
                for mem, lo, hi in op.writes:
                    if hi > lo:
                        need = max(need, int(last_w[producer][mem][lo:hi].max()),
                                   int(last_r[producer][mem][lo:hi].max()))
            queue = QUEUE[(producer, consumer)]
            if need > synced[queue]:
                edges.append((need, j, queue))
                synced[queue] = need
        for mem, lo, hi in op.reads:
            _check_range(op, j, mem, lo, hi, depth)
            last_r[consumer][mem][lo:hi] = j
        for mem, lo, hi in op.writes:
            _check_range(op, j, mem, lo, hi, depth)
            last_w[consumer][mem][lo:hi] = j
        last_index[consumer] = j
    return edges


def _check_range(op: Op, index: int, mem: str, lo: int, hi: int, depth: dict) -> None:
    if not 0 <= lo <= hi <= depth[mem]:
        raise VdlaError(f"instruction {index} ({op.insn.kind} {op.tag}): {mem} range {lo}..{hi} "
                        f"lies outside the {mem} SRAM (depth {depth[mem]})")


def insert_tokens(ops: list[Op], config: Config) -> list[Op | Token]:
    """Place a push after each producer and a pop before each consumer of a dependency."""
    if not ops or ops[-1].insn.kind != "FINISH":
        raise VdlaError("insert_tokens: the stream must end with FINISH")
    after: dict[int, list[Token]] = {}
    before: dict[int, list[Token]] = {}
    for producer, consumer, queue in dependencies(ops, config):
        after.setdefault(producer, []).append(Token("push", queue, ops[producer].module))
        before.setdefault(consumer, []).append(Token("pop", queue, ops[consumer].module))
    items: list[Op | Token] = []
    for index, op in enumerate(ops):
        items.extend(before.get(index, ()))
        items.append(op)
        items.extend(after.get(index, ()))
    return items


def noop(module: str) -> isa.Insn:
    """A flag carrier of ``module`` that moves nothing (x_size = 0)."""
    if module == "load":
        return isa.Insn("LOAD", memory_type=MEM_TYPES.index("inp"), y_size=1, x_size=0)
    if module == "store":
        return isa.Insn("STORE", memory_type=MEM_TYPES.index("out"), y_size=1, x_size=0)
    return isa.Insn("LOAD", memory_type=MEM_TYPES.index("uop"), y_size=1, x_size=0)


def fold_tokens(items: list[Op | Token]) -> list[isa.Insn]:
    """Turn token markers into flags on neighbouring instructions of the same module, or no-ops."""
    out: list[isa.Insn] = []
    last_of: dict[str, int] = {}        # module -> index in ``out`` of its latest instruction
    pending: dict[str, list[Token]] = {}  # module -> pops waiting for its next instruction
    for item in items:
        if isinstance(item, Token):
            flag = FLAG[(item.module, item.queue)]
            if item.action == "pop":
                pending.setdefault(item.module, []).append(item)
                continue
            where = last_of.get(item.module)
            if where is not None and out[where].kind != "FINISH" and not out[where].fields.get(flag, 0):
                out[where] = out[where].replace(**{flag: 1})
            else:
                out.append(noop(item.module).replace(**{flag: 1}))
                last_of[item.module] = len(out) - 1
            continue
        insn = item.insn
        for token in pending.pop(item.module, []):
            flag = FLAG[(token.module, token.queue)]
            if insn.fields.get(flag, 0):
                out.append(noop(token.module).replace(**{flag: 1}))
            else:
                insn = insn.replace(**{flag: 1})
        out.append(insn)
        last_of[item.module] = len(out) - 1
    for module, tokens in pending.items():
        if tokens:
            raise VdlaError(f"fold_tokens: {len(tokens)} pop(s) of the {module} module have no instruction "
                            "after them")
    return out


def check_tokens(insns: list[isa.Insn], config: Config) -> dict:
    """Run the token rule in program order; raise on a pop of an empty queue or a FIFO deeper
    than TOKEN_QUEUE_DEPTH; return the tokens left (all zero for a balanced program)."""
    count = {q: 0 for q in isa.TOKEN_QUEUES}
    for index, insn in enumerate(insns):
        for queue in isa.pops(insn):
            if count[queue] == 0:
                raise VdlaError(f"instruction {index} ({insn.kind}) pops the empty {queue} queue")
            count[queue] -= 1
        for queue in isa.pushes(insn):
            count[queue] += 1
            if count[queue] > config.TOKEN_QUEUE_DEPTH:
                raise VdlaError(f"instruction {index} ({insn.kind}): {count[queue]} tokens in {queue} exceed "
                                f"TOKEN_QUEUE_DEPTH {config.TOKEN_QUEUE_DEPTH}")
    return count
