"""Regenerate the resource model's calibration data: yosys runs of the RTL on a fixed set of
configurations, written to ``dse/data/resource_calibration.json``.

    .venv/bin/python -m dse.calibrate            # all configurations, one yosys run at a time
    .venv/bin/python -m dse.calibrate --resume   # keep results made from the same RTL sources

The set (:data:`CALIBRATION`) spans BLOCK 4-32, BATCH 1-2, buffer sizes, beat widths and queue
depths. Configurations marked ``holdout`` are never used to fit the model; its error on them is
what ``vdla sweep`` and docs/dse.md report. Each run takes 1-10 minutes (niced).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time

from dse.resources import CALIBRATION_FILE
from dse.synth import rtl_source_key, rtl_verilog_key, synthesize, yosys_version

# name -> (role, overrides of the osdi18 preset, or {"preset": P})
CALIBRATION: dict[str, tuple[str, dict]] = {
    "tiny": ("fit", {"preset": "tiny"}),
    "b4": ("fit", {"LOG_BLOCK": 2, "LOG_INP_BUFF_SIZE": 13, "LOG_WGT_BUFF_SIZE": 13, "LOG_ACC_BUFF_SIZE": 15}),
    "b4-batch4": ("fit", {"LOG_BLOCK": 2, "LOG_BATCH": 2, "LOG_UOP_BUFF_SIZE": 13, "LOG_INP_BUFF_SIZE": 14,
                          "LOG_WGT_BUFF_SIZE": 13, "LOG_ACC_BUFF_SIZE": 16}),
    "b8-beat16": ("fit", {"LOG_BLOCK": 3, "LOG_INP_BUFF_SIZE": 14, "LOG_ACC_BUFF_SIZE": 16, "MEM_BYTES_PER_BEAT": 16}),
    "b8-beat16-small": ("fit", {"LOG_BLOCK": 3, "LOG_UOP_BUFF_SIZE": 12, "LOG_INP_BUFF_SIZE": 12,
                                "LOG_WGT_BUFF_SIZE": 13, "LOG_ACC_BUFF_SIZE": 14, "MEM_BYTES_PER_BEAT": 16}),
    "osdi18": ("fit", {"preset": "osdi18"}),
    "vta-pynq": ("fit", {"preset": "vta-pynq"}),
    "b16-batch2": ("fit", {"LOG_BATCH": 1}),
    "b16-small": ("fit", {"LOG_UOP_BUFF_SIZE": 12, "LOG_INP_BUFF_SIZE": 13, "LOG_WGT_BUFF_SIZE": 14,
                          "LOG_ACC_BUFF_SIZE": 15}),
    "b16-queue128": ("fit", {"CMD_QUEUE_DEPTH": 128, "LOG_WGT_BUFF_SIZE": 16}),
    "b32": ("fit", {"LOG_BLOCK": 5, "LOG_INP_BUFF_SIZE": 16, "LOG_WGT_BUFF_SIZE": 18, "LOG_ACC_BUFF_SIZE": 18}),
    "h-b16-bigbuf": ("holdout", {"LOG_INP_BUFF_SIZE": 16, "LOG_WGT_BUFF_SIZE": 17, "LOG_ACC_BUFF_SIZE": 16}),
    "h-b8-beat16": ("holdout", {"LOG_BLOCK": 3, "LOG_INP_BUFF_SIZE": 13, "LOG_WGT_BUFF_SIZE": 17, "LOG_ACC_BUFF_SIZE": 15,
                                "MEM_BYTES_PER_BEAT": 16}),
    "h-b4-batch4": ("holdout", {"LOG_BLOCK": 2, "LOG_BATCH": 2, "LOG_UOP_BUFF_SIZE": 12, "LOG_INP_BUFF_SIZE": 13,
                                "LOG_WGT_BUFF_SIZE": 12, "LOG_ACC_BUFF_SIZE": 15}),
    "h-b16-batch2-beat16": ("holdout", {"LOG_BATCH": 1, "MEM_BYTES_PER_BEAT": 16, "LOG_ACC_BUFF_SIZE": 16,
                                        "CMD_QUEUE_DEPTH": 256}),
    "h-b32-small": ("holdout", {"LOG_BLOCK": 5, "LOG_INP_BUFF_SIZE": 15, "LOG_WGT_BUFF_SIZE": 17,
                                "LOG_ACC_BUFF_SIZE": 17}),
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
              + f" (RTL {model.data.get('verilog_key', model.rtl_key)}{', STALE' if model.is_stale() else ''})"]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--resume", action="store_true", help="keep stored results made from the same RTL sources")
    ap.add_argument("--only", nargs="*", metavar="NAME", help="synthesise only these configurations")
    ap.add_argument("--report", action="store_true", help="print the model's error table (Markdown) and stop")
    args = ap.parse_args(argv)
    if args.report:
        print(report())
        return 0
    key = rtl_source_key()
    old = json.loads(CALIBRATION_FILE.read_text()) if CALIBRATION_FILE.exists() else {"points": {}}
    keep = old["points"] if args.resume and old.get("rtl_key") == key else {}
    data = {"rtl_key": key, "verilog_key": rtl_verilog_key(), "yosys": yosys_version(), "flow": "vdla_hw.rtl.synth (synth_xilinx -family xc7 -flatten)",
            "regenerate": "python -m dse.calibrate", "points": dict(keep)}
    names = args.only or list(CALIBRATION)
    for name in names:
        if name not in CALIBRATION:
            print(f"unknown calibration configuration {name!r} (known: {', '.join(CALIBRATION)})", file=sys.stderr)
            return 2
    for name in names:
        if name in data["points"] and "fmax_mhz" in data["points"][name]:
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
            CALIBRATION_FILE.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
            continue
        result.pop("rtl_key")
        data["points"][name] = {"role": role, "overrides": overrides, **result}
        data["date"] = datetime.date.today().isoformat()
        CALIBRATION_FILE.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(f"{name}: LUT {result['lut']} FF {result['ff']} DSP {result['dsp']} BRAM36 {result['bram36']} "
              f"({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
