"""Latency hiding: virtual threads and dependency tokens, as an ordered list of passes.

:data:`PASSES` is the pipeline, each a function from one program form to the next:

1. ``interleave``    per-thread segment lists -> one annotated stream (threads.py)
2. ``add_finish``    append FINISH, which waits for every module
3. ``insert_tokens`` annotated stream -> stream with explicit push/pop markers (tokens.py)
4. ``fold_tokens``   markers -> flags on neighbouring instructions or no-ops (tokens.py)

:func:`hide_latency` runs them. It works on any annotated instruction sequence: a producer
that wants no virtual threads passes one thread.
"""

from __future__ import annotations

from compiler.annotated import Op, Segment
from compiler.latency_hiding.threads import interleave, partition, split
from compiler.latency_hiding.tokens import check_tokens, fold_tokens, insert_tokens
from vdla_hw import isa
from vdla_hw.config import Config


def add_finish(ops: list[Op]) -> list[Op]:
    """Append FINISH (it pops the last store's and load's tokens in insert_tokens)."""
    if ops and ops[-1].insn.kind == "FINISH":
        return ops
    return [*ops, Op(isa.Insn("FINISH"), tag="finish")]


PASSES = (
    ("interleave", lambda prog, config: interleave(prog)),
    ("add_finish", lambda prog, config: add_finish(prog)),
    ("insert_tokens", insert_tokens),
    ("fold_tokens", lambda prog, config: fold_tokens(prog)),
)


def hide_latency(threads: list[list[Segment]], config: Config) -> list[isa.Insn]:
    """Run :data:`PASSES` on per-thread segments; returns the final instruction stream."""
    program = threads
    for _, run in PASSES:
        program = run(program, config)
    check_tokens(program, config)
    return program


__all__ = ["PASSES", "hide_latency", "interleave", "partition", "split", "insert_tokens", "fold_tokens",
           "check_tokens", "add_finish"]
