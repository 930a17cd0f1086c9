"""The code-level analysis of one kernel on one CPU, and its on-disk cache.

``analyse(spec, cpu)`` compiles the kernel for the CPU (:mod:`.target`), counts how often each
basic block runs and simulates its caches (:mod:`.profile`), times every machine basic block
with llvm-mca (:mod:`.mca`) and returns a :class:`KernelAnalysis`: per block its executions and
cycles per execution, per loop its iterations and entries, and the cache counters. Turning
that into seconds is :mod:`.model`'s job.

Machine blocks that code generation made without an IR block of their own (split edges,
merged tails, new preheaders) have no counter; their executions are estimated from the flow
around them (at most what their predecessors run, at most what their successors run) and the
share of cycles in such blocks is reported.

Analyses are cached in ``$VDLA_CACHE_DIR/cpu-cost`` (default ``~/.cache/vdla/cpu-cost``) under
a key that hashes everything the result depends on: the spec, the source of the kernel
generators and of this analysis, the llvmlite and LLVM versions, ``llvm-mca --version`` and the
CPU's data file. A stale entry can therefore never be read; an unreadable one is recomputed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

FORMAT = 1
CACHE_ENV = "VDLA_CACHE_DIR"


@dataclass(frozen=True)
class BlockCost:
    number: int
    ir_block: str | None
    instructions: int
    executions: int
    estimated: bool     # executions inferred from the flow around the block
    cycles: float       # per execution
    bound: str          # schedule, neon or load/store
    loops: tuple        # headers of the loops it sits in, innermost first


@dataclass(frozen=True)
class KernelAnalysis:
    symbol: str
    family: str
    cpu: str
    blocks: tuple
    loop_entries: dict          # header block number (as str) -> times the loop was entered
    accesses: int
    l1_misses: int
    l2_misses: int
    l2_store_misses: int
    stand_ins: dict             # instruction -> the move llvm-mca scheduled instead

    @property
    def core_cycles(self) -> float:
        return sum(b.executions * b.cycles for b in self.blocks)

    @property
    def estimated_cycles(self) -> float:
        return sum(b.executions * b.cycles for b in self.blocks if b.estimated)

    def loops(self) -> list[dict]:
        """Per loop: header, IR block, iterations (header executions), entries, cycles per
        iteration (its blocks' cycles divided by its iterations) and total cycles."""
        rows = []
        for header, entries in sorted(self.loop_entries.items(), key=lambda kv: int(kv[0])):
            number = int(header)
            members = [b for b in self.blocks if number in b.loops]
            head = next(b for b in self.blocks if b.number == number)
            total = sum(b.executions * b.cycles for b in members)
            rows.append({"header": number, "ir_block": head.ir_block, "depth": len(head.loops),
                         "iterations": head.executions, "entries": entries,
                         "cycles_per_iteration": total / head.executions if head.executions else 0.0,
                         "cycles": total})
        return rows

    def to_json(self) -> dict:
        return {"format": FORMAT, **dataclasses.asdict(self)}

    @classmethod
    def from_json(cls, data: dict) -> "KernelAnalysis":
        if data.get("format") != FORMAT:
            raise ValueError("old analysis format")
        fields = {k: v for k, v in data.items() if k != "format"}
        fields["blocks"] = tuple(BlockCost(**{**b, "loops": tuple(b["loops"])}) for b in fields["blocks"])
        return cls(**fields)


def estimate_counts(blocks, known: dict[int, int]) -> tuple[dict[int, int], set[int]]:
    """Executions of every MBB: ``known`` ones as given, the others from the flow around them."""
    counts = dict(known)
    unknown = {b.number for b in blocks} - set(known)
    preds = {b.number: [p.number for p in blocks if b.number in p.successors] for b in blocks}
    succs = {b.number: sorted(b.successors) for b in blocks}
    for _ in range(len(unknown) + 1):
        changed = False
        for number in sorted(unknown):
            inflow = [counts[p] for p in preds[number] if p in counts]
            outflow = [counts[s] for s in succs[number] if s in counts]
            bounds = [sum(side) for side in (inflow, outflow) if side]
            if bounds and counts.get(number) != min(bounds):
                counts[number] = min(bounds)
                changed = True
        if not changed:
            break
    return {n: counts.get(n, 0) for n in (b.number for b in blocks)}, unknown


def analyse_uncached(spec, cpu) -> KernelAnalysis:
    from . import blocks as machine_blocks
    from .mca import time_blocks
    from .profile import run_profile
    from .target import generate

    code = generate(spec, cpu)
    profile = run_profile(code.ir_text, spec, cpu)
    mbbs = machine_blocks.parse_function(code.asm_text, spec.symbol, cpu.codegen.triple)
    known = {b.number: profile.counts[b.ir_block] for b in mbbs if b.ir_block in profile.counts}
    counts, estimated = estimate_counts(mbbs, known)
    timings, stand_ins = time_blocks({str(b.number): b.instructions for b in mbbs}, cpu)
    entries = machine_blocks.loop_entries(mbbs, counts)
    costs = tuple(BlockCost(b.number, b.ir_block, len(b.instructions), counts[b.number], b.number in estimated,
                            timings[str(b.number)].cycles, timings[str(b.number)].bound, tuple(b.loops))
                  for b in mbbs)
    return KernelAnalysis(spec.symbol, spec.family, cpu.name, costs, {str(k): v for k, v in entries.items()},
                          profile.accesses, profile.l1_misses, profile.l2_misses, profile.l2_store_misses,
                          stand_ins)


# --- cache ------------------------------------------------------------------------------------
_memo: dict[str, KernelAnalysis] = {}
_lock = threading.Lock()
_sources = None


def _source_digest() -> str:
    """Hash of the kernel generators and of this cost model (every .py they are made of)."""
    global _sources
    if _sources is None:
        root = Path(__file__).resolve().parent.parent
        digest = hashlib.sha256()
        for path in sorted(list(root.glob("*.py")) + list((root / "cost").glob("*.py"))):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
        _sources = digest.hexdigest()
    return _sources


def cache_key(spec, cpu) -> str:
    import llvmlite
    import llvmlite.binding as llvm

    from .mca import version

    parts = [f"format {FORMAT}", type(spec).__name__, spec.describe(), _source_digest(),
             f"llvmlite {llvmlite.__version__} llvm {llvm.llvm_version_info}", version(), cpu.fingerprint()]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def cache_dir() -> Path:
    base = os.environ.get(CACHE_ENV) or os.path.join(os.environ.get("XDG_CACHE_HOME") or
                                                     os.path.join(Path.home(), ".cache"), "vdla")
    return Path(base) / "cpu-cost"


def _path(key: str, cpu) -> Path:
    return cache_dir() / cpu.name / key[:2] / f"{key}.json"


def is_cached(spec, cpu) -> bool:
    """Whether the analysis is in memory or on disk (no work needed)."""
    key = cache_key(spec, cpu)
    return key in _memo or _path(key, cpu).is_file()


def remember(spec, cpu, result: KernelAnalysis) -> KernelAnalysis:
    """Keep an analysis made elsewhere (a worker process, which wrote the disk cache)."""
    with _lock:
        _memo[cache_key(spec, cpu)] = result
    return result


def analyse(spec, cpu) -> KernelAnalysis:
    """The analysis of ``spec`` on ``cpu``, from the in-process memo, the disk cache or fresh."""
    key = cache_key(spec, cpu)
    with _lock:
        if key in _memo:
            return _memo[key]
    path = _path(key, cpu)
    result = None
    try:
        result = KernelAnalysis.from_json(json.loads(path.read_text()))
    except (OSError, ValueError, TypeError, KeyError):
        result = None
    if result is None:
        result = analyse_uncached(spec, cpu)
        _write(path, result)
    with _lock:
        _memo[key] = result
    return result


def _write(path: Path, result: KernelAnalysis) -> None:
    """Atomic write (a concurrent reader sees the old file or the new one); a read-only or full
    cache directory only costs the next run the analysis again."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as fh:
            json.dump(result.to_json(), fh)
        os.replace(fh.name, path)
    except OSError:
        pass
