"""VTA paper Fig. 8 reproduced: ResNet-18 and ResNet-34 on the Cortex-A9 alone and with VTA.

    python -m experiments.vta_fig8 [--out results] [--resolution 224] [--config vta-pynq-board] [--models resnet18 resnet34]

Runs each model through ``vdla.network.run_network`` with the options that select the VTA
paper's system (:data:`OPTIONS`, each with its source; an option this build lacks is named, not
faked): VTA's PYNQ build, the A9 baseline in FP32 on both cores, and the placement of VTA's
deployment flow (everything between the stem's max pool and the global average pool on VTA:
convolutions and residual adds; the stem and the classifier on the CPU). Prints each bar, ours
beside the paper's, with its relative error and the pass band of issue 23 (the VTA bars of
ResNet-18 and -34 within +-15 %; the A9 bars are reported with no band), the bars that miss,
and every model parameter with its source. The VTA bars are given with two host models
(:data:`HOST_RUNTIMES`, ``vdla.host_runtime``): ours (this project's driver: each offloaded op's
tensors packed, copied and unpacked by the CPU, back-off polling) and VTA's runtime (spin
polling, the instruction stream written per call, packed layouts kept on the device); each
model runs once per host model. Writes ``OUT/vta_fig8.csv``, ``vta_fig8_options.csv``,
``vta_fig8_parameters.csv`` and ``vta_fig8.png``/``.pdf``. Nothing is fitted to Fig. 8.
"""

from __future__ import annotations

import sys
from pathlib import Path

from compiler import paper
from experiments import study
from experiments.study import Option

NAME = "vta_fig8"
MODELS = ("resnet18", "resnet34")
VTA_BAND = 0.15   # issue 23, "Done when": the VTA bars of ResNet-18 and -34 within +-15 %
COMPARED = r"fig(ure)?\.?\s*8\b"  # a parameter source citing this figure is flagged
FLOW = "apache/tvm vta/tutorials/frontend/deploy_classification.py, VTA's published ResNet flow"

OPTIONS = [
    Option("config", "vta-pynq-board", "VTA paper, evaluation: VTA on the PYNQ-Z1 (VTA's pynq_sample.json: 1x16x16 "
           "int8, 256 kB weights, 100 MHz), with VTA's HLS DMA and the ACP's latency and rate calibrated on two "
           "tophub ResNet-18 layer records, not on this figure (experiments.board_calibration; vdla_hw/presets.py "
           "gives every parameter's source, listed below)"),
    Option("cpu", "cortex-a9", "VTA paper Fig. 8: the PYNQ-Z1's ARM Cortex-A9 is the CPU baseline and the host"),
    Option("placement", "all", "VTA's flow places by rule, not by a cost model: graph_pack offloads the whole "
           f"packed region ({FLOW})"),
    Option("stem_on_vdla", False, f"the first conv stays on the CPU in FP32 (quantize skip_conv_layers=[0], {FLOW})"),
    Option("add_on_vdla", True, "graph_pack packs from nn.max_pool2d to nn.global_avg_pool2d: the residual adds "
           f"run on VTA's ALU with the convolutions ({FLOW})"),
    Option("fc_on_vdla", False, f"graph_pack stops at nn.global_avg_pool2d: the classifier runs on the CPU ({FLOW})"),
    Option("cpu_baseline", "fp32", "VTA paper Fig. 8: the CPU baselines are TVM-autotuned FP32 "
           "(compiler/data/vta_paper_latency.csv header)"),
    Option("cpu_threads", 2, "TVM's runtime runs one worker per core unless TVM_NUM_THREADS is set "
           "(apache/tvm src/runtime/threading_backend.cc, MaxConcurrency); the Zynq-7020 has two A9 cores"),
    Option("host_runtime", "ours, vta", "both host models, each run in turn (issue 44 item 5): ours, this "
           "project's driver, and VTA's runtime as apache/tvm-vta publishes it (vdla/host_runtime.py gives each "
           "part's source, listed below)"),
]
HOST_RUNTIMES = ("ours", "vta")
RUNTIME_TITLES = {"ours": "", "vta": " (VTA's runtime)"}


PARTS = (("layer0", "stem conv (CPU)"), ("conv", "other convolutions"), ("other", "other ops"),
         ("host", "host around offloads"))  # the categories of ours listed under the VTA bar (unbanded)


def bars(model: str, report, vta_report=None) -> list[dict]:
    """The model's A9 bar (the CPU-only run, no band) and VTA bar (CPU + VTA, +-15 %), ours vs the
    paper's in milliseconds, what ours is made of (the paper gives totals only), and the speedup
    (no band); with ``vta_report`` (the same run under VTA's host runtime) its VTA bar, parts and
    speedup too."""
    theirs = paper.vta_fig8()[model]
    title = model.replace("resnet", "ResNet-")
    a9 = theirs["cortex_a9_ms"]
    rows = [study.compare(f"{title} Cortex-A9", 1e3 * report.totals["cpu_only_s"], a9, "ms", None)]
    for runtime, run in (("ours", report), ("vta", vta_report)):
        if run is None:
            continue
        t, vta, name = run.totals, theirs["vta_pynq_z1_ms"], title + RUNTIME_TITLES[runtime]
        parts = t["categories"]["cpu_plus_vdla"]
        rows += [study.compare(f"{name} VTA", 1e3 * t["offload_s"], vta, "ms", VTA_BAND),
                 *(study.compare(f"{name} VTA:   of which {what}", 1e3 * parts.get(key, 0.0), None, "ms", None)
                   for key, what in PARTS),
                 *(study.compare(f"{name} VTA:     host: {part}", 1e3 * seconds, None, "ms", None)
                   for part, seconds in t.get("host_parts", {}).items()),
                 study.compare(f"{name} speedup", t["speedup"], a9 / vta if a9 and vta else None, "x", None)]
    return rows


def figure(reports: dict, rows: list[dict], resolution: int):
    """Left: per model, the A9 and VTA bars, ours stacked by category and the paper's (hatched,
    totals only); right: each bar's error and band."""
    from vdla import plots

    plt = study.pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8), gridspec_kw={"width_ratios": [1.2, 1]})
    ticks, names, x, tallest = [], [], 0, 0.0
    for model, report in reports.items():
        theirs, cats = paper.vta_fig8()[model], report.totals["categories"]
        for system, paper_ms, key in (("A9", theirs["cortex_a9_ms"], "cpu_only"),
                                      ("VTA", theirs["vta_pynq_z1_ms"], "cpu_plus_vdla")):
            bottom = 0.0
            for cat in plots.CATEGORIES:
                value = 1e3 * cats[key].get(cat, 0.0)
                left.bar(x, value, bottom=bottom, color=plots.COLORS[cat], edgecolor="black", linewidth=0.5,
                         label=plots.LABELS[cat] if x == 0 else None)
                bottom += value
            left.text(x, bottom, f"{bottom:.0f}", ha="center", va="bottom", fontsize=7)
            tallest = max(tallest, bottom, paper_ms or 0.0)
            if paper_ms is not None:
                left.bar(x + 1, paper_ms, color="white", edgecolor="black", hatch="//", linewidth=0.5,
                         label="paper (total)" if x == 0 else None)
                left.text(x + 1, paper_ms, f"{paper_ms:.0f}", ha="center", va="bottom", fontsize=7)
            ticks += [x, x + 1]
            names += [f"{model}\n{system} ours", f"{model}\n{system} paper"]
            x += 2.5
        x += 0.5
    left.set_xticks(ticks, names, fontsize=6)
    left.set_ylabel("inference latency (ms)")
    left.set_ylim(0, 1.08 * tallest)
    setting = "" if resolution == paper.PAPER_RESOLUTION else \
        f" at {resolution} (the paper measured {paper.PAPER_RESOLUTION}: no comparison)"
    left.set_title(f"VTA paper Fig. 8 vs ours{setting}", fontsize=9)
    left.legend(fontsize=7, loc="upper left")
    study.error_panel(right, rows)
    right.set_title("relative error per bar", fontsize=9)
    fig.tight_layout()
    return fig


def main(argv=None) -> int:
    parser = study.parser(__doc__, "vta-pynq-board")
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS), help="default: both")
    args = parser.parse_args(argv)
    return study.guarded(NAME, lambda: run(args))


def run(args) -> int:
    from vdla.network import run_network

    out = Path(args.out)
    study.check_outputs(out, NAME)
    kwargs, option_rows = study.run_kwargs(study.with_config(OPTIONS, args.config))
    runtimes = [name.strip() for name in kwargs.pop("host_runtime").split(",")]
    reports, rows = {}, []
    for model in args.models:
        runs = {}
        for runtime in runtimes:
            print(f"== {model}, host runtime {runtime}", file=sys.stderr)
            runs[runtime] = run_network(model, resolution=args.resolution, host_runtime=runtime,
                                        progress=lambda m: print(m, file=sys.stderr), **kwargs)
        reports[model] = runs["ours"]
        rows += bars(model, runs["ours"], runs.get("vta"))
    first = next(iter(reports.values()))
    parameter_rows = study.network_parameters(kwargs.get("config"), first, COMPARED) + \
        study.runtime_parameters("vta", kwargs.get("config"), COMPARED)
    written = study.write_study(out, NAME, rows, option_rows, parameter_rows, figure(reports, rows, args.resolution))
    study.show(f"VTA paper Fig. 8: {', '.join(args.models)} at {args.resolution}x{args.resolution} on "
               f"{first.config_name} (CPU {kwargs.get('cpu')})", option_rows, rows,
               study.verdict(rows, args.resolution == paper.PAPER_RESOLUTION), parameter_rows, written,
               first.totals["time_basis"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
