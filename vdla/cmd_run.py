"""``vdla run`` (the offload study of one network) and ``vdla model`` (write a built-in model)."""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

from vdla import commands
from vdla.argtypes import int_range, output_dir, output_file, seed
from vdla.cmd_sim import add_max_work
from vdla_hw.limits import SIM_MAX_WORK
from vdla_hw.errors import VdlaError


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


TABLES = ("layers.csv", "summary.json")


def study_files(out_dir: Path) -> list[Path]:
    """Every file :func:`write_outputs` may write into ``out_dir`` (the figures of offloaded
    convolutions only when there are some): checked before a run, replaced as one set."""
    from vdla import plots

    return [out_dir / name for name in TABLES] + \
        [out_dir / f"{figure}.{ext}" for figure in plots.FIGURES for ext in plots.FORMATS]


def csv_text(rows: list[dict], fields: list[str] | None = None) -> str:
    """``rows`` as CSV text with a header (``fields``, default the first row's keys)."""
    buf = io.StringIO(newline="")
    writer = csv.DictWriter(buf, fieldnames=fields or list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def write_outputs(report, out_dir: Path, outputs=None, progress=_progress, timings=None, worker=None) -> list[Path]:
    """The per-layer CSV, the summary JSON and the four figures of the study into ``out_dir``,
    as one set (:func:`study_files`: files of an earlier run it does not write again are
    removed). Staged in ``outputs`` (a :class:`vdla.outputs.Outputs`) for the caller's commit,
    or, without one, put in place before returning. Returns the destinations. The figures are
    drawn by ``worker`` (a :class:`vdla.figure_worker.FigureWorker`, started before the run:
    the same bytes, drawn on the other core while the roofline's variants are computed here),
    or, without one, in this process. ``timings`` (a dict), if given, receives the wall seconds
    of the roofline's variants without latency hiding (``roofline_variants``) and of the
    figures apart from those (``figures``: with a worker, the data sent, the wait for its
    answer and the files staged: what --plots adds to the run besides the variants)."""
    import time

    from vdla import plots
    from vdla.network import roofline_without_latency_hiding
    from vdla.outputs import Outputs
    from vdla_hw.files import json_text

    if outputs is None:
        with Outputs() as own:
            write_outputs(report, out_dir, own, progress, timings, worker)
            return own.commit()
    outputs.supersede(study_files(out_dir))
    from compiler.network.report import layer_row

    rows = [{**layer_row(r), "host": json_text(r.host_parts), "estimate": json_text(r.estimate),
             "offload": json_text(layer_row(r)["offload"])} for r in report.records]
    written = [outputs.write(out_dir / TABLES[0], csv_text(rows))]
    summary = report.as_dict()
    del summary["layers"]
    written.append(outputs.write(out_dir / TABLES[1], json_text(summary, indent=2)))
    timings = {} if timings is None else timings
    convs = [r for r in report.records if r.placement == "vdla" and r.op == "conv"]
    progress(f"drawing the figures into {out_dir}")
    start = time.perf_counter()
    # With a worker, two processes draw about 2 s each: a forked drawer the speedup and the
    # timeline, the worker Fig. 21 while the variants are computed here, then the roofline.
    forked = [("layer_speedup", plots.layer_speedup_data(report))]
    if convs:  # the roofline and the timeline are about offloaded convolutions
        # The timeline shows the conv that keeps the GEMM core busiest: load/compute overlap at its best.
        forked.append(("timeline", plots.timeline_data(report, max(convs, key=lambda r: r.utilization).name)))
    here = [("fig21_breakdown", plots.fig21_data(report))]
    if worker is not None:
        worker.draw(forked, fork=True)
        worker.draw(here)
    variants_start = time.perf_counter()
    variants = roofline_without_latency_hiding(report, progress) if convs else {}
    timings["roofline_variants"] = time.perf_counter() - variants_start
    late = [("roofline", plots.roofline_data(report, variants, convs[0].extra["run"].config))] if convs else []
    if worker is not None:
        if late:
            worker.draw(late)
        files = worker.result()
    else:
        files = {name: plots.render(name, data) for name, data in forked + here + late}
    for name in plots.FIGURES:
        if name in files:
            written += plots.save(name, files[name], out_dir, outputs)
    timings["figures"] = time.perf_counter() - start - timings["roofline_variants"]
    progress(f"drew {len(written) - len(TABLES)} figure files ({timings['figures']:.1f} s)")
    return written


def warn_clock_of(config_spec) -> None:
    """One line on stderr when the configuration's CLOCK_MHZ is above its clock estimate (dse.clock)."""
    from dse.clock import warn_clock
    from vdla_hw.config import load_config

    warn_clock(load_config(config_spec))


def cmd_run(args) -> int:
    import contextlib

    from compiler.network import PartitionOptions
    from vdla.figure_worker import FigureWorker
    from vdla.outputs import check_writable

    if args.plots and args.target != "sim":
        raise VdlaError(f"--plots needs --target sim (the timeline and roofline read the simulator's "
                        f"instruction spans); run --target {args.target} without --plots")
    if args.max_work != SIM_MAX_WORK and args.target != "sim":
        raise VdlaError(f"--max-work bounds the simulator's work (--target sim); --target {args.target} has its own bound")
    plot_dir = Path(args.plots) if args.plots else None
    check_writable([*(study_files(plot_dir) if plot_dir else ()), *((args.output,) if args.output else ())])
    options = PartitionOptions(stem_on_vdla=args.stem_on_vdla, add_on_vdla=args.add_on_vdla,
                               fc_on_vdla=args.fc_on_vdla)
    calibration = args.calibration if args.calibration is not None else 4
    with contextlib.ExitStack() as stack:
        # the figures' process, started now: matplotlib's set-up overlaps the run (vdla.figure_worker)
        worker = stack.enter_context(FigureWorker()) if plot_dir else None
        _run(args, options, calibration, plot_dir, worker)
    return 0


def _run(args, options, calibration, plot_dir, worker) -> None:
    import numpy as np

    from compiler.network.report import table
    from vdla.network import run_network
    from vdla.outputs import Outputs
    from vdla_hw.files import json_text

    report = run_network(args.model, config=args.config, target=args.target, resolution=args.resolution,
                         options=options, vthreads=args.vthreads, progress=_progress, cpu=args.cpu,
                         cpu_baseline=args.cpu_baseline, cpu_threads=args.cpu_threads,
                         input_shape=args.input_shape, calibration=calibration, method=args.calibration_method,
                         normalize=args.normalize, images=args.images, x=args.input, placement=args.placement,
                         roofline=plot_dir is not None,
                         max_work=args.max_work if args.max_work != SIM_MAX_WORK else None)
    warn_slower(report.totals)
    if report.vta_warning:
        print(f"vdla: {report.vta_warning}", file=sys.stderr)
    if not report.bit_exact:
        raise VdlaError(f"{args.model}: the executed network's output differs from the numpy reference of the "
                        "quantized graph (a bug: please report it with this command line)")
    warn_clock_of(args.config)  # after the run, so that a user error stays the only stderr line
    with Outputs() as outputs:  # every file of the run appears at once, after the whole run
        if plot_dir:  # its phases join the run's (--json: wall_seconds)
            write_outputs(report, plot_dir, outputs, timings=report.timings, worker=worker)
        if args.output:
            outputs.write(args.output, lambda fh: save_outputs(fh, report))
        written = outputs.commit()
    if args.json:
        print(json_text(report.as_dict(), indent=2))
    else:
        print(table(report.records, report.totals))
        q = report.quantization
        errors = sorted(q["per_layer_error"].values())
        median = f"{errors[len(errors) // 2] * 100:.1f}%" if errors else "n/a (no quantized layers)"
        print(f"quantization on {q['test_inputs']} inputs ({q['test_source']}): median per-layer error {median}")
        for out in q["outputs"]:
            top1 = f"top-1 agreement with the float model {out['top1_agreement'] * 100:.0f}%; " \
                if "top1_agreement" in out else ""
            print(f"  output {out['name']} {'x'.join(map(str, out['shape']))}: {top1}RMS error {out['rms_error']:.4g} "
                  f"({out['relative_error'] * 100:.2f}% of the float output's RMS)")
        print(f"calibration: {q['calibration']['method']} on {q['calibration']['count']} inputs "
              f"({q['calibration']['source']}); executed input: {report.input['source']}")
        print(f"bit exact vs the quantized numpy reference: {report.bit_exact}   output sha256 {report.output_sha256}")
        t = report.timings
        print(f"wall time {t['total']:.1f} s (simulation {t['simulate']:.1f} s, compile {t['compile']:.1f} s)")
        for path in written:
            print(f"wrote {path}")


def save_outputs(fh, report) -> None:
    """``--output``: the float output as .npy; a network of several outputs as .npz of
    ``output_0``, ``output_1``, ... in the graph's order and ``names`` (a string array: output k's
    name in the model). Keys never come from the model, whose names may be anything (``file``,
    ``allow_pickle``, ``../x``)."""
    import numpy as np

    if len(report.outputs_float) == 1:
        np.save(fh, report.outputs_float[0], allow_pickle=False)
    else:
        arrays = {f"output_{k}": out for k, out in enumerate(report.outputs_float)}
        np.savez(fh, **arrays, names=np.array(report.output_names, dtype=str))


def warn_slower(totals: dict) -> None:
    """One line on stderr when some offloaded ops are slower than on the CPU alone."""
    slower = totals.get("slower_offloads") or []
    if slower:
        offloaded = totals.get("offloaded_ops", "?")
        print(f"warning: {len(slower)} of {offloaded} offloaded ops are slower than on the CPU alone "
              f"(accelerator + host > CPU; marked ! in the table): {', '.join(slower)}"
              + ("; --placement cost keeps them on the CPU" if totals.get("placement") == "all" else ""),
              file=sys.stderr)


def cmd_model(args) -> int:
    from compiler.frontend.resnet import write_resnet
    from vdla.network import BUILTIN
    from vdla.outputs import Outputs

    with Outputs() as outputs:
        write_resnet(outputs.path(args.output), BUILTIN[args.name], args.resolution, args.seed)
        path, = outputs.commit()
    print(f"wrote {path} ({args.name}, {args.resolution}x{args.resolution}, seed {args.seed})", file=sys.stderr)
    return 0


def resolution_arg():
    """--resolution of the built-in models: 32 up to the documented limit (vdla_hw/limits.py)."""
    from vdla_hw.limits import RESNET_MAX_RESOLUTION

    return int_range(32, RESNET_MAX_RESOLUTION)


def add_parser(sub) -> None:
    from compiler.cpu_fallback.cost.baselines import baseline_names
    from compiler.cpu_fallback.cost.cpus import cpu_names
    from compiler.quantize.calibrate import METHODS
    from vdla.inputs import IMAGENET, input_shape_arg, normalize_arg

    run = commands.add(sub, "run")
    run.add_argument("model", help="resnet18, resnet34 or a float ONNX file (opset 13-21; older ones are converted)")
    run.add_argument("--config", default=None, help="preset or JSON file (default osdi18)")
    run.add_argument("--target", default="sim", choices=["sim", "rtl", "pynq"],
                     help="device backend for accelerator ops (rtl: Verilator, slow; pynq: on the board)")
    run.add_argument("--resolution", type=resolution_arg(), default=224, help="input size of the built-in models")
    run.add_argument("--plots", type=output_dir, metavar="DIR", help="write layers.csv, summary.json and the four figures here")
    run.add_argument("--json", action="store_true", help="machine-readable report on stdout")
    run.add_argument("--vthreads", type=int_range(1), default=None, help="virtual threads per layer (default: search)")
    add_max_work(run)
    run.add_argument("--placement", choices=["cost", "all"], default="cost",
                     help="cost (default): each op the accelerator can run goes where the whole network is faster "
                          "(estimates, reason printed); all: every such op on the accelerator")
    run.add_argument("--stem-on-vdla", action="store_true",
                     help="let the 3-channel stem (and any conv of fewer input channels than a GEMM block) run on "
                     "VDLA, its channels padded to a block")
    run.add_argument("--add-on-vdla", action="store_true", help="run residual adds on the ALU")
    run.add_argument("--fc-on-vdla", action="store_true",
                     help="run the classifiers as GEMMs (the last layer then keeps int8 instead of int32 logits)")
    run.add_argument("--cpu", default="cortex-a9", choices=cpu_names(),
                     help="CPU whose modelled times the report gives (default cortex-a9, the PYNQ-Z1's)")
    run.add_argument("--cpu-baseline", default="int8", choices=baseline_names(),
                     help="which kernels price the CPU ops: int8 (ours, what runs; default), fp32 (TVM-style "
                          "FP32 kernels, the VTA paper's A9 baseline) or tcpu (what the TVM paper measured: int8 "
                          "convs with VTA's 2018 schedule table); the functional path stays int8")
    run.add_argument("--cpu-threads", type=int_range(1, 2), default=1,
                     help="CPU cores each CPU kernel is split over (default 1; 2: both A9 cores sharing L2 and DRAM)")
    run.add_argument("--input-shape", type=input_shape_arg, metavar="N,C,H,W",
                     help="the input's shape, for an ONNX model with dynamic dimensions")
    run.add_argument("--calibration", metavar="DIR|FILE",
                     help="calibration inputs: a folder of images, an image, or a .npy/.npz of inputs "
                          "(default: 4 synthetic images)")
    run.add_argument("--calibration-method", choices=METHODS, default="mse",
                     help="how each value's power-of-two scale is chosen (default mse)")
    run.add_argument("--images", metavar="DIR|FILE",
                     help="test inputs (e.g. a folder of images): classified by the float and the int8 model, "
                          "agreement reported; the first is the executed input unless --input is given")
    run.add_argument("--normalize", type=normalize_arg, default=IMAGENET, metavar="imagenet|none|M,M,M/S,S,S",
                     help="per-channel normalisation of images (default imagenet: torchvision's mean and std)")
    run.add_argument("--input", metavar="FILE",
                     help="the executed input: .npy/.npz (float32, the model's shape, already normalised) or an image")
    run.add_argument("--output", type=output_file, metavar="FILE",
                     help="write the network's output, dequantized to float32, as .npy (a model of several outputs: "
                          "all of them as .npz: output_0, output_1, ... in the model's order, and names, their names "
                          "in the model; to FILE, whatever its name)")
    run.set_defaults(func=cmd_run)

    model = commands.add(sub, "model")
    model.add_argument("name", choices=["resnet18", "resnet34"])
    model.add_argument("--resolution", type=resolution_arg(), default=224, help="input size (multiple of 32)")
    model.add_argument("--seed", type=seed, default=0, help="seed of the random weights")
    model.add_argument("-o", "--output", type=output_file, required=True, help="ONNX file to write")
    model.set_defaults(func=cmd_model)
