"""The main job's disk caches (vdla.network): built models, quantized graphs, the quantization
report and the reference output are reused by a second run, with the same report, and every key
part that changes misses."""

import onnx
import pytest

from tests.dse.conftest import small_cnn
from vdla import network
from vdla.inputs import synthetic
from vdla_hw import cache

KINDS = ("model", "qgraph", "qreport", "reference")


@pytest.fixture
def fresh(cache_folder, tmp_path):
    """An empty cache folder and zeroed counters; the test's folder for its files."""
    return tmp_path


def onnx_file(folder, name="small.onnx", seed_change=False):
    model = small_cnn()
    if seed_change:  # one weight differs
        init = model.graph.initializer[0]
        array = onnx.numpy_helper.to_array(init).copy()
        array.flat[0] += 1.0
        init.CopyFrom(onnx.numpy_helper.from_array(array, init.name))
    path = folder / name
    onnx.save(model, str(path))
    return str(path)


def counts(kind):
    return dict(cache.stats.get(kind, {}))


def test_a_second_run_hits_every_cache_and_gives_the_same_report(fresh):
    path = onnx_file(fresh)
    first = network.run_network(path, placement="all").as_dict()
    assert all(counts(kind).get("miss") == 1 and not counts(kind).get("hit") for kind in KINDS), cache.stats
    second = network.run_network(path, placement="all").as_dict()
    assert all(counts(kind).get("hit") == 1 for kind in KINDS), cache.stats
    first.pop("wall_seconds"), second.pop("wall_seconds")
    assert second == first and second["bit_exact"]


def test_the_report_is_computed_beside_the_run_only_on_a_miss(fresh, monkeypatch):
    from vdla import beside

    forks = []
    real = beside.Beside._fork
    monkeypatch.setattr(beside.Beside, "_fork", lambda self: (forks.append(1), real(self)))
    path = onnx_file(fresh)
    first = network.run_network(path, placement="all").as_dict()
    assert forks == [1] and counts("qreport") == {"miss": 1, "stored": 1}
    network.run_network(path, placement="all")
    assert forks == [1] and counts("qreport")["hit"] == 1  # a hit: no child
    monkeypatch.setenv(beside.SWITCH_ENV, "off")
    monkeypatch.setenv("VDLA_CACHE", "off")
    inline = network.run_network(path, placement="all").as_dict()
    assert forks == [1]
    assert inline["quantization"] == first["quantization"]


def test_the_roofline_runs_are_done_beside_with_the_report(fresh, monkeypatch):
    from vdla import beside

    path = onnx_file(fresh)
    report = network.run_network(path, placement="all", roofline=True)
    offloaded = [r.name for r in report.records if r.placement == "vdla" and r.op == "conv"]
    assert offloaded and sorted(report.one_thread_timing) == sorted(offloaded)
    besides = network.roofline_without_latency_hiding(report)
    report.one_thread_timing = {}
    assert network.roofline_without_latency_hiding(report) == besides
    monkeypatch.setenv(beside.SWITCH_ENV, "off")
    monkeypatch.setenv("VDLA_CACHE", "off")  # no child: the runs are left to the roofline
    assert network.run_network(path, placement="all", roofline=True).one_thread_timing == {}
    assert not network.run_network(path, placement="all").one_thread_timing


def test_off_gives_the_same_report_without_entries(fresh, monkeypatch):
    path = onnx_file(fresh)
    on = network.run_network(path, placement="all").as_dict()
    monkeypatch.setenv("VDLA_CACHE", "off")
    monkeypatch.setattr(cache, "stats", {})
    off = network.run_network(path, placement="all").as_dict()
    assert not any(counts(kind).get("hit") for kind in KINDS)
    on.pop("wall_seconds"), off.pop("wall_seconds")
    assert on == off


def test_the_model_is_keyed_by_file_content_and_input_shape(fresh):
    a = network.built_model(onnx_file(fresh, "a.onnx"))
    assert counts("model") == {"miss": 1, "stored": 1}
    network.built_model(onnx_file(fresh, "renamed.onnx"))  # same bytes, other name: a hit
    assert counts("model")["hit"] == 1
    changed = network.built_model(onnx_file(fresh, "b.onnx", seed_change=True))
    assert counts("model")["miss"] == 2
    assert network.content_digest(changed) != network.content_digest(a)
    network.built_model(onnx_file(fresh, "a.onnx"), input_shape=(1, 3, 16, 16))
    assert counts("model")["miss"] == 3


def test_the_content_digest_does_not_depend_on_object_sharing():
    name = "".join(["la", "yer"])  # equal to "layer", another object
    shared, apart = ("layer", "layer"), ("layer", name)
    assert shared[1] is shared[0] and apart[1] is not apart[0]
    assert network.content_digest(shared) == network.content_digest(apart)
    assert network.content_digest(shared) != network.content_digest(("layer", "layer2"))


def test_a_built_in_model_is_keyed_by_resolution():
    assert network.model_source("resnet18") == network.model_source("resnet18")
    assert network.model_source("resnet18") != network.model_source("resnet34")
    assert network.model_source("no-such-file.onnx") is None  # load_model reports it, uncached
    with pytest.raises(network.ModelError):
        network.built_model("no-such-file.onnx")


def test_every_quantization_option_and_the_calibration_are_in_the_key(fresh):
    graph = network.built_model(onnx_file(fresh))
    shape = graph.shapes[graph.input]
    calib = synthetic(shape, 2, 1).array
    base = network.quantized(graph, calib, wide_output=True, add_scales=True)
    assert counts("qgraph")["miss"] == 1
    network.quantized(graph, calib.copy(), wide_output=True, add_scales=True)
    assert counts("qgraph")["hit"] == 1
    variants = [dict(calibration=synthetic(shape, 2, 9).array), dict(calibration=synthetic(shape, 3, 1).array),
                dict(wide_output=False), dict(add_scales=False), dict(method="minmax")]
    for i, change in enumerate(variants):
        options = {"calibration": calib, "wide_output": True, "add_scales": True, **change}
        network.quantized(graph, options.pop("calibration"), **options)
        assert counts("qgraph")["miss"] == 2 + i, change
    again = network.quantized(graph, calib, wide_output=True, add_scales=True)
    assert network.content_digest(again) == network.content_digest(base)


def test_the_report_is_keyed_by_the_test_inputs(fresh):
    graph = network.built_model(onnx_file(fresh))
    shape = graph.shapes[graph.input]
    q = network.quantized(graph, synthetic(shape, 2, 1).array)
    one = network.cached_quantization_report(graph, q, synthetic(shape, 2, 2))
    assert network.cached_quantization_report(graph, q, synthetic(shape, 2, 2)) == one
    assert counts("qreport") == {"miss": 1, "stored": 1, "hit": 1}
    other = network.cached_quantization_report(graph, q, synthetic(shape, 2, 3))
    assert counts("qreport")["miss"] == 2 and other != one
    assert one == network.quantization_report(graph, q, synthetic(shape, 2, 2))


def test_external_data_files_are_in_the_model_key(fresh):
    model = small_cnn()
    path = fresh / "ext.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="ext.onnx.data", size_threshold=0)
    assert network.external_files(path.read_bytes()) == ["ext.onnx.data"]
    first = network.built_model(str(path))
    assert counts("model") == {"miss": 1, "stored": 1}
    network.built_model(str(path))
    assert counts("model")["hit"] == 1
    data = fresh / "ext.onnx.data"
    raw = bytearray(data.read_bytes())
    raw[0] ^= 0x40  # one weight changes, the .onnx file does not
    data.write_bytes(bytes(raw))
    changed = network.built_model(str(path))
    assert counts("model")["miss"] == 2 and network.content_digest(changed) != network.content_digest(first)
    data.unlink()  # unreadable: not cached, load_model reports it
    assert network.model_source(str(path)) is None
    with pytest.raises(network.ModelError):
        network.built_model(str(path))


def test_synthetic_inputs_are_keyed_by_their_recipe_not_their_bytes(fresh, monkeypatch):
    """Synthetic inputs' key part is their recipe (count, shape, seed; issue 45: hashing four
    128 MiB inputs took 1.6 s), so equal recipes hit without the bytes hashed, any change in the
    recipe misses, and the first sample (the executed input) has a recipe of its own; inputs
    from a file keep their bytes as key."""
    graph = network.built_model(onnx_file(fresh))
    shape = graph.shapes[graph.input]
    one = synthetic(shape, 2, 1)
    assert one.key == ("recipe", "synthetic", 2, list(shape), 1)
    assert one.first(1).key == ("recipe", "synthetic", 2, list(shape), 1, "first", 1)
    assert (one.first(1).array == one.array[:1]).all()
    network.quantized(graph, one)
    network.quantized(graph, synthetic(shape, 2, 1))
    assert counts("qgraph") == {"miss": 1, "stored": 1, "hit": 1}
    for other in (synthetic(shape, 2, 2), synthetic(shape, 3, 1)):
        network.quantized(graph, other)
    assert counts("qgraph")["miss"] == 3
    held = network.Inputs(one.array, "file")
    assert held.key is held.array
