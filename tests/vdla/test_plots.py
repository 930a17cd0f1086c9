"""Every figure renders for a network that is not ResNet-18 (its own bars, no paper bars or
points), and the paper's Fig. 21 / Fig. 10 appear beside ResNet-18 only at 224x224."""

import json
import re

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


def _csv(path):
    import csv

    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_each_figures_csv_holds_what_the_report_says(capsys, tmp_path):
    """Every figure's data file beside it against the run's own report (layers.csv and
    summary.json, written by the same run), and the folder's README.md naming every file."""
    from pytest import approx

    from vdla.plots import FIGURES, overlap

    model = small_net(tmp_path / "tiny.onnx")
    out = tmp_path / "plots"
    assert main(["run", str(model), "--plots", str(out), "--placement", "all"]) == 0, capsys.readouterr().err
    layers = {row["name"]: row for row in _csv(out / "layers.csv")}
    totals = json.loads((out / "summary.json").read_text())["totals"]
    offloaded = [name for name, row in layers.items() if row["placement"] == "vdla" and float(row["seconds"])]
    assert len(offloaded) >= 2

    bars = _csv(out / "fig21_breakdown.csv")
    assert [b["source"] for b in bars] == ["ours", "ours"]  # no paper bars beside this network
    for bar, key, total in zip(bars, ("cpu_only", "cpu_plus_vdla"), ("cpu_only_s", "offload_s")):
        assert {c: float(bar[c]) for c in totals["categories"][key]} == approx(totals["categories"][key])
        assert float(bar["total_s"]) == approx(totals[total])

    speedup = _csv(out / "layer_speedup.csv")
    assert [r["layer"] for r in speedup] == offloaded + ["(whole network)", "(Amdahl bound)"]
    for row in speedup[:-2]:
        layer = layers[row["layer"]]
        cpu, acc, host = (float(layer[k]) for k in ("cpu_s", "seconds", "host_s"))
        assert float(row["speedup_alone"]) == approx(cpu / acc)
        assert float(row["speedup_with_host"]) == approx(cpu / (acc + host))
    assert float(speedup[-2]["speedup_with_host"]) == approx(totals["speedup"])
    assert float(speedup[-1]["speedup_with_host"]) == approx(totals["amdahl_bound"])

    points = _csv(out / "roofline.csv")
    convs = [n for n in offloaded if layers[n]["op"] == "conv" and int(layers[n]["bytes"])]
    assert [p["layer"] for p in points] == convs and {p["panel"] for p in points} == {"ours"}
    for p in points:
        layer = layers[p["layer"]]
        macs = int(layer["macs"])
        assert float(p["ops_per_byte"]) == approx(2 * macs / int(layer["bytes"]))
        assert float(p["gops_latency_hiding"]) == approx(2 * macs / float(layer["seconds"]) / 1e9)
        assert float(p["gops_no_latency_hiding"]) > 0 and float(p["ops_per_byte_no_latency_hiding"]) > 0

    spans = _csv(out / "timeline.csv")
    shown = {s["layer"] for s in spans}
    assert len(shown) == 1 and shown <= set(offloaded)
    assert {s["module"] for s in spans} == {"load", "compute", "store"}
    cycles = int(layers[shown.pop()]["cycles"])
    assert max(int(s["start_cycle"]) + int(s["cycles"]) for s in spans) <= cycles
    grouped = {m: [(int(s["start_cycle"]), int(s["cycles"])) for s in spans if s["module"] == m]
               for m in ("load", "compute", "store")}
    assert 0 <= overlap(grouped) <= 1

    readme = (out / "README.md").read_text()
    named = set(re.findall(r"`([^`/]+\.\w+)`", readme))
    assert named == {p.name for p in out.iterdir()}, named ^ {p.name for p in out.iterdir()}
    assert {f"{f}.csv" for f in FIGURES} <= named


def test_timeline_layer_chooses_the_layer_and_a_wrong_one_is_a_one_line_error(capsys, tmp_path):
    model = small_net(tmp_path / "tiny.onnx")
    out = tmp_path / "plots"
    argv = ["run", str(model), "--plots", str(out), "--placement", "all"]
    assert main([*argv, "--timeline-layer", "body2"]) == 0, capsys.readouterr().err
    assert {row["layer"] for row in _csv(out / "timeline.csv")} == {"body2"}
    assert "body2 (chosen with --timeline-layer)" in (out / "README.md").read_text()
    capsys.readouterr()
    for bad, words in (([*argv, "--timeline-layer", "stem"], ["--timeline-layer stem", "offloaded: body1, body2"]),
                       (["run", str(model), "--timeline-layer", "body1"], ["add --plots DIR"])):
        assert main(bad) == 2
        err = capsys.readouterr().err
        last = err.rstrip("\n").splitlines()[-1]
        assert last.startswith("vdla: error: ") and "Traceback" not in err, err
        assert all(w in last for w in words), last


def test_the_default_timeline_is_the_worst_overlapped_offloaded_layer():
    from types import SimpleNamespace

    from vdla.plots import overlap, timeline_layer

    def record(name, retire, placement="vdla"):
        return SimpleNamespace(name=name, placement=placement, extra={"run": SimpleNamespace(retire=retire)})

    hidden = [("load", 0, 10), ("compute", 0, 10), ("store", 10, 12)]      # load wholly under compute
    turns = [("load", 0, 10), ("compute", 10, 20), ("store", 20, 22)]      # they take turns
    half = [("load", 0, 10), ("compute", 5, 15), None]
    assert overlap({"load": [(0, 10)], "compute": [(0, 10)], "store": []}) == 1.0
    assert overlap({"load": [(0, 10)], "compute": [(10, 10)], "store": []}) == 0.0
    assert overlap({"load": [(0, 4), (2, 8)], "compute": [(5, 10)], "store": []}) == 0.5  # spans merged first
    report = SimpleNamespace(model="m", records=[record("busy", hidden), record("half", half), record("ds", turns),
                                                 record("cpu", turns, placement="cpu")])
    assert timeline_layer(report) == ("ds", timeline_layer(report)[1])
    assert timeline_layer(report, "half")[0] == "half"


def _boxes(fig):
    """Per axes, the boxes of its labels' text (without their leader lines)."""
    from matplotlib.text import Text

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    return [(ax, [Text.get_window_extent(t, renderer) for t in ax.texts]) for ax in fig.axes]


def test_roofline_labels_do_not_collide_and_the_x_axis_ends_near_the_data():
    """Points close together (C8/C5, C11/C9 in the issue) get labels that overlap neither each
    other nor a point, inside their panel; the x axis stops within 1.5x of the last point or
    ridge (it ran to 2000 past a last point near 600)."""
    from vdla.plots import _DRAW

    xs = [220, 230, 240, 90, 95, 100, 60, 600]
    ys = [46, 47, 45, 48, 44, 47, 22, 40]
    data = {"with_paper": True, "config_name": "vta-pynq", "peak": 51.2, "bw": 0.8, "layers": list("abcdefgh"),
            "xs": xs, "ys": ys, "useful": [None] * 8, "names": ["C8", "C5", "C1", "C11", "C9", "C3", "C4", "C6"],
            "no_lh": [(x * 1.3, y * 0.8) for x, y in zip(xs, ys)], "fig10": paper.fig10(), "name": "resnet18"}
    fig = _DRAW["roofline"](data)
    for ax, boxes in _boxes(fig):
        assert boxes
        frame = ax.get_window_extent()
        for k, box in enumerate(boxes):
            assert frame.contains(box.x0, box.y0) and frame.contains(box.x1, box.y1)
            assert not any(box.overlaps(other) for other in boxes[k + 1:]), ax.get_title()
        lo, hi = ax.get_xlim()
        assert hi <= 1.5 * max(600 * 1.3, 51.2 / 0.8, *(p["ops_per_byte"] for p in paper.fig10())) * 1.001
    assert len(_boxes(fig)[0][1]) == 8  # every point of ours labelled


def test_layer_speedup_ticks_cover_the_bars_and_slowdowns_hang_from_1x():
    from vdla.plots import _DRAW

    data = {"layers": ["a", "b", "c"], "names": ["a", "b", "c"], "alone": [32.0, 0.5, 3.0],
            "with_host": [20.0, 0.4, 2.0], "speedup": 1.5, "amdahl_bound": 4.0, "name": "n", "config_name": "c"}
    fig = _DRAW["layer_speedup"](data)
    ax = fig.axes[0]
    fig.canvas.draw()
    lo, hi = ax.get_ylim()
    ticks = [t.get_position()[1] for t in ax.get_yticklabels() if t.get_text() and lo <= t.get_position()[1] <= hi]
    assert max(ticks) >= 32 and min(ticks) <= 0.4  # a labelled tick beyond either end of the data
    spans = sorted((round(min(p.get_y(), p.get_y() + p.get_height()), 6), round(max(p.get_y(), p.get_y() + p.get_height()), 6))
                   for p in ax.patches)
    assert spans == sorted([(1.0, 32.0), (0.5, 1.0), (1.0, 3.0), (1.0, 20.0), (0.4, 1.0), (1.0, 2.0)])


def test_fig21_totals_share_one_precision():
    """The bars' totals are written with one number of decimals (it wrote 1.1 s beside 0.387 s)."""
    from vdla.plots import _DRAW, bar_decimals

    assert bar_decimals([1.13, 3.25, 0.235, 0.494]) == 3 and bar_decimals([12.5, 40.0]) == 1
    assert bar_decimals([0.0001]) == 3 and bar_decimals([250.0, 900.0]) == 0
    data = {"bars": [("a", {"conv": 1.1}, False), ("b", {"conv": 0.387}, False), ("c", {"conv": 3.25}, True)],
            "beside_paper": False, "name": "n", "resolution": 32, "config_name": "c"}
    texts = [t.get_text() for t in _DRAW["fig21_breakdown"](data).axes[0].texts]
    assert texts == ["1.100 s", "0.387 s", "3.250 s"]


def test_fig21_says_when_the_clocks_are_not_like_for_like():
    """osdi18-200 beside the paper's measured 100 MHz system: the title says it is not like for
    like; at the paper's clock it says both are at it."""
    from vdla.plots import _DRAW, paper_clock_mhz

    assert paper_clock_mhz() == 100
    bars = [("a", {"conv": 1.1}, False), ("b", {"conv": 3.25}, True)]
    base = {"bars": bars, "beside_paper": True, "name": "resnet18", "resolution": 224, "config_name": "osdi18-200",
            "paper_clock_mhz": 100}
    title = _DRAW["fig21_breakdown"]({**base, "clock_mhz": 200}).axes[0].get_title()
    assert "not like for like: our VDLA simulated at 200 MHz, the paper's measured at 100 MHz" in title
    title = _DRAW["fig21_breakdown"]({**base, "clock_mhz": 100}).axes[0].get_title()
    assert "both VDLA systems at 100 MHz" in title and "not like for like" not in title
