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

Every analysis has a key that hashes everything the result depends on (:func:`cache_key`): the
spec, the source of the kernel generators and of this analysis, the llvmlite and LLVM versions,
``llvm-mca --version`` and the CPU's data file. A stale entry can therefore never be read. An
analysis is looked up, in order, in the process's memo, in the analyses shipped with the project
(``compiler/data/cpu-cost/<cpu>.json``: every kernel the presets' main jobs need, written by
``scripts/precompute_cpu_costs.py``, so a first run on an empty cache does not analyse them), and
in the disk cache (:mod:`vdla_hw.cache`, kind ``cpu-cost``, keyed by :func:`cache_key` alone so an
unrelated edit of the project keeps them); only then is it computed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path

FORMAT = 1
CACHE_ENV = "VDLA_CACHE_DIR"  # vdla_hw.cache.DIR_ENV: where the disk cache lives
SHIPPED_DIR = Path(__file__).resolve().parents[2] / "data" / "cpu-cost"


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
_shipped: dict[str, dict[str, KernelAnalysis]] = {}
# the disk cache's code part: cache_key already hashes every source and tool the analysis depends
# on, so an unrelated edit of the project keeps the (expensive) analyses
NARROW_CODE = f"compiler.cpu_fallback.cost.analysis.cache_key format {FORMAT}"


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


def key_basis(cpu) -> list[str]:
    """Every part of :func:`cache_key` but the spec: the format, the sources, the tools and the
    CPU's data (the shipped analyses record it, so a test can say when they are stale)."""
    import llvmlite
    import llvmlite.binding as llvm

    from .mca import version

    return [f"format {FORMAT}", _source_digest(), f"llvmlite {llvmlite.__version__} llvm {llvm.llvm_version_info}",
            version(), cpu.fingerprint()]


def cache_key(spec, cpu) -> str:
    basis = key_basis(cpu)
    parts = [basis[0], type(spec).__name__, spec.describe(), *basis[1:]]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def shipped_path(cpu_name: str) -> Path:
    """The analyses shipped with the project for one CPU (``scripts/precompute_cpu_costs.py``)."""
    return SHIPPED_DIR / f"{cpu_name}.json"


def shipped(cpu) -> dict[str, KernelAnalysis]:
    """cache key -> analysis of the shipped file of ``cpu`` (empty when there is none); read once.
    An entry whose key today's code does not produce is never looked up, so a stale file costs
    time, never a wrong answer."""
    with _lock:
        if cpu.name in _shipped:
            return _shipped[cpu.name]
    from vdla_hw.errors import VdlaError
    from vdla_hw.files import json_loads, read_capped

    path, table = shipped_path(cpu.name), {}
    if path.is_file():
        where = f"{path}: shipped CPU-kernel analyses"
        data = json_loads(read_capped(path, "shipped CPU-kernel analyses"), where)
        try:
            table = {key: KernelAnalysis.from_json(entry["analysis"]) for key, entry in data["entries"].items()}
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise VdlaError(f"{where}: malformed ({type(err).__name__}: {err}); regenerate it with "
                            "scripts/precompute_cpu_costs.py") from None
    with _lock:
        _shipped[cpu.name] = table
    return table


def is_cached(spec, cpu) -> bool:
    """Whether the analysis is in memory, shipped or on disk (no work needed)."""
    from vdla_hw.cache import contains

    key = cache_key(spec, cpu)
    return key in _memo or key in shipped(cpu) or contains("cpu-cost", (key,), code=NARROW_CODE)


def remember(spec, cpu, result: KernelAnalysis) -> KernelAnalysis:
    """Keep an analysis made elsewhere (a worker process, which wrote the disk cache)."""
    with _lock:
        _memo[cache_key(spec, cpu)] = result
    return result


def analyse(spec, cpu) -> KernelAnalysis:
    """The analysis of ``spec`` on ``cpu``: from the in-process memo, the shipped analyses, the
    disk cache (:mod:`vdla_hw.cache`, kind ``cpu-cost``) or fresh."""
    from vdla_hw.cache import cached

    key = cache_key(spec, cpu)
    with _lock:
        if key in _memo:
            return _memo[key]
    result = shipped(cpu).get(key)
    if result is None:
        result = cached("cpu-cost", (key,), lambda: analyse_uncached(spec, cpu), code=NARROW_CODE)
    with _lock:
        _memo[key] = result
    return result
