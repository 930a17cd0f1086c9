"""Regenerate the resource and clock models' calibration data: syntheses of the FPGA top
(``vdla_axi_top``, as ``vdla hw synth --top axi``) on a fixed set of configurations, written to
``dse/data/resource_calibration.json`` with the generator and Verilog keys of the RTL.

    .venv/bin/python -m dse.calibrate            # all configurations, one synthesis at a time
    .venv/bin/python -m dse.calibrate --resume   # keep results made by the same RTL generator
    .venv/bin/python -m dse.calibrate --report   # the model's error table (Markdown)

The set (:data:`CALIBRATION`) spans what the sweep spaces vary and the RTL converts: BLOCK 4, 8
and 16, buffers from 2^9 to 2^18 bytes, the 8- and 16-byte beats, shallow command queues
(LUTRAM). Configurations marked ``holdout`` are never used to fit the models; their error on
them is what ``vdla sweep``, docs/dse.md and ``tests/dse/test_calibration.py`` report. Each
synthesis takes 2-5 CPU minutes (4-40 wall minutes on the loaded 2-core machine, niced); a
point's ``seconds`` is this run's wall time (near 0 on a cache hit); results come from, and go to,
the clock estimate's own cache (``build/timing/``), so a re-run after an interruption only
synthesises what is missing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time

from dse.resources import CALIBRATION_FILE
from dse.synth import TOP, rtl_generator_key, rtl_verilog_key, synthesize, yosys_version
from vdla_hw.files import atomic_write, json_text

# name -> (role, overrides of the osdi18 preset, or {"preset": P}). BLOCK 32 is not here: its
# synthesis did not finish in the time of issue 23 (an hour or more), so the sweep extrapolates it.
CALIBRATION: dict[str, tuple[str, dict]] = {
    "tiny": ("fit", {"preset": "tiny"}),
    "b4": ("fit", {"LOG_BLOCK": 2, "LOG_INP_BUFF_SIZE": 13, "LOG_WGT_BUFF_SIZE": 13, "LOG_ACC_BUFF_SIZE": 15}),
    "b8-beat16": ("fit", {"LOG_BLOCK": 3, "LOG_INP_BUFF_SIZE": 14, "LOG_ACC_BUFF_SIZE": 16, "MEM_BYTES_PER_BEAT": 16}),
    "osdi18": ("fit", {"preset": "osdi18"}),
    "vta-pynq": ("fit", {"preset": "vta-pynq"}),
    "b16-small": ("fit", {"LOG_UOP_BUFF_SIZE": 12, "LOG_INP_BUFF_SIZE": 13, "LOG_WGT_BUFF_SIZE": 14,
                          "LOG_ACC_BUFF_SIZE": 15}),
    "h-b4-wide": ("holdout", {"LOG_BLOCK": 2, "LOG_UOP_BUFF_SIZE": 12, "LOG_INP_BUFF_SIZE": 12,
                              "LOG_WGT_BUFF_SIZE": 14, "LOG_ACC_BUFF_SIZE": 15}),
    "h-b8-beat16-small": ("holdout", {"LOG_BLOCK": 3, "LOG_UOP_BUFF_SIZE": 12, "LOG_INP_BUFF_SIZE": 12,
                                      "LOG_WGT_BUFF_SIZE": 13, "LOG_ACC_BUFF_SIZE": 14, "MEM_BYTES_PER_BEAT": 16}),
    "h-b16-bigbuf": ("holdout", {"LOG_INP_BUFF_SIZE": 16, "LOG_WGT_BUFF_SIZE": 17, "LOG_ACC_BUFF_SIZE": 16}),
}


def config_of(overrides: dict):
    from vdla_hw.config import Config

    overrides = dict(overrides)
    return Config.from_preset(overrides.pop("preset", "osdi18"), **overrides)


def report() -> str:
    """Markdown table of the fitted model against every calibration point, held-out ones first."""
    from dse.resources import load_model

    model = load_model()
    measured = ("lut", "ff", "dsp", "bram36") + (("fmax_mhz",) if model.clock else ())
    names = {"lut": "LUT", "ff": "FF", "dsp": "DSP", "bram36": "BRAM36", "fmax_mhz": "fmax MHz"}
    lines = ["| configuration | role | " + " | ".join(f"{names[r]} (model)" for r in measured) + " |",
             "|---|---|" + "---|" * len(measured)]
    for role in ("holdout", "fit"):
        for row in model.errors(role)["points"]:
            cells = [f"{row[r]:g} ({row[r + '_model']:g}, {100 * (row[r + '_model'] - row[r]) / row[r]:+.1f} %)"
                     if row[r] else f"{row[r]:g} ({row[r + '_model']:g})" for r in measured]
            lines.append(f"| {row['name']} | {role} | " + " | ".join(cells) + " |")
    held = model.errors("holdout")["summary"]
    lines += ["", "largest relative error on held-out configurations: "
              + ", ".join(f"{names[r]} {100 * held[r]['max_rel']:.1f} %" for r in measured)
              + f" (RTL generator key {model.rtl_key}, Verilog key {model.data.get('verilog_key')})"]
    return "\n".join(lines)


# The calibration points that are presets, in the order of the README's resource table.
PRESET_POINTS = ("osdi18", "vta-pynq", "tiny")


def code_path(path: str) -> str:
    """``A -> B, N levels`` with the signal names as code."""
    ends, _, levels = path.rpartition(", ")
    start, _, end = ends.partition(" -> ")
    return f"`{start}` -> `{end}`, {levels}"


def preset_table() -> str:
    """Markdown table of the preset syntheses (README "RTL"): clock, static estimate and its error
    band as stored (vdla_hw.rtl.fmax.with_band: the verdict is at the band's pessimistic edge,
    ``fmax_mhz``), resources."""
    from vdla_hw.rtl.synth import DEVICE

    data = json.loads(CALIBRATION_FILE.read_text())
    lines = [f"| preset (FPGA top) | CLOCK_MHZ | static estimate | band (Vivado) | LUT (of {DEVICE['lut']:,}) | FF | "
             f"DSP48E1 (of {DEVICE['dsp']}) | BRAM36 (of {DEVICE['bram36']}) | critical path |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name in PRESET_POINTS:
        p = data["points"][name]
        clock = float(p["params"]["CLOCK_MHZ"])
        low, high = p["fmax_mhz"], p["fmax_high_mhz"]   # fmax_mhz is the band's pessimistic edge
        verdict = "meets it" if low >= clock else "misses it"
        lines.append(f"| `{name}` | {clock:g} | {p['fmax_static_mhz']:g} MHz | {low:.1f}-{high:.1f} MHz ({verdict} at {low:.1f}) | "
                     f"{p['lut']:,} ({100 * p['lut'] / DEVICE['lut']:.0f} %) | {p['ff']:,} | {p['dsp']} | {p['bram36']:g} | "
                     f"{code_path(p['critical_path'])} |")
    lines += ["", f"(RTL generator key {data['generator_key']}, `python -m dse.calibrate --presets` prints this "
              "table; `tests/dse/test_docs_numbers.py` checks it against `dse/data/resource_calibration.json`; the band "
              "is the static estimate times the smallest and largest Vivado / estimate of the validation designs, "
              "docs/rtl.md \"Clock estimate\")"]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--resume", action="store_true", help="keep stored results made by the same RTL generator (key)")
    ap.add_argument("--only", nargs="*", metavar="NAME", help="synthesise only these configurations")
    ap.add_argument("--report", action="store_true", help="print the model's error table (Markdown) and stop")
    ap.add_argument("--presets", action="store_true", help="print the presets' resource table (Markdown) and stop")
    args = ap.parse_args(argv)
    if args.report or args.presets:
        print(report() if args.report else preset_table())
        return 0
    key = rtl_generator_key()
    old = json.loads(CALIBRATION_FILE.read_text()) if CALIBRATION_FILE.exists() else {"points": {}}
    keep = old["points"] if args.resume and old.get("generator_key") == key else {}
    names = args.only or list(CALIBRATION)
    for name in names:
        if name not in CALIBRATION:
            print(f"unknown calibration configuration {name!r} (known: {', '.join(CALIBRATION)})", file=sys.stderr)
            return 2
    data = {"generator_key": key, "verilog_key": rtl_verilog_key(), "yosys": yosys_version(), "top": TOP,
            "flow": "vdla_hw.rtl.fmax.estimate_fmax(config, 'axi'): yosys synth_xilinx -family xc7 -flatten + "
                    "static timing (docs/rtl.md)",
            "regenerate": "python -m dse.calibrate", "points": {n: p for n, p in keep.items() if n in CALIBRATION}}
    for name in names:
        if name in data["points"]:
            continue
        role, overrides = CALIBRATION[name]
        config = config_of(overrides)
        print(f"{name}: synthesising {config.fingerprint} ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        try:
            result = synthesize(config)
        except Exception as err:  # a configuration the RTL cannot generate is recorded, not fatal
            data["points"][name] = {"role": role, "overrides": overrides, "error": f"{type(err).__name__}: {err}"}
            print(f"{name}: FAILED {type(err).__name__}: {err}", file=sys.stderr, flush=True)
            atomic_write(CALIBRATION_FILE, json_text(data, indent=1, sort_keys=True) + "\n")
            continue
        result.pop("rtl_key")
        # the parameters synthesised, as stored: a preset may change later, the data may not
        data["points"][name] = {"role": role, "overrides": overrides, "params": config.stored_params(), **result}
        data["date"] = datetime.date.today().isoformat()
        atomic_write(CALIBRATION_FILE, json_text(data, indent=1, sort_keys=True) + "\n")
        print(f"{name}: LUT {result['lut']} FF {result['ff']} DSP {result['dsp']} BRAM36 {result['bram36']} "
              f"fmax {result['fmax_mhz']} MHz ({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
