"""Held against the board: every ResNet-18 convolution measured on a PYNQ-Z1, replayed.

    python -m experiments.board_validation [--out results] [--targets vta,arm_cpu] [--records r00,r07]

The measurements are AutoTVM records of tlc-pack/tophub (``compiler/data/board_records.csv``, read
through :func:`compiler.paper.board_records`; its header gives the logs, lines and commit): each a
conv layer's shape, the schedule that ran (its knobs, as logged) and the measured mean time.

* **Accelerator** (``vta``, VTA's ``pynq_1x16_i8w8a32_15_15_18_17``: our ``vta-pynq`` at 100 MHz
  with VTA's DMA and the board's memory, the ``vta-pynq-board`` variant): each record's knobs
  become our schedule (:mod:`compiler.tensorize.vta_schedule`), the layer is compiled with it and
  simulated under the timing contract. Two numbers of that variant are calibrated on one record
  each (:mod:`experiments.board_calibration`: r01 and r09); those two records are listed as
  calibration rows, outside the bands and the medians. Beside each prediction: the same program
  on ``vta-pynq`` (the VDLA DMA, which keeps rows in flight, and the ports' estimates). The
  prediction is the accelerator's time; the per-call work of a runtime around it (register writes, the poll after the finish: our
  driver's, :func:`vdla.network.board_runtime`) is reported beside it as its own column, not added
  to the banded figure, because VTA's runtime (instruction streams built on the CPU each call) is
  not the one we model. The layer compiled with our own schedule search is reported too.
* **CPU** (``arm_cpu``, the Cortex-A9 at 650 MHz): each record's knobs become a kernel of our
  generator (:mod:`compiler.cpu_fallback.tvm_knobs`) priced by the CPU cost model; a record whose
  template the generator does not build (Winograd) is listed as not replayed, with the reason.

Per record: predicted vs measured and the error ``predicted / measured - 1``; per target the
median |error| and the worst. Pass bands of issue 44: every accelerator layer within +-10 % and
their median |error| <= 5 %; CPU layers' median |error| <= 15 % and none beyond +-35 %. Writes
``OUT/board_validation.csv`` (the comparison), ``board_validation_records.csv`` (every record's
prediction and parts), ``_options.csv``, ``_parameters.csv`` and the predicted-vs-measured figure
(log-log, the +-10 % band shaded) as ``board_validation.png``/``.pdf``. Nothing else is fitted
to these records.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from compiler import paper
from experiments import study
from experiments.board_calibration import RECORDS as CALIBRATION_RECORDS
from experiments.board_calibration import VARIANT
from experiments.study import Option

NAME = "board_validation"
TARGETS = ("vta", "arm_cpu")
VTA_CONFIG = VARIANT   # vta-pynq-board: VTA's DMA and the calibrated port (experiments.board_calibration)
STREAMED_CONFIG = "vta-pynq"   # the same program on the VDLA DMA with the ports' estimates, for comparison
CPU = "cortex-a9"
BANDS = {  # issue 44, "Done when"
    "vta": {"each": 0.10, "median": 0.05},
    "arm_cpu": {"each": 0.35, "median": 0.15},
}
# board_validation_records.csv: every record's row has these columns (blank where they do not apply)
RECORD_FIELDS = ("record", "target", "dtype", "template", "layers", "shape", "source", "measured_ms", "predicted_ms",
                 "error", "calibration", "streamed_rows_ms", "streamed_rows_error", "cycles", "schedule", "bound",
                 "instructions", "instructions_vta", "own_schedule",
                 "own_schedule_ms", "runtime_ms", "runtime_parts", "note", "replay_cpu_s")
COMPARED = r"tophub|board_records"  # a parameter source citing the measurements is flagged

OPTIONS = [
    Option("config", VTA_CONFIG, "tophub vta_v0.06.log: model pynq_1x16_i8w8a32_15_15_18_17 is VTA's default "
           "PYNQ configuration; vta-pynq-board is vta-pynq with VTA's HLS DMA (rows one at a time) and the ACP's "
           "latency and rate calibrated on r09 and r01 (vdla_hw/presets.py gives every parameter's source, "
           "listed below)"),
    Option("cpu", CPU, "tophub arm_cpu_v0.01.log / vta_v0.02.log: -model=pynq, the PYNQ-Z1's Cortex-A9"),
    Option("shift", 8, "VTA's AutoTVM tuning task of that time: conv2d, right shift by 8, clip to 0..127, cast "
           "to int8 (apache/tvm v0.6.0 vta/tutorials/autotvm/tune_relay_vta.py, register_vta_tuning_tasks; "
           "compiler.tensorize.vta_schedule.VTA_TASK_SHIFT)"),
]


def simulate_layer(layer, config, schedule=None) -> dict:
    """Simulated seconds of ``layer`` compiled with ``schedule`` (None: our own search's)."""
    import vdla_sim
    from compiler.accel import compile_layer

    bundle = compile_layer(layer, config, schedule=schedule)
    sim = vdla_sim.simulate(bundle, race_check=False, data=False)
    return {"cycles": sim.cycles, "seconds": sim.seconds, "schedule": str(bundle.meta.get("schedule", "")),
            "instructions": bundle.insn_count}


def runtime_parts(config, accelerator_s: float) -> dict:
    """Our runtime's per-call work around one run whose data already sit on the device (as in
    AutoTVM's measurement): register writes and reads, and the poll's delay after the finish."""
    from compiler.cpu_fallback.cost import CpuModel
    from vdla.network import board_runtime

    cost = CpuModel(CPU).offload_cost(runtime=board_runtime(config), written_bytes=0, read_bytes=0,
                                      accelerator_s=accelerator_s)
    return {k: v for k, v in cost.parts.items() if v}


def replay_vta(record: dict, config) -> dict:
    """One accelerator record: the program VTA's knobs give, simulated (timing only: the
    program's output is checked bit-exact by tests/compiler/tensorize/test_vta_schedule.py),
    and the layer compiled with our own schedule search, for comparison."""
    from compiler.tensorize.vta_replay import record_layer
    from dse.vta_replay import replay

    from vdla_hw.config import load_config

    theirs = replay(record, config, check=False)
    streamed = replay(record, load_config(STREAMED_CONFIG), check=False)["seconds"]
    ours = simulate_layer(record_layer(record), config)
    host = runtime_parts(config, theirs["seconds"])
    counts = theirs["counts"]
    return {"predicted_s": theirs["seconds"], "cycles": theirs["cycles"], "schedule": theirs["schedule"],
            "calibration": "yes" if record["record"] in CALIBRATION_RECORDS else "",
            "streamed_rows_ms": round(streamed * 1e3, 4),
            "streamed_rows_error": round(study.relative_error(streamed, record["measured_s"]), 4),
            # instructions of the kinds both programs count (VTA's sync no-ops are not derived)
            "instructions": sum(counts["ours"][k] for k, v in counts["vta"].items() if v is not None),
            "instructions_vta": sum(v for v in counts["vta"].values() if v is not None),
            "own_schedule": ours["schedule"], "own_schedule_ms": round(ours["seconds"] * 1e3, 4),
            "runtime_ms": round(sum(host.values()) * 1e3, 4),
            "runtime_parts": "; ".join(f"{k} {v * 1e6:.1f} us" for k, v in host.items()),
            "note": " | ".join(theirs["notes"])}


def replay_cpu(record: dict) -> dict:
    """One CPU record: its knobs' kernel (spatial pack or Winograd) priced by the CPU cost model
    on the A9's two cores, as TVM's runtime ran it; or the reason it is not replayed."""
    from compiler.cpu_fallback import tvm_knobs
    from vdla_hw.errors import VdlaError

    try:
        result = tvm_knobs.replay(record, cpu=CPU)
    except VdlaError as err:
        return {"predicted_s": None, "note": f"not replayed: {err}"}
    parts = result["parts"]
    return {"predicted_s": result["modelled_s"], "cycles": round(result["cycles"]), "schedule": result["spec"],
            "bound": parts.get("bound", ""), "note": result["basis"]}


def measure(records: list[dict], config, progress=None) -> list[dict]:
    """Every record with its prediction, error and the cost of replaying it."""
    say = progress or (lambda message: None)
    out = []
    for record in records:
        start = time.process_time()
        result = replay_vta(record, config) if record["target"] == "vta" else replay_cpu(record)
        predicted = result["predicted_s"]
        error = None if predicted is None else study.relative_error(predicted, record["measured_s"])
        row = {"record": record["record"], "target": record["target"], "dtype": record["dtype"],
               "template": record["template"], "layers": " ".join(record["layers"]),
               "shape": f"{record['IC']}x{record['H']}x{record['W']} -> {record['OC']}, k{record['K']} "
                        f"s{record['stride']} p{record['pad']}",
               "source": f"{record['source']}:{record['line']}", "measured_ms": round(record["measured_s"] * 1e3, 4),
               "predicted_ms": None if predicted is None else round(predicted * 1e3, 4),
               "error": None if error is None else round(error, 4),
               **{k: v for k, v in result.items() if k != "predicted_s"},
               "replay_cpu_s": round(time.process_time() - start, 2)}
        row = {field: row.get(field) for field in RECORD_FIELDS}
        say(f"{row['record']} {row['target']} {row['layers'].split()[0]}: measured {row['measured_ms']:.3f} ms, "
            + ("not replayed" if error is None else f"predicted {row['predicted_ms']:.3f} ms ({error:+.1%})"))
        out.append(row)
    return out


def label(row: dict) -> str:
    """The record's bar in the comparison; a calibration record says so."""
    return (f"{row['record']} {row['target']} {row['dtype']} {row['layers'].split()[0]}"
            + (" (calibration)" if row.get("calibration") else ""))


def comparison(rows: list[dict]) -> list[dict]:
    """One row per replayed record, banded unless the record calibrated a parameter, then per
    target the median |error| and the worst of the banded ones."""
    table = []
    for row in rows:
        if row["predicted_ms"] is None:
            continue
        band = None if row["calibration"] else BANDS[row["target"]]["each"]
        table.append(study.compare(label(row), row["predicted_ms"], row["measured_ms"], "ms", band))
    for target in TARGETS:
        errors = [abs(r["error"]) for r in rows
                  if r["target"] == target and r["error"] is not None and not r["calibration"]]
        if errors:
            table.append(summary_row(f"{target}: median |error|", statistics.median(errors),
                                     BANDS[target]["median"]))
            table.append(summary_row(f"{target}: worst |error|", max(errors), BANDS[target]["each"]))
    return table


def summary_row(bar: str, value: float, band: float) -> dict:
    """A row whose ``error`` is a statistic of the records' errors (``value``: 0.05 = 5 %)."""
    return {"bar": bar, "unit": "|err|", "ours": round(100 * value, 2), "paper": None, "error": round(value, 4),
            "band": band, "within": "yes" if value <= band else "NO"}


def figure(rows: list[dict]):
    """Predicted vs measured, log-log, the identity and its +-10 % band shaded; one marker per
    target and data type."""
    import numpy as np

    from vdla import plots

    plt = study.pyplot()
    fig, ax = plt.subplots(figsize=(7, 6.5))
    shown = [r for r in rows if r["predicted_ms"] is not None]
    values = [v for r in shown for v in (r["predicted_ms"], r["measured_ms"])] or [1.0]
    x = np.logspace(np.log10(min(values) / 1.5), np.log10(max(values) * 1.5), 50)
    ax.fill_between(x, x * 0.9, x * 1.1, color="#2ca02c", alpha=0.2, linewidth=0, label="+-10 %")
    ax.plot(x, x, color="black", linewidth=0.6)
    styles = {("vta", "int8"): ("o", "#2b8cbe", f"VTA on the FPGA ({VTA_CONFIG})"),
              ("arm_cpu", "int8"): ("s", "#e6550d", "Cortex-A9, int8 -> int32"),
              ("arm_cpu", "float32"): ("^", "#756bb1", "Cortex-A9, FP32")}
    for (target, dtype), (marker, color, what) in styles.items():
        group = [r for r in shown if r["target"] == target and r["dtype"] == dtype]
        if group:
            ax.scatter([r["measured_ms"] for r in group], [r["predicted_ms"] for r in group], marker=marker,
                       color=color, label=what, zorder=3)
            for r in group:
                ax.annotate(r["record"], (r["measured_ms"], r["predicted_ms"]), textcoords="offset points",
                            xytext=(3, 3), fontsize=6, color=color)
    plots.log_log_axes(ax)
    ax.set_xlabel("measured on the PYNQ-Z1 (ms, tophub)")
    ax.set_ylabel("predicted (ms)")
    missing = len(rows) - len(shown)
    ax.set_title(f"ResNet-18 convolutions: predicted vs measured ({len(shown)} records"
                 + (f"; {missing} not replayed" if missing else "") + ")", fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return fig


def verdict(rows: list[dict], table: list[dict]) -> str:
    missing = [r["record"] for r in rows if r["predicted_ms"] is None]
    text = study.verdict(table, True)
    return text + (f"; not replayed: {', '.join(missing)} (see the records table's note)" if missing else "")


def parser() -> argparse.ArgumentParser:
    from vdla.argtypes import ArgumentParser, output_dir

    p = ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=output_dir, default="results", help="output folder (default results)")
    p.add_argument("--targets", default=",".join(TARGETS), help=f"comma-separated, of {', '.join(TARGETS)}")
    p.add_argument("--records", default=None, help="comma-separated record ids (default: every record)")
    return p


def selected(targets_text: str, records_text: str | None) -> list[dict]:
    """The records the command line asks for (a one-line VdlaError for an unknown target or id)."""
    from vdla_hw.errors import VdlaError

    targets = [t for t in targets_text.split(",") if t]
    bad = [t for t in targets if t not in TARGETS]
    if bad or not targets:
        raise VdlaError(f"--targets {targets_text!r}: expected a comma-separated list of {', '.join(TARGETS)}")
    records = [r for r in paper.board_records() if r["target"] in targets]
    if records_text is not None:
        wanted = [r for r in records_text.split(",") if r]
        known = {r["record"] for r in records}
        unknown = [r for r in wanted if r not in known]
        if unknown or not wanted:
            raise VdlaError(f"--records: {', '.join(unknown) or repr(records_text)} is not a record of "
                            f"{', '.join(targets)} (compiler/data/board_records.csv)")
        records = [r for r in records if r["record"] in wanted]
    return records


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    return study.guarded(NAME, lambda: run(args))


def run(args) -> int:
    from vdla_hw.config import load_config

    out = Path(args.out)
    records = selected(args.targets, args.records)
    study.check_outputs(out, NAME, [f"{NAME}_records.csv"])
    config = load_config(VTA_CONFIG)
    start = time.monotonic()
    rows = measure(records, config, progress=lambda m: print(m, file=sys.stderr))
    table = comparison(rows)
    option_rows = [{"option": o.name, "value": o.value, "applied": "replay", "source": o.source} for o in OPTIONS]
    parameter_rows = study.parameters(config, None, None, COMPARED)
    written = study.write_study(out, NAME, table, option_rows, parameter_rows, figure(rows),
                                extra={f"{NAME}_records.csv": rows})
    study.show(f"Held against the board: {len(records)} ResNet-18 records of tlc-pack/tophub replayed "
               f"({time.monotonic() - start:.0f} s)", option_rows, table, verdict(rows, table), parameter_rows,
               written)
    return 0


if __name__ == "__main__":
    sys.exit(main())
