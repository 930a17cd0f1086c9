"""``vdla sweep``: explore accelerator configurations x models on Ray or in this process (:mod:`dse`)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from dse.executors import EXECUTORS
from vdla import commands
from vdla.argtypes import host_port, int_range, output_dir
from vdla.cmd_run import resolution_arg
from vdla_hw.files import json_text


def prepare_models(names: list[str], resolution: int, int8_logits: bool = True) -> list:
    """Import and quantize each model once, as ``vdla run`` does; keyed by the quantized graph's hash.
    ``int8_logits``: also the variant with int8 logits, which points with the classifier on VDLA
    run (a second quantization: left out for a space without such points)."""
    from dse.runner import Model, qgraph_hash
    from vdla.network import built_model, quantize_model

    models = []
    for name in dict.fromkeys(names):
        start = time.perf_counter()
        graph = built_model(name, resolution)
        # power-of-two adds, so that the add_on_vdla knob can put them on the ALU (a sweep measures
        # time; the CPU add's time hardly depends on its multipliers)
        q = quantize_model(graph, name, add_scales=False)
        narrow = quantize_model(graph, name, wide_output=False, add_scales=False) if int8_logits else None
        models.append(Model(name, q, qgraph_hash(q), narrow))
        print(f"sweep: {name} imported and quantized ({time.perf_counter() - start:.1f} s)", file=sys.stderr)
    return models


def print_summary(s: dict) -> None:
    print(f"sweep of {s['space']} ({s['search']}): {s['points']} points, {s['ok']} ok, {s['invalid']} invalid, "
          f"{s['failed']} failed; {s['computed_now']} computed now in {s['seconds']:.1f} s "
          f"({s['points_per_s']:.2f} points/s), {s['resumed']} already in the directory")
    for model, best in s["best_fitting"].items():
        clock = f" at {best['clock_mhz']:g} MHz" if best.get("clock_mhz") else ""
        estimate = f" (clock estimate {best['fmax_mhz']:g} MHz)" if best.get("fmax_mhz") else " (no clock estimate)"
        print(f"  {model}: fastest configuration that fits the {s['part']} within its clock estimate: "
              f"{best['fingerprint']}{clock}{estimate}  {best['latency_s'] * 1e3:.2f} ms  "
              f"{best['speedup']:.2f}x over CPU only  uses {best['part_use'] * 100:.0f} % of the part  "
              f"{best['energy_j'] * 1e3:.2f} mJ")
    for model, count in s.get("over_clock_estimate", {}).items():
        print(f"  {model}: {count} points fit the {s['part']} but run above their clock estimate "
              "(verdict 'over clock estimate'; not counted as fitting)")
    print(f"  Pareto front ({', '.join(s['objectives'])}): {s['pareto_points']} points")
    rm = s["resource_model"]
    if rm["available"]:
        err = rm["holdout_max_rel_error"]
        print(f"  resources: {rm['basis']}; largest error on held-out configurations: "
              + ", ".join(f"{k.upper()} {v * 100:.1f} %" for k, v in err.items()))
    else:
        print(f"  resources: {rm['why']}")
    print(f"  clock estimate: {s['clock_estimate']}")
    for path in s["outputs"]:
        print(f"  wrote {path}")


def write_page(out: Path, summary: dict, space) -> Path:
    """``out/report.html``: the sweep on one self-contained page (vdla/report_html.py): the
    summary, the Pareto front (model, swept parameters, objectives, speedup, status), the figures."""
    from dse.store import read_rows
    from vdla import report_html
    from vdla_hw.files import atomic_write

    header, front = read_rows(out / "pareto.csv")
    wanted = ["model", *(d.name for d in space.dimensions), *summary["objectives"], "speedup", "amdahl_bound",
              "verdict", "status"]
    columns = [c for c in dict.fromkeys(wanted) if c in header]
    figures = {Path(p).stem: Path(p).read_bytes() for p in summary["outputs"] if p.endswith(".png")}
    path = out / "report.html"
    atomic_write(path, report_html.sweep_page(summary, front, columns, figures))
    return path


def cmd_sweep(args) -> int:
    from dse import parts
    from dse.lock import sweep_lock
    from dse.row_seal import sweep_key
    from dse.runner import SweepOptions, check_options, check_reachable, run_sweep
    from dse.report import sweep_readme
    from dse.space import knob_values, load_space
    from dse.store import read_rows
    from vdla_hw.files import atomic_write, json_text

    space = load_space(args.space)
    out = Path(args.output)
    if args.energy_table:
        from dse.energy import load_table

        load_table(args.energy_table)  # a bad table is an error before any work starts
    parts.check_part(args.part)
    options = SweepOptions(address=args.address, workers=args.workers, executor=args.executor, synth=args.synth,
                           energy_table=args.energy_table, part=args.part)
    check_options(options)
    # Everything that can refuse the sweep is checked before the models are prepared (which
    # takes minutes for a large network): options that do not go together, another sweep in DIR,
    # a Ray head that does not answer, a points.csv that cannot be read, an unsafe sweep key
    # (dse.row_seal).
    with sweep_lock(out):
        if args.address:
            check_reachable(args.address)
        read_rows(out / "points.csv")
        sweep_key()
        models = prepare_models(args.models or list(space.models), args.resolution or space.resolution,
                                int8_logits=True in knob_values(space, "fc_on_vdla"))
        summary = run_sweep(space, out, models, options)
        page = str(write_page(out, summary, space))
        readme = summary["outputs"].index(str(out / "README.md"))
        summary["outputs"].insert(readme, page)   # README.md (dse.report.sweep_readme) names it too
        atomic_write(out / "README.md", sweep_readme(summary))
    over = summary.get("points_over_clock_estimate", 0)
    if over:  # one line, whatever the number of points (the rows say which: verdict, clock_met)
        print(f"vdla: warning: {over} of {summary['ok']} points run above their clock estimate (fmax_mhz; "
              "verdict 'over clock estimate', never counted as fitting; docs/dse.md)", file=sys.stderr)
    if args.json:
        print(json_text(summary, indent=2))
    else:
        print_summary(summary)
    return 0


def add_parser(sub) -> None:
    sweep = commands.add(sub, "sweep")
    sweep.add_argument("space", help="SPACE.json: base preset, parameters to vary, search method (docs/dse.md)")
    sweep.add_argument("-o", "--output", required=True, metavar="DIR", type=output_dir,
                       help="directory for points.csv, pareto.csv, the figures and summary.json (re-runs resume)")
    sweep.add_argument("--models", nargs="+", metavar="M", help="models to sweep (default: the space's, or resnet18)")
    sweep.add_argument("--resolution", type=resolution_arg(), default=None, help="input size of the built-in models")
    sweep.add_argument("--address", type=host_port, metavar="HOST:PORT",
                       help="the head of an existing Ray cluster (default: an embedded local Ray)")
    sweep.add_argument("--workers", type=int_range(1, 1024), default=None,
                       help="points in flight (default: the CPUs Ray offers)")
    sweep.add_argument("--executor", choices=EXECUTORS, default="ray",
                       help="ray: points in parallel on Ray (default); local: one at a time in this process, "
                            "without Ray's start-up (small sweeps)")
    sweep.add_argument("--synth", action="store_true", help="synthesise every configuration with yosys (slow)")
    sweep.add_argument("--energy-table", metavar="FILE", help="per-access energy table (default: built-in)")
    sweep.add_argument("--part", default="xc7z020", help="FPGA part of the part-use objective (dse/data/parts.json)")
    sweep.add_argument("--json", action="store_true", help="print the summary as JSON")
    sweep.set_defaults(func=cmd_sweep)
