"""Chrome/Perfetto trace of a simulated run (``chrome://tracing``, ui.perfetto.dev).

One track (thread) per module with one complete event ("X") per instruction, named
"index KIND" with its operands as args; fetch's track shows its memory transactions. Counter
events ("C") give the occupancy of the three command queues and the four token queues.
Timestamps are microseconds at the configured clock; ``args.cycle`` keeps the exact cycle.
"""

from __future__ import annotations

import json
from pathlib import Path

from vdla_hw import asm, isa

TRACKS = {m: i + 1 for i, m in enumerate(isa.MODULES)}


def _counter_events(name: str, pushed: list[int], popped: list[int], us: float) -> list[dict]:
    changes: dict[int, int] = {}
    for t in pushed:
        changes[t] = changes.get(t, 0) + 1
    for t in popped:
        changes[t] = changes.get(t, 0) - 1
    level, events = 0, []
    for t in sorted(changes):
        level += changes[t]
        events.append({"name": name, "ph": "C", "pid": 1, "ts": t * us, "args": {"entries": level}})
    return events


def build(engine, result) -> dict:
    config = engine.config
    us = 1.0 / config.CLOCK_MHZ
    events = [{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": f"VDLA {config.name}"}}]
    for m, tid in TRACKS.items():
        events.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": m}})
    for index, rec in enumerate(result.retire):
        if rec is None:
            continue
        module, start, end = rec
        insn = engine.insns[index]
        events.append({"name": f"{index} {insn.kind}", "cat": insn.kind, "ph": "X", "pid": 1,
                       "tid": TRACKS[module], "ts": start * us, "dur": (end - start) * us,
                       "args": {"index": index, "cycle": start, "cycles": end - start,
                                "insn": asm.format_insn(insn, config)}})
    for grant, end, first, count in engine.f_spans:
        events.append({"name": f"fetch {first}..{first + count - 1}", "cat": "fetch", "ph": "X", "pid": 1,
                       "tid": TRACKS["fetch"], "ts": grant * us, "dur": (end - grant) * us,
                       "args": {"cycle": grant, "cycles": end - grant}})
    for m, mod in engine.mods.items():
        events += _counter_events(f"cmd_{m}", mod.pushed, mod.popped, us)
    for q in engine.tok_push:
        events += _counter_events(f"token_{q}", engine.tok_push[q], engine.tok_pop[q], us)
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"config": config.fingerprint, "cycles": result.cycles}}


def write(path: str | Path, engine, result) -> None:
    Path(path).write_text(json.dumps(build(engine, result)))
