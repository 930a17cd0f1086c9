"""Run program bundles (or raw register sequences) on the RTL under cocotb, many per simulation:
the front end of the bench in :mod:`driver.rtl_bench`.

:func:`run_bundles` returns one :class:`RtlResult` per bundle; :func:`run_register_ops` one
record of reads per sequence. The model is built once per configuration, top and simulator
(``vdla_hw.rtl.runner.build``, cached under ``build/rtl``).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from vdla_hw import regmap
from vdla_hw.bundle import Bundle
from vdla_hw.config import Config
from vdla_hw.errors import VdlaError

BENCH = "driver.rtl_bench"
DEFAULT_BUDGET = 2_000_000
DRAM_BASE = 0x1000_0000        # where the bench maps the image (4 kB aligned, like a CMA buffer)


@dataclass(frozen=True)
class MemoryOptions:
    """The bench memory: first-beat and write-response latency (None: the configuration's
    MEM_LATENCY / MEM_WRITE_LATENCY), stall probability per channel and cycle, random seed."""

    latency: int | None = None
    write_latency: int | None = None
    stall: float = 0.0
    seed: int = 0

    def resolve(self, config: Config) -> dict:
        for key in ("MEM_BURST_GAP", "DDR_BYTES_PER_CYCLE_CAP"):
            if config.params[key]:
                raise VdlaError(f"{key} = {config.params[key]}: the RTL bench memory models the read and write "
                                "latency only, not dead cycles between bursts or a DDR bandwidth cap")
        lat = config.MEM_LATENCY if self.latency is None else int(self.latency)
        wlat = config.MEM_WRITE_LATENCY if self.write_latency is None else int(self.write_latency)
        if lat < 2 or wlat < 2:
            raise VdlaError(f"the RTL bench memory needs a read and a write latency of at least 2 cycles "
                            f"(got {lat} and {wlat})")
        if not 0.0 <= self.stall < 1.0:
            raise VdlaError(f"stall probability {self.stall} must be in [0, 1) (the chance that a channel stalls "
                            "in a cycle)")
        return {"latency": lat, "write_latency": wlat, "stall": float(self.stall), "seed": int(self.seed)}


@dataclass
class RtlResult:
    dram: np.ndarray
    cycles: int
    status: int
    error: int
    error_insn: int
    timeout: bool
    retire: list = field(default_factory=list)     # (index, module, cycle); core top only
    counters: dict = field(default_factory=dict)   # module -> *_INSNS
    modules: dict = field(default_factory=dict)    # module -> every MODULE_COUNTERS register
    id_ok: bool = True
    beats: int = 0
    wall_cycles: int | None = None                 # bench count, START taken -> irq
    axi_checks: dict = field(default_factory=dict)  # checks, violations, rules, left_outstanding
    message: str = ""

    @property
    def done(self) -> bool:
        return bool(self.status & regmap.STATUS_DONE)


def _job(bundles, items, config: Config, sim: str, top: str, memory: MemoryOptions, build_root, waves,
         verbose) -> list[dict]:
    from vdla_hw.rtl import runner

    options = memory.resolve(config)
    bdir = runner.build(config, sim, build_root, waves=bool(waves), top=top)
    work = Path(tempfile.mkdtemp(prefix="vdla-rtl-", dir=bdir))  # kept (with sim.log) when a run fails
    for k, item in enumerate(items):
        if bundles[k] is not None:
            path = work / f"p{k}.npz"
            bundles[k].save(path)
            item["bundle"] = str(path)
        item["result"] = str(work / f"r{k}.npz")
    (work / "job.json").write_text(json.dumps({"memory": options, "programs": items}))
    runner.launch(BENCH, bdir, sim, work, {"VDLA_RTL_JOB": str(work / "job.json")}, waves=waves, verbose=verbose)
    out = []
    for item in items:
        rpath = Path(item["result"])
        if not rpath.exists():
            raise VdlaError(f"RTL simulation ({sim}) produced no result for item {len(out)}; see {work / 'sim.log'}")
        with np.load(rpath) as npz:
            meta = json.loads(str(npz["meta"]))
            meta["dram"] = npz["dram"].copy()
        out.append(meta)
    shutil.rmtree(work, ignore_errors=True)
    return out


def run_bundles(bundles: list[Bundle], sim: str = "verilator", *, top: str = "core",
                budgets: list[int] | None = None, memory: MemoryOptions = MemoryOptions(),
                poison: list | None = None, build_root: Path | None = None, waves: str | None = None,
                verbose: bool = False) -> list[RtlResult]:
    """Run ``bundles`` (one configuration) in one simulation of ``top`` ("core" or "axi");
    ``budgets``: cycle timeouts; ``poison``: per bundle, (lo, hi, "slverr" | "decerr"): byte
    ranges [lo, hi) of the image whose bus accesses answer that error response."""
    if not bundles:
        return []
    config = bundles[0].config
    if any(b.config != config for b in bundles):
        raise VdlaError("run_bundles: every bundle must use the same configuration")
    items = [{"budget": int(budgets[k]) if budgets else DEFAULT_BUDGET,
              "poison": [list(r) for r in (poison[k] if poison else [])]} for k in range(len(bundles))]
    metas = _job(list(bundles), items, config, sim, top, memory, build_root, waves, verbose)
    results = []
    for meta in metas:
        modules = meta["modules"]
        results.append(RtlResult(dram=meta["dram"], cycles=meta["cycles"], status=meta["status"], error=meta["error"],
                                 error_insn=meta["error_insn"], timeout=meta["timeout"],
                                 retire=[tuple(r) for r in meta["retire"]],
                                 counters={m: v["insns"] for m, v in modules.items()}, modules=modules,
                                 id_ok=meta["id_ok"], beats=meta["beats"], wall_cycles=meta["wall_cycles"],
                                 axi_checks=meta["axi_checks"], message=meta.get("message", "")))
    return results


def run_register_ops(sequences: list[tuple[Bundle | None, list]], config: Config, sim: str = "verilator", *,
                     top: str = "core", build_root: Path | None = None) -> list[dict]:
    """Run raw register sequences (ops of :meth:`driver.rtl_bench.Bench.run_ops`), each with
    its image mapped at the bench's DRAM base; returns per sequence its reads
    ``(name, value, cycle)``, writes ``(name, cycle)`` and the checker's counts."""
    bundles = [b for b, _ in sequences]
    items = [{"ops": ops} for _, ops in sequences]
    metas = _job(bundles, items, config, sim, top, MemoryOptions(), build_root, None, False)
    for meta in metas:
        meta.pop("dram", None)
    return metas
