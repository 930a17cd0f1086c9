"""Run program bundles (or raw register sequences) on the RTL, many per simulation: the front end
of the two benches.

* ``compiled`` (the default under Verilator): the harness Verilated with the bench in C++
  (``vdla_hw.rtl.compiled``, run by :mod:`driver.rtl_compiled`); no Python per cycle.
* ``cocotb`` (Icarus, waves, raw register sequences, protocol corner cases): the cocotb bench
  of :mod:`driver.rtl_bench`.

Both run each program through the driver's own register code and report the same record
(``driver.rtl_bench_device``: :func:`run_outcome`, :func:`program_record`). :func:`run_bundles` returns one
:class:`RtlResult` per bundle; :func:`run_register_ops` one record of reads per sequence
(cocotb). Models are built once per configuration, top and bench (cached under ``build/rtl``).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from vdla_hw import limits, membus, regmap
from vdla_hw.bundle import Bundle
from vdla_hw.config import Config
from vdla_hw.errors import VdlaError

BENCH = "driver.rtl_bench"
BENCHES = ("compiled", "cocotb")
DEFAULT_BUDGET = limits.RTL_MIN_BUDGET  # cycles per program when the caller gives none


def choose_bench(sim: str, bench: str | None, waves=None) -> str:
    """The bench to run: ``bench`` if given (checked), else compiled under Verilator without
    waves, cocotb otherwise."""
    if bench is None:
        return "compiled" if sim == "verilator" and not waves else "cocotb"
    if bench not in BENCHES:
        raise VdlaError(f"unknown RTL bench {bench!r} (known: {', '.join(BENCHES)})")
    if bench == "compiled" and sim != "verilator":
        raise VdlaError(f"the compiled RTL bench runs on Verilator only, not {sim}; use --bench cocotb")
    if bench == "compiled" and waves:
        raise VdlaError("the compiled RTL bench writes no waves; use --bench cocotb with --vcd")
    return bench


@dataclass(frozen=True)
class MemoryOptions:
    """The bench memory: first-beat and write-response latency (None: the configuration's
    MEM_LATENCY / MEM_WRITE_LATENCY), stall probability per channel and cycle, random seed;
    ``axil_stall``: the probability that the cocotb bench's AXI-lite master pauses each of its
    five channels in a cycle (the control bus's back-pressure; cocotb bench only)."""

    latency: int | None = None
    write_latency: int | None = None
    stall: float = 0.0
    seed: int = 0
    axil_stall: float = 0.0

    def resolve(self, config: Config) -> dict:
        # a DDR cap of a beat per cycle or more changes no cycle (membus.cap_binds), so the bench runs it
        binding = {"MEM_BURST_GAP": config.MEM_BURST_GAP > 0, "DDR_BYTES_PER_CYCLE_CAP": membus.cap_binds(config)}
        for key, binds in binding.items():
            if binds:
                raise VdlaError(f"{key} = {config.params[key]}: the RTL bench memory models the read and write "
                                "latency only, not dead cycles between bursts or a DDR bandwidth cap")
        lat = config.MEM_LATENCY if self.latency is None else int(self.latency)
        wlat = config.MEM_WRITE_LATENCY if self.write_latency is None else int(self.write_latency)
        if lat < 2 or wlat < 2:
            raise VdlaError(f"the RTL bench memory needs a read and a write latency of at least 2 cycles "
                            f"(got {lat} and {wlat})")
        for stall in (self.stall, self.axil_stall):
            if not 0.0 <= stall < 1.0:
                raise VdlaError(f"stall probability {stall} must be in [0, 1) (the chance that a channel stalls "
                                "in a cycle)")
        out = {"latency": lat, "write_latency": wlat, "stall": float(self.stall), "seed": int(self.seed)}
        if self.axil_stall:
            out["axil_stall"] = float(self.axil_stall)
        return out


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
    wall_cycles: int | None = None                 # bench count, START taken -> irq (CYCLES + regmap.IRQ_AFTER_CYCLES)
    axi_checks: dict = field(default_factory=dict)  # checks, violations, rules, left_outstanding
    message: str = ""
    srams: dict | None = None                      # the bench's SRAM state after the run (keep_srams, last result)

    @property
    def done(self) -> bool:
        return bool(self.status & regmap.STATUS_DONE)


def _job(bundles, items, config: Config, sim: str, top: str, memory: MemoryOptions, build_root, waves,
         verbose, srams: dict | None = None, save_srams: bool = False) -> list[dict]:
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
    job = {"memory": options, "programs": items}
    if srams is not None:
        if srams.get("bench") != "cocotb" or srams.get("build") != str(bdir):
            raise VdlaError("RTL: an SRAM state saved by another build or bench cannot be loaded here")
        job["srams_in"] = str(work / "srams_in.json")
        Path(job["srams_in"]).write_text(json.dumps(srams["data"]))
    if save_srams:
        job["srams_out"] = str(work / "srams_out.json")
    (work / "job.json").write_text(json.dumps(job))
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
    if save_srams and out:
        out[-1]["srams"] = {"bench": "cocotb", "build": str(bdir),
                            "data": json.loads(Path(job["srams_out"]).read_text())}
    shutil.rmtree(work, ignore_errors=True)
    return out


def run_bundles(bundles: list[Bundle], sim: str = "verilator", *, top: str = "core",
                budgets: list[int] | None = None, memory: MemoryOptions = MemoryOptions(),
                poison: list | None = None, build_root: Path | None = None, waves: str | None = None,
                verbose: bool = False, bench: str | None = None, progress=None,
                keep_srams: bool = False, srams: dict | None = None) -> list[RtlResult]:
    """Run ``bundles`` (one configuration) in one simulation of ``top`` ("core" or "axi");
    ``budgets``: cycle timeouts; ``poison``: per bundle, (lo, hi, "slverr" | "decerr"): byte
    ranges [lo, hi) of the image whose bus accesses answer that error response; ``bench``:
    "compiled" or "cocotb" (default: :func:`choose_bench`); ``progress``: called with a line
    before a (minutes-long) model build.

    The first program starts from zeroed SRAMs (a fresh device: docs/spec.md section 4, "SRAM
    state between programs"). ``keep_srams``: every later one starts from the SRAMs the one
    before left, as on the board (no reset, no clearing between programs; a program that
    timed out ends the sequence's state: the next starts from zeros on a fresh model);
    without it the bench zeroes them (backdoor) before each program, so every program is
    compared with a fresh simulator run. ``srams``: the ``srams`` of the last result of an
    earlier run with ``keep_srams`` on the same bench and build (a device's SRAMs between
    runs: :class:`driver.rtl_device.RtlDevice`); the first program starts from it instead of
    zeros. With ``keep_srams`` the last result's ``srams`` holds the state the run leaves."""
    if not bundles:
        return []
    config = bundles[0].config
    if any(b.config != config for b in bundles):
        raise VdlaError("run_bundles: every bundle must use the same configuration")
    items = [{"budget": int(budgets[k]) if budgets else DEFAULT_BUDGET,
              "poison": [list(r) for r in (poison[k] if poison else [])],
              "clear_srams": (k == 0 and srams is None) or not keep_srams} for k in range(len(bundles))]
    if srams is not None and not keep_srams:
        raise VdlaError("run_bundles: an SRAM state to start from needs keep_srams=True")
    if choose_bench(sim, bench, waves) == "compiled":
        if memory.axil_stall:
            raise VdlaError("the compiled RTL bench does not pause the AXI-lite channels; use --bench cocotb")
        from driver import rtl_compiled  # Verilator's model: built only for this bench
        metas = rtl_compiled.run_items(list(bundles), items, config, top, memory.resolve(config), build_root,
                                       progress, srams=srams, save_srams=keep_srams)
    else:
        metas = _job(list(bundles), items, config, sim, top, memory, build_root, waves, verbose,
                     srams=srams, save_srams=keep_srams)
    results = []
    for meta in metas:
        modules = meta["modules"]
        results.append(RtlResult(dram=meta["dram"], cycles=meta["cycles"], status=meta["status"], error=meta["error"],
                                 error_insn=meta["error_insn"], timeout=meta["timeout"],
                                 retire=[tuple(r) for r in meta["retire"]],
                                 counters={m: v["insns"] for m, v in modules.items()}, modules=modules,
                                 id_ok=meta["id_ok"], beats=meta["beats"], wall_cycles=meta["wall_cycles"],
                                 axi_checks=meta["axi_checks"], message=meta.get("message", ""),
                                 srams=meta.get("srams")))
    return results


def run_register_ops(sequences: list[tuple[Bundle | None, list]], config: Config, sim: str = "verilator", *,
                     top: str = "core", build_root: Path | None = None,
                     memory: MemoryOptions = MemoryOptions()) -> list[dict]:
    """Run raw register sequences (ops of :meth:`driver.rtl_bench.Bench.run_ops`), each with
    its image mapped at the bench's DRAM base; returns per sequence its reads
    ``(reg, value, cycle, RRESP)``, writes ``(reg, cycle, BRESP)`` and the checker's counts."""
    bundles = [b for b, _ in sequences]
    items = [{"ops": ops} for _, ops in sequences]
    metas = _job(bundles, items, config, sim, top, memory, build_root, None, False)
    for meta in metas:
        meta.pop("dram", None)
    return metas
