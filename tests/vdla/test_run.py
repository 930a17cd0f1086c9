"""`vdla run` and `vdla model`: the JSON contract, bad models named by node, and the full-size run."""

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from vdla.cli import main


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_run_json_has_the_documented_keys(capsys):
    code, out, err = run(capsys, "run", "resnet18", "--resolution", "32", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["bit_exact"] is True and len(report["output_sha256"]) == 64
    layer_keys = {"name", "op", "placement", "reason", "macs", "cycles", "seconds", "cpu_s", "cpu_cycles",
                  "cpu_basis", "host_s", "host", "utilization"}
    assert all(layer_keys <= set(layer) for layer in report["layers"])
    totals = report["totals"]
    assert {"cpu_only_s", "offload_s", "speedup", "amdahl_bound", "host_s", "cpu_model"} <= set(totals)
    assert "[33/33] fc" in err  # progress on stderr
    # Every CPU op's time comes from the code-level model; every offloaded op has host overheads.
    for layer in report["layers"]:
        if layer["op"] == "reshape":
            assert layer["cpu_s"] == 0 and layer["cpu_basis"] == "no work (a reshape)"
            continue
        assert layer["cpu_basis"] == "llvm-mca cortex-a9 + memory model, int8 baseline, 1 thread", layer
        assert layer["cpu_s"] > 0 and layer["cpu_cycles"] == pytest.approx(layer["cpu_s"] * 650e6)
        if layer["placement"] == "vdla":
            assert layer["host_s"] == pytest.approx(sum(layer["host"].values())) and layer["host_s"] > 0
            assert set(layer["host"]) == {"pack", "copy", "flush", "registers", "poll", "invalidate", "unpack"}
        else:
            assert layer["host_s"] == 0 and layer["seconds"] == layer["cpu_s"]
    assert totals["categories"]["cpu_plus_vdla"]["host"] == pytest.approx(totals["host_s"])
    assert totals["cpu_model"]["name"] == "cortex-a9" and totals["cpu_model"]["clock_hz"] == 650e6
    assert all(p["source"] for p in totals["cpu_model"]["params"].values())
    # The Amdahl bound counts the host's work as CPU-resident time.
    resident = sum(layer["seconds"] for layer in report["layers"] if layer["placement"] == "cpu") + totals["host_s"]
    assert totals["amdahl_bound"] == pytest.approx(totals["cpu_only_s"] / resident)
    # The loaded model: bundles written at load; per inference only the activations move.
    moved = totals["bytes_moved"]
    categories = {"weights", "uops", "insns", "activations_in", "activations_out", "other"}
    assert set(moved) == {"load", "per_inference"} and set(moved["load"]) == set(moved["per_inference"]) == categories
    assert moved["load"]["weights"] > 0 and moved["per_inference"]["activations_in"] > 0
    assert all(moved["per_inference"][k] == 0 for k in ("weights", "uops", "insns", "other"))


def test_run_other_cpu_gives_other_documented_times(capsys):
    _, a9, _ = run(capsys, "run", "resnet18", "--resolution", "32", "--json")
    code, a53, err = run(capsys, "run", "resnet18", "--resolution", "32", "--json", "--cpu", "cortex-a53")
    assert code == 0, err
    a9, a53 = json.loads(a9), json.loads(a53)
    assert a53["totals"]["cpu_model"]["name"] == "cortex-a53"
    assert a53["totals"]["cpu_model"]["clock_hz"] == 1.2e9
    stem9, stem53 = (next(layer for layer in r["layers"] if layer["name"] == "conv1") for r in (a9, a53))
    assert stem53["cpu_basis"] == "llvm-mca cortex-a53 + memory model, int8 baseline, 1 thread"
    assert stem53["cpu_s"] != stem9["cpu_s"] and a53["output_sha256"] == a9["output_sha256"]


def test_run_fp32_baseline_on_two_threads_prices_the_cpu_ops_only(capsys):
    _, int8, _ = run(capsys, "run", "resnet18", "--resolution", "32", "--json")
    code, fp32, err = run(capsys, "run", "resnet18", "--resolution", "32", "--json", "--cpu-baseline", "fp32",
                          "--cpu-threads", "2")
    assert code == 0, err
    int8, fp32 = json.loads(int8), json.loads(fp32)
    assert fp32["output_sha256"] == int8["output_sha256"]  # the functional path stays int8
    model = fp32["totals"]["cpu_model"]
    assert model["threads"] == 2 and model["baseline"]["name"] == "fp32" and model["baseline"]["source"]
    stem = next(layer for layer in fp32["layers"] if layer["name"] == "conv1")
    assert stem["cpu_basis"] == "llvm-mca cortex-a9 + memory model, fp32 baseline, 2 threads"
    assert fp32["totals"]["cpu_only_s"] != int8["totals"]["cpu_only_s"]
    quantize = next(layer for layer in fp32["layers"] if layer["op"] == "quantize")
    assert quantize["cpu_s"] == 0  # a float network has no quantize op


def test_run_rejects_an_unknown_baseline_or_thread_count(capsys):
    for option, value, why in (("--cpu-baseline", "fp16", "invalid choice"),
                               ("--cpu-threads", "3", "outside the allowed range [1, 2]")):
        with pytest.raises(SystemExit) as exc:
            main(["run", "resnet18", option, value])
        assert exc.value.code == 2
        assert why in capsys.readouterr().err


def test_run_rejects_an_unknown_cpu(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", "resnet18", "--cpu", "cortex-m0"])
    assert exc.value.code == 2
    assert "invalid choice: 'cortex-m0'" in capsys.readouterr().err


def test_model_then_run_the_file_gives_the_same_output(capsys, tmp_path):
    path = tmp_path / "r18.onnx"
    assert run(capsys, "model", "resnet18", "--resolution", "32", "-o", path)[0] == 0
    _, from_file, _ = run(capsys, "run", path, "--json")
    _, builtin, _ = run(capsys, "run", "resnet18", "--resolution", "32", "--json")
    assert json.loads(from_file)["output_sha256"] == json.loads(builtin)["output_sha256"]


def test_plots_are_written(capsys, tmp_path):
    code, out, _ = run(capsys, "run", "resnet18", "--resolution", "32", "--plots", tmp_path, "--placement", "all")
    assert code == 0
    for name in ("fig21_breakdown", "layer_speedup", "roofline", "timeline"):
        for ext in ("png", "pdf"):
            assert (tmp_path / f"{name}.{ext}").stat().st_size > 1000
    assert (tmp_path / "layers.csv").read_text().startswith("name,op,placement,reason")


def one_line_error(capsys, *argv, words):
    """Exit status 2; the error is the last stderr line (progress lines may precede it), no traceback."""
    code, _, err = run(capsys, *argv)
    last = err.rstrip("\n").splitlines()[-1]
    assert code == 2 and last.startswith("vdla: error: ") and "Traceback" not in err, err
    for word in words:
        assert word in last, err


def save_model(tmp_path, nodes, inits, name="bad.onnx"):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    path = tmp_path / name
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_bad_models_are_one_line_errors_naming_the_node(capsys, tmp_path):
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"this is not a model")
    one_line_error(capsys, "run", junk, words=["not an ONNX model file"])
    path = save_model(tmp_path, [helper.make_node("Erf", ["x"], ["y"], name="gate")], {})
    one_line_error(capsys, "run", path, words=["node 'gate' (Erf)", "unsupported op Erf"])
    path = save_model(tmp_path, [helper.make_node("Conv", ["x", "w"], ["y"], name="stem", kernel_shape=[3, 3])],
                      {"w": np.zeros((8, 4, 3, 3))})
    one_line_error(capsys, "run", path, words=["node 'stem' (Conv)", "does not match 3 input channels"])
    one_line_error(capsys, "run", tmp_path / "missing.onnx", words=["no such file"])


@pytest.mark.slow
def test_resnet18_full_size_is_bit_exact(capsys, tmp_path):
    """The main job at 224x224 (default osdi18), end to end, as the README writes it (with --plots)."""
    code, out, err = run(capsys, "run", "resnet18", "--json", "--plots", tmp_path)
    assert code == 0, err
    assert {"layers.csv", "summary.json", "fig21_breakdown.png", "roofline.png"} <= {p.name for p in tmp_path.iterdir()}
    report = json.loads(out)
    assert report["bit_exact"] is True
    totals = report["totals"]  # offloading pays, within its Amdahl bound (figures: docs/cpu_fallback.md)
    assert 1 < totals["speedup"] <= totals["amdahl_bound"] < totals["offloaded_speedup"]


def test_default_placement_is_never_slower_than_the_cpu_and_every_offload_wins(capsys):
    """At 64x64 (before the loaded-model runtime, every conv lost to the CPU alone there: host work)
    the cost placement offloads only ops that win: the network is no slower than the CPU and each
    op it offloads wins. (Keeping losers on the CPU: tests/compiler/network/test_placement_cost.py.)"""
    code, out, err = run(capsys, "run", "resnet18", "--resolution", "64", "--json")
    assert code == 0, err
    report = json.loads(out)
    totals = report["totals"]
    assert totals["placement"] == "cost" and totals["speedup"] >= 1 and totals["slower_offloads"] == []
    offloaded = [layer for layer in report["layers"] if layer["placement"] == "vdla"]
    assert offloaded
    for layer in offloaded:
        assert layer["seconds"] + layer["host_s"] < layer["cpu_s"], layer["name"]
        assert layer["offload"]["slower_than_cpu"] is False
        assert layer["estimate"]["chosen"] == "vdla" and " < CPU " in layer["reason"]
    assert "warning:" not in err


def test_default_placement_keeps_the_losers_on_the_cpu(capsys):
    """At 32x32 on two A9 cores the 1x1 stride-2 downsample convs lose when offloaded (see
    test_placement_all_flags_the_offloads_that_lose): the cost placement keeps them on the CPU, with
    the comparison as the reason, and the network stays faster than the CPU alone."""
    code, out, err = run(capsys, "run", "resnet18", "--resolution", "32", "--cpu-threads", "2", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["totals"]["speedup"] >= 1 and report["totals"]["slower_offloads"] == []
    kept = [layer for layer in report["layers"] if layer["estimate"].get("chosen") == "cpu"]
    assert "layer2.0.downsample.0" in {layer["name"] for layer in kept}
    assert all(layer["reason"].startswith("CPU ") for layer in kept)


def test_placement_all_flags_the_offloads_that_lose(capsys):
    code, out, err = run(capsys, "run", "resnet18", "--resolution", "32", "--placement", "all",
                         "--cpu-threads", "2")
    assert code == 0, err
    warning = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and "offloaded ops are slower than on the CPU alone" in warning[0]
    flagged = [line.split()[0] for line in out.splitlines() if " vdla! " in line]
    assert flagged and warning[0].startswith(f"warning: {len(flagged)} of 19 offloaded ops")
    _, js, _ = run(capsys, "run", "resnet18", "--resolution", "32", "--placement", "all", "--json",
                   "--cpu-threads", "2")
    report = json.loads(js)
    slower = [layer["name"] for layer in report["layers"] if layer["offload"] and layer["offload"]["slower_than_cpu"]]
    assert slower == flagged == report["totals"]["slower_offloads"]
    for layer in report["layers"]:
        if layer["name"] in slower:
            assert layer["offload"]["accelerator_s"] + layer["offload"]["host_s"] > layer["offload"]["cpu_s"]


def test_useful_work_of_the_padded_stem(capsys, tmp_path):
    """The 3-channel stem on VDLA fills 3 of 16 input lanes: its GEMM lanes' MACs are 16/3 of its
    useful ones, and so are its GOPS and utilisation, in the JSON, layers.csv and summary.json."""
    code, out, err = run(capsys, "run", "resnet18", "--resolution", "32", "--stem-on-vdla", "--placement", "all",
                         "--json", "--plots", tmp_path)
    assert code == 0, err
    report = json.loads(out)
    stem = next(layer for layer in report["layers"] if layer["name"] == "conv1")
    assert stem["placement"] == "vdla" and stem["macs"] * 3 == stem["useful_macs"] * 16
    assert stem["useful_gops"] == pytest.approx(stem["gops"] * 3 / 16)
    assert stem["useful_utilization"] == pytest.approx(stem["utilization"] * 3 / 16)
    body = next(layer for layer in report["layers"] if layer["name"] == "layer1.0.conv1")
    assert body["macs"] == body["useful_macs"] and body["useful_gops"] == body["gops"]  # whole blocks
    rows = (tmp_path / "layers.csv").read_text().splitlines()
    header = rows[0].split(",")
    assert {"macs", "useful_macs", "gops", "useful_gops", "utilization", "useful_utilization"} <= set(header)
    totals = json.loads((tmp_path / "summary.json").read_text())["totals"]
    assert totals["offloaded_useful_macs"] < totals["offloaded_macs"]
    assert totals["gemm_useful_gops"] < totals["gemm_gops"]


def test_a_3_to_10_channel_conv_on_vdla_counts_its_padded_lanes_apart(capsys, tmp_path):
    """3 input and 10 output channels fill 3 x 10 of the 16 x 16 GEMM lanes: the simulator's lane
    MACs are 256/30 of the useful ones, and so are the GOPS and the utilisation."""
    rng = np.random.default_rng(0)
    path = save_model(tmp_path, [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="narrow"),
                                 helper.make_node("MaxPool", ["c"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
                      {"w": rng.normal(0, 0.3, (10, 3, 3, 3))}, name="narrow.onnx")
    code, out, err = run(capsys, "run", path, "--stem-on-vdla", "--placement", "all", "--json")
    assert code == 0, err
    conv = next(layer for layer in json.loads(out)["layers"] if layer["name"] == "narrow")
    assert conv["placement"] == "vdla"
    pixels = 16 * 16
    assert conv["useful_macs"] == pixels * 10 * 3 * 9 and conv["macs"] == pixels * 9 * 16 * 16
    assert conv["useful_gops"] == pytest.approx(conv["gops"] * 30 / 256)
    assert conv["useful_utilization"] == pytest.approx(conv["utilization"] * 30 / 256)
    _, text, _ = run(capsys, "run", path, "--stem-on-vdla", "--placement", "all")
    line = next(line for line in text.splitlines() if line.startswith("narrow "))
    assert f"{conv['gops']:6.1f} {conv['useful_gops']:6.1f}" in line
