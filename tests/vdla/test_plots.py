"""Every figure renders for a network that is not ResNet-18 (its own bars, no paper bars or
points), and the paper's Fig. 21 / Fig. 10 appear beside ResNet-18 only at 224x224."""

import json

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from compiler import paper
from vdla.cli import main
from vdla.plots import plain_log_ticks, short_name

FIGURES = ("fig21_breakdown", "layer_speedup", "roofline", "timeline")


def small_net(path):
    """stem 3->16 (CPU), two 16->16 convs (VDLA) with a residual add, global pool, classifier."""
    rng = np.random.default_rng(0)
    inits = {"w0": rng.normal(0, 0.3, (16, 3, 3, 3)), "w1": rng.normal(0, 0.1, (16, 16, 3, 3)),
             "w2": rng.normal(0, 0.1, (16, 16, 3, 3)), "fw": rng.normal(0, 0.1, (10, 16)), "fb": np.zeros(10)}
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], pads=[1, 1, 1, 1], name="stem"),
             helper.make_node("Relu", ["c0"], ["r0"], name="stem_relu"),
             helper.make_node("Conv", ["r0", "w1"], ["c1"], pads=[1, 1, 1, 1], name="body1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="body1_relu"),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], name="body2"),
             helper.make_node("Add", ["c2", "r0"], ["s"], name="residual"),
             helper.make_node("Relu", ["s"], ["r2"], name="residual_relu"),
             helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="pool"),
             helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], transB=1, name="classifier")]
    graph = helper.make_graph(nodes, "tiny_resnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
                              [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_every_figure_renders_for_a_network_that_is_not_resnet(capsys, tmp_path):
    model = small_net(tmp_path / "tiny.onnx")
    out = tmp_path / "plots"
    assert main(["run", str(model), "--plots", str(out), "--placement", "all", "--json"]) == 0, capsys.readouterr().err
    timings = json.loads(capsys.readouterr().out)["wall_seconds"]
    assert timings["figures"] > 0 and timings["roofline_variants"] > 0  # --plots's phases (benchmarks/main_job.py)
    for name in FIGURES:
        for ext in ("png", "pdf"):
            assert (out / f"{name}.{ext}").stat().st_size > 1000, name
    summary = json.loads((out / "summary.json").read_text())
    assert summary["model"] == str(model) and summary["resolution"] == 16
    assert summary["totals"]["categories"]["cpu_plus_vdla"]["host"] > 0


def test_paper_bars_only_for_resnet18_at_224():
    assert paper.is_fig21_setting("resnet18", 224)
    assert not paper.is_fig21_setting("resnet18", 32) and not paper.is_fig21_setting("resnet34", 224)
    assert not paper.is_fig21_setting("tiny.onnx", 224)


def test_fig10_labels_by_shape():
    assert paper.fig10_label(56, 56, 64, 64, 3, 1, 1) == "C1"
    assert paper.fig10_label(7, 7, 512, 512, 3, 1, 1) == "C11"
    assert paper.fig10_label(8, 8, 16, 16, 3, 1, 1) is None


def test_fig10_labels_see_through_explicit_padding():
    from compiler.layers import Conv2D

    padded = Conv2D(name="c", h=58, w=58, ic=64, oc=64, k=3, stride=1, pad=0, shift=7)
    assert paper.fig10_label_of(padded) == "C1"
    assert paper.fig10_label_of(Conv2D(name="c", h=56, w=56, ic=64, oc=64, k=3, stride=1, pad=1, shift=7)) == "C1"
    assert paper.fig10_label_of(Conv2D(name="c", h=56, w=56, ic=64, oc=128, k=1, stride=2, pad=0, shift=7)) == "C4"
    assert paper.fig10_label_of(Conv2D(name="c", h=57, w=57, ic=64, oc=64, k=3, stride=1, pad=0, shift=7)) is None


def test_log_ticks_read_as_plain_numbers():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.set_yscale("log")
    ax.set_ylim(0.5, 300)
    plain_log_ticks(ax.yaxis)
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    plt.close(fig)
    assert "1" in labels and "100" in labels and not any("^" in t or "$" in t for t in labels)
    assert short_name("layer2.0.downsample.0") == "l2.0.ds" and short_name("layer1.1.conv2") == "l1.1.c2"


def test_figures_are_drawn_without_pyplot_and_the_timeline_spans_are_rasterized(tmp_path):
    """The study's figures use matplotlib's object API (no pyplot: its import and figure manager
    cost start-up time), in the figure worker: `vdla run --plots` itself never imports
    matplotlib (vdla.figure_worker). The timeline's instruction spans are one image in the PDF."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).parents[2]
    model = small_net(tmp_path / "tiny.onnx")
    out = tmp_path / "plots"
    code = ("import sys\nfrom vdla.cli import main\n"
            f"assert main(['run', {str(model)!r}, '--plots', {str(out)!r}, '--placement', 'all']) == 0\n"
            "print('matplotlib' in sys.modules)\n"
            "from vdla import figure_worker, plots\nfigure_worker.warm_up()\n"
            "plots.render('fig21_breakdown', {'bars': [('a', {'conv': 1.0}, False)], 'beside_paper': False, "
            "'name': 'n', 'resolution': 32, 'config_name': 'c'})\n"
            "print('matplotlib.pyplot' in sys.modules, 'matplotlib.backends.backend_agg' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-3:] == ["False", "False", "True"], done.stdout
    assert b"/Subtype /Image" in (out / "timeline.pdf").read_bytes()
    assert b"/Subtype /Image" not in (out / "layer_speedup.pdf").read_bytes()  # vector where it is cheap


def test_each_fig21_bar_says_which_system_it_is():
    from types import SimpleNamespace

    from vdla.plots import PAPER_SYSTEMS, fig21_data

    cats = {"layer0": 0.1, "conv": 1.0, "other": 0.1}
    cpu_model = {"name": "cortex-a9", "baseline": {"name": "fp32"}, "threads": 2}
    report = SimpleNamespace(model="resnet18", resolution=224, config_name="osdi18",
                             totals={"categories": {"cpu_only": cats, "cpu_plus_vdla": cats}, "cpu_model": cpu_model})
    labels = [label for label, _, _ in fig21_data(report)["bars"]]
    assert labels == ["CPU only\n(ours, modelled:\ncortex-a9, fp32, 2 cores)",
                      f"CPU only\n(paper, {PAPER_SYSTEMS[0]})",
                      "CPU + VDLA\n(ours, simulated:\nosdi18)", f"CPU + VDLA\n(paper, {PAPER_SYSTEMS[1]})"]
    assert not fig21_data(report)["paper_cpu"]  # fp32 is not the paper's CPU system: the panel says so
    cpu_model["baseline"] = {"name": "tcpu"}
    assert fig21_data(report)["paper_cpu"] and "(-device=tcpu)" in PAPER_SYSTEMS[0]
    report.resolution = 32
    assert [label for label, _, _ in fig21_data(report)["bars"]][0].endswith("cortex-a9, tcpu, 2 cores)")
