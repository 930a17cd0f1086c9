"""CPU baselines as data (compiler/data/baselines): sourced, checked, and what prices each op;
CpuModel with baseline= and threads=."""

import json
from importlib import resources

import pytest

import compiler.cpu_fallback as cf
from compiler.cpu_fallback.cost import BaselineError, CpuError, CpuModel, baseline_names, load_baseline
from compiler.cpu_fallback.cost.baselines import parse_baseline
from vdla_hw.errors import VdlaError

CONV = cf.Conv2dSpec(n=1, c=8, h=14, w=14, oc=16, kh=3, kw=3, stride=2, pad=1, shift=8, relu=True)


def raw(name):
    return json.loads(resources.files("compiler").joinpath("data", "baselines", f"{name}.json").read_text())


def test_baselines_name_what_they_are_and_every_parameter_a_source():
    assert baseline_names() == ["fp32", "int8", "tcpu"]
    fp32 = load_baseline("fp32")
    assert "spatial-pack" in fp32.source and "v0.5 (2018)" in fp32.source
    assert fp32.values["conv_tile"] == [1, 2, 8] and all(len(fp32.sources[k]) > 20 for k in fp32.values)
    assert fp32.as_dict()["params"]["conv_tile"]["source"] == fp32.sources["conv_tile"]


def test_bad_baseline_data_is_one_clear_error():
    with pytest.raises(BaselineError, match="unknown CPU baseline 'fp16'; known: fp32, int8"):
        load_baseline("fp16")
    data = raw("fp32")
    del data["params"]["conv_tile"]["source"]
    with pytest.raises(BaselineError, match="parameter conv_tile needs a value and a source"):
        parse_baseline("fp32", data)
    data = raw("fp32")
    data["params"]["conv_tile"]["value"] = [1, 2]
    with pytest.raises(BaselineError, match="conv_tile must be three positive ints"):
        parse_baseline("fp32", data)
    assert issubclass(BaselineError, VdlaError)


def test_fp32_prices_each_op_by_the_fp32_kernel_of_the_same_shape():
    fp32 = load_baseline("fp32")
    ((kernel, calls),) = fp32.price(CONV).kernels
    assert kernel.family == "fp32_conv2d" and calls == 1
    assert (kernel.c, kernel.h, kernel.w, kernel.oc, kernel.kh, kernel.stride, kernel.pad, kernel.relu) == \
        (8, 14, 14, 16, 3, 2, 1, True)
    assert (kernel.oh, kernel.ow) == (CONV.oh, CONV.ow) and (kernel.vh, kernel.vw, kernel.vc) == (1, 2, 8)
    add = fp32.price(cf.AddSpec(size=999, shift=1, relu=True)).kernels[0][0]
    assert (add.family, add.size, add.inputs, add.relu) == ("fp32_eltwise", 999, 2, True)
    assert fp32.price(cf.QuantizeSpec(size=100, frac=5)).kernels == ()     # a float network has none
    pack = cf.PackSpec(n=1, c=16, h=4, w=4)
    assert fp32.price(pack).kernels == ((pack, 1),) and fp32.price(pack).stand_in
    assert load_baseline("int8").price(CONV).kernels == ((CONV, 1),)


def test_tcpu_prices_a_conv_of_the_2018_table_by_the_int8_pack_kernel_with_that_entrys_tile():
    tcpu = load_baseline("tcpu")
    table = tcpu.values["conv_schedules"]
    assert len(table) == 12 and "arm_conv2d.py" in tcpu.sources["conv_schedules"]
    assert all(len(tcpu.sources[k]) > 20 for k in tcpu.values)
    for entry in table:  # each entry's own shape gets its own tile, whichever the entry
        spec = cf.Conv2dSpec(n=1, c=entry["IC"], h=entry["H"], w=entry["W"], oc=entry["OC"], kh=entry["K"],
                             kw=entry["K"], stride=entry["stride"], pad=entry["pad"], shift=8, relu=True)
        ((kernel, calls),) = tcpu.price(spec).kernels
        assert kernel.family == "int8_pack_conv2d" and calls == 1 and not tcpu.price(spec).stand_in
        assert (kernel.c, kernel.h, kernel.oc, kernel.kh, kernel.stride, kernel.pad) == \
            (entry["IC"], entry["H"], entry["OC"], entry["K"], entry["stride"], entry["pad"])
        want = (entry["vh"], entry["vw"], entry["vc"]) if entry["schedule"] == "SpatialPack" else \
            (1, entry["vp"], entry["vq"])
        assert (kernel.vh, kernel.vw, kernel.vc) == want and kernel.ann_reduce == ("none", "none")
        unrolled = entry["unroll"] or entry["schedule"] == "Im2ColPack"  # im2col unrolls vim always
        assert kernel.ann_spatial == ("none", "unroll" if unrolled else "none", "vec")
    stem = cf.Conv2dSpec(n=1, c=3, h=224, w=224, oc=64, kh=7, kw=7, stride=2, pad=3, shift=8, relu=True)
    assert (tcpu.price(stem).kernels[0][0].vw, tcpu.price(stem).kernels[0][0].vc) == (8, 4)  # SpatialPack(1, 8, 4, ...)
    # a shape the table lacks (TVM raised 'no schedule'): our int8 conv stands in, and says so
    assert tcpu.price(CONV).kernels == ((CONV, 1),) and tcpu.price(CONV).stand_in
    assert "schedule table" in tcpu.stand_in_note and "FP32" in load_baseline("fp32").stand_in_note
    add = cf.AddSpec(size=999, shift=1, relu=True)  # the same int8 graph: other ops are themselves
    assert tcpu.price(add).kernels == ((add, 1),) and not tcpu.price(add).stand_in


def test_a_malformed_schedule_table_is_one_clear_error():
    data = raw("tcpu")
    data["params"]["conv_schedules"]["value"][0]["schedule"] = "Winograd"
    with pytest.raises(BaselineError, match=r"conv_schedules\[0\] needs a 'schedule' of"):
        parse_baseline("tcpu", data)
    data = raw("tcpu")
    del data["params"]["conv_schedules"]["value"][3]["vc"]
    with pytest.raises(BaselineError, match=r"conv_schedules\[3\] \(SpatialPack\) needs exactly the keys"):
        parse_baseline("tcpu", data)
    data = raw("tcpu")
    data["params"]["conv_schedules"]["value"][9]["unroll"] = 1
    with pytest.raises(BaselineError, match=r"conv_schedules\[9\]: .* unroll a bool"):
        parse_baseline("tcpu", data)


def test_cpu_model_prices_by_the_baseline_and_names_it_and_the_threads():
    int8, fp32 = CpuModel("cortex-a9", workers=0), CpuModel("cortex-a9", baseline="fp32", workers=0)
    a, b = int8.kernel_cost(CONV), fp32.kernel_cost(CONV)
    assert a.parts["priced_by"] == ["conv2d"] and b.parts["priced_by"] == ["fp32_conv2d"]
    assert a.seconds != b.seconds and "fp32 baseline" in b.basis
    assert fp32.kernel_cost(cf.QuantizeSpec(size=100, frac=5)).seconds == 0
    stood_in = CpuModel("cortex-a9", baseline="tcpu", workers=0).kernel_cost(CONV)  # no table entry: ours
    assert stood_in.cycles == a.cycles and stood_in.basis.endswith("(our int8 conv: no entry of this shape in the "
                                                                   "baseline's schedule table)")
    two = CpuModel("cortex-a9", baseline="fp32", threads=2, workers=0)
    assert two.describe()["threads"] == 2 and "2 threads" in two.basis
    assert two.describe()["baseline"]["name"] == "fp32"


def test_two_threads_are_faster_but_not_twice_as_fast():
    spec = cf.AddSpec(size=64 * 28 * 28, shift=1, relu=True)
    one = CpuModel("cortex-a9", workers=0).kernel_cost(spec)
    two = CpuModel("cortex-a9", threads=2, workers=0).kernel_cost(spec)
    assert two.parts["cores"] == 2 and two.parts["fork_join_cycles"] == pytest.approx(5e-6 * 650e6)
    assert one.seconds / 2 < two.seconds < one.seconds
    pack = cf.PackSpec(n=1, c=16, h=8, w=8)  # no split rule: one core, no fork/join
    assert CpuModel("cortex-a9", threads=2, workers=0).kernel_cost(pack).cycles == \
        CpuModel("cortex-a9", workers=0).kernel_cost(pack).cycles


def test_thread_counts_beyond_the_model_are_refused():
    with pytest.raises(CpuError, match="3 threads cannot be modelled"):
        CpuModel("cortex-a9", threads=3)
