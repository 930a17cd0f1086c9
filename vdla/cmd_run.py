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
PAGE = "report.html"   # the self-contained page of the run (vdla/report_html.py)
README = "README.md"  # of the results folder: what each file is (results_readme)


def study_files(out_dir: Path) -> list[Path]:
    """Every file :func:`write_outputs` may write into ``out_dir`` (the figures of offloaded
    convolutions only when there are some; each figure's data as NAME.csv): checked before a run,
    replaced as one set."""
    from vdla import plots

    return [out_dir / name for name in (*TABLES, PAGE, README)] + \
        [out_dir / f"{figure}.{ext}" for figure in plots.FIGURES for ext in (*plots.FORMATS, "csv")]


def results_readme(report, figures: dict[str, dict], page: bool = False) -> str:
    """The results folder's README.md: the run it holds and what each file written is
    (``figures``: name -> the data each figure drawn was drawn from; ``page``: report.html too)."""
    from vdla import plots

    lines = [f"# vdla run {Path(report.model).name}: the offload study's results", "",
             f"Model {report.model} at {report.resolution}x{report.resolution}, configuration {report.config_name} "
             f"({report.fingerprint}), target {report.target}. Times are modelled (CPU, host) or simulated "
             "(accelerator); the paper's values, where shown, are its measurements.", "",
             "| file | what it is |", "|---|---|",
             "| `layers.csv` | one row per op of the network: placement and its reason, MACs, cycles, seconds, "
             "the CPU's modelled time, the host's work around an offload, GOPS and utilisation |",
             "| `summary.json` | the run's report without the per-layer rows: totals, quantization, input, "
             "output hash, wall time |"]
    for name in plots.FIGURES:
        if name not in figures:
            continue
        about = plots.ABOUT[name]
        if name == "timeline":
            about += f": {figures[name]['layer']} ({figures[name]['why']})"
        formats = ", ".join(f"`{name}.{ext}`" for ext in plots.FORMATS)
        lines.append(f"| {formats} | {about} |")
        lines.append(f"| `{name}.csv` | the data of {name}: every bar, point or span it draws, unrounded |")
    if page:
        lines.append(f"| `{PAGE}` | all of the above on one self-contained page (figures embedded, the layer table "
                     "sortable, the configuration and the model's sources): open it in a browser, offline |")
    lines.append(f"| `{README}` | this file |")
    return "\n".join(lines) + "\n"


def csv_text(rows: list[dict], fields: list[str] | None = None) -> str:
    """``rows`` as CSV text with a header (``fields``, default the first row's keys; no rows and
    no fields: an empty text)."""
    if not rows and not fields:
        return ""
    buf = io.StringIO(newline="")
    writer = csv.DictWriter(buf, fieldnames=fields or list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def write_outputs(report, out_dir: Path, outputs=None, progress=_progress, timings=None, worker=None,
                  timeline_layer: str | None = None, config=None) -> list[Path]:
    """The per-layer CSV, the summary JSON, the four figures of the study, each with its data as
    CSV, and a README.md saying what each file is into ``out_dir``,
    as one set (:func:`study_files`: files of an earlier run it does not write again are
    removed). Staged in ``outputs`` (a :class:`vdla.outputs.Outputs`) for the caller's commit,
    or, without one, put in place before returning. Returns the destinations. The figures are
    drawn by ``worker`` (a :class:`vdla.figure_worker.FigureWorker`, started before the run:
    the same bytes, drawn on the other core while the roofline's variants are computed here),
    or, without one, in this process. ``timings`` (a dict), if given, receives the wall seconds
    of the roofline's variants without latency hiding (``roofline_variants``) and of the
    figures apart from those (``figures``: with a worker, the data sent, the wait for its
    answer and the files staged: what --plots adds to the run besides the variants).
    ``timeline_layer``: the layer the timeline shows (default: :func:`vdla.plots.timeline_layer`'s
    choice); a name it cannot show raises ``VdlaError`` before anything is written. ``config``
    (the run's :class:`vdla_hw.config.Config`): with it, report.html too (vdla/report_html.py)."""
    import time

    from vdla import plots
    from vdla.network import roofline_without_latency_hiding
    from vdla.outputs import Outputs
    from vdla_hw.files import json_text

    if outputs is None:
        with Outputs() as own:
            write_outputs(report, out_dir, own, progress, timings, worker, timeline_layer, config)
            return own.commit()
    shown = plots.timeline_layer(report, timeline_layer) if plots.timeline_layers(report) or timeline_layer else None
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
    if shown:  # the timeline is about an offloaded layer: by default where overlap is the question
        forked.append(("timeline", plots.timeline_data(report, *shown)))
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
    drawn = dict(forked + here + late)
    for name in plots.FIGURES:
        if name in files:
            written += plots.save(name, files[name], out_dir, outputs)
            written.append(outputs.write(out_dir / f"{name}.csv", csv_text(plots.rows(name, drawn[name]))))
    if config is not None:  # the page needs the configuration's sources, which the report does not keep
        from vdla import report_html

        page = report_html.run_page(summary, rows, {name: files[name]["png"] for name in plots.FIGURES
                                                    if name in files}, config.describe())
        written.append(outputs.write(out_dir / PAGE, page))
    written.append(outputs.write(out_dir / README, results_readme(report, drawn, page=config is not None)))
    timings["figures"] = time.perf_counter() - start - timings["roofline_variants"]
    progress(f"drew {len(files) * len(plots.FORMATS)} figure files ({timings['figures']:.1f} s)")
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
    if args.timeline_layer and not args.plots:
        raise VdlaError(f"--timeline-layer {args.timeline_layer} chooses the layer of --plots's timeline; "
                        "add --plots DIR")
    if args.max_work != SIM_MAX_WORK and args.target != "sim":
        raise VdlaError(f"--max-work bounds the simulator's work (--target sim); --target {args.target} has its own bound")
    plot_dir = Path(args.plots) if args.plots else None
    check_writable([*(study_files(plot_dir) if plot_dir else ()), *((args.output,) if args.output else ())])
    options = PartitionOptions(stem_on_vdla=args.stem_on_vdla, add_on_vdla=args.add_on_vdla,
                               fc_on_vdla=args.fc_on_vdla, depthwise_on_vdla=args.depthwise_on_vdla)
    calibration = args.calibration if args.calibration is not None else 4
    with contextlib.ExitStack() as stack:
        # the figures' process, started now: matplotlib's set-up overlaps the run (vdla.figure_worker)
        worker = stack.enter_context(FigureWorker()) if plot_dir else None
        _run(args, options, calibration, plot_dir, worker)
    return 0


def _run(args, options, calibration, plot_dir, worker) -> None:
    import numpy as np

    from compiler.network.report import median_error, table
    from vdla.network import run_network
    from vdla_hw.config import load_config
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
            write_outputs(report, plot_dir, outputs, timings=report.timings, worker=worker,
                          timeline_layer=args.timeline_layer, config=load_config(args.config))
        if args.output:
            outputs.write(args.output, lambda fh: save_outputs(fh, report))
        written = outputs.commit()
    if args.json:
        print(json_text(report.as_dict(), indent=2))
    else:
        print(table(report.records, report.totals))
        q = report.quantization
        print(f"quantization on {q['test_inputs']} inputs ({q['test_source']}): median per-layer error "
              f"{median_error(q['per_layer_error'].values())}")
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
    run.add_argument("--plots", type=output_dir, metavar="DIR", help="write layers.csv, summary.json, the four figures (each with its data as CSV) and a README.md here")
    run.add_argument("--timeline-layer", metavar="LAYER",
                     help="the offloaded layer --plots's timeline shows (default: the one whose load and compute "
                          "overlap least)")
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
    run.add_argument("--depthwise-on-vdla", action="store_true",
                     help="let depthwise convs (and grouped ones of fewer input channels per group than a GEMM "
                          "block) run on VDLA as block-diagonal GEMMs of 16 channels")
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
