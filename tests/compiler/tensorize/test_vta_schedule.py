"""VTA's AutoTVM conv2d knobs as schedules (compiler/tensorize/vta_schedule.py, vta_replay.py):
strict parsing with one-line errors naming the knob, the mapping of the 10 PYNQ-Z1 records, a
replayed layer bit-exact against numpy, the instruction counts and `vdla compile --vta-schedule`."""

import copy
import json

import pytest

import vdla_sim
from compiler.accel import compile_layer, layer_output, random_tensors
from compiler.layers import Conv2D
from compiler.paper import board_records
from compiler.quantize import reference as ref
from compiler.tensorize.schedule import Plan, Schedule, ScheduleError
from compiler.tensorize.vta_replay import record_layer
from dse.vta_replay import replay
from compiler.tensorize.vta_schedule import differences, parse_knobs, to_schedule, vta_counts, vta_schedule
from vdla.cli import main

RECORDS = {r["record"]: r for r in board_records("vta")}
R00 = RECORDS["r00"]   # layer4.0.conv1: 14x14, 256 -> 512, 3x3 stride 2; oc_nthread 2
# a small layer whose knobs use every feature: two column tiles (VTA's order differs from ours
# there), row threads, two reduction steps
SMALL = Conv2D(name="small", h=8, w=8, ic=32, oc=64, k=3, stride=1, pad=1, shift=8, relu=True)
SMALL_KNOBS = [["tile_b", "sp", [1, 1]], ["tile_h", "sp", [2, 4]], ["tile_w", "sp", [2, 4]],
               ["tile_ci", "sp", [2, 1]], ["tile_co", "sp", [2, 2]], ["oc_nthread", "ot", 1], ["h_nthread", "ot", 2]]


def _with(knobs, name, value):
    knobs = copy.deepcopy(knobs)
    for entry in knobs:
        if entry[0] == name:
            entry[2] = value
    return knobs


def test_record_maps_to_vta_loop_nest():
    layer = record_layer(R00)
    knobs = parse_knobs(R00["knobs"], layer)
    assert (knobs.tile_h, knobs.tile_co, knobs.oc_nthread, knobs.tiles) == ((1, 7), (2, 16), 2, 2)
    s = to_schedule(knobs)
    assert s == Schedule(th=7, tw=7, toc=16, tic=1, vthreads=2, order="vta", h_threads=1, row_loop=1)
    assert vta_schedule(json.dumps(R00["knobs"]), layer) == s          # JSON text too
    assert Schedule.parse(s.text()) == s                               # the text round-trips


@pytest.mark.parametrize("knobs, knob, message", [
    (_with(R00["knobs"], "tile_h", [2, 7]), "tile_h", "factors 2 x 7 = 14 but the layer has 7 output rows"),
    (_with(R00["knobs"], "tile_w", [7]), "tile_w", "is not two positive factors"),
    (_with(R00["knobs"], "tile_ci", [0, 16]), "tile_ci", "is not two positive factors"),
    (_with(R00["knobs"], "tile_co", [4, 4]), "tile_co", "16 but the layer has 32 output-channel blocks"),
    (_with(R00["knobs"], "tile_b", [1, 2]), "tile_b", "batch blocks"),
    (_with(R00["knobs"], "oc_nthread", 0), "oc_nthread", "not a positive integer"),
    (_with(R00["knobs"], "oc_nthread", 4), "oc_nthread", "4 threads do not divide tile_co's outer factor 2"),
    (_with(R00["knobs"], "h_nthread", 2), "h_nthread", "do not divide tile_h's outer factor 1"),
    (R00["knobs"][:-1], "h_nthread", "missing"),
    (R00["knobs"] + [["tile_h", "sp", [1, 7]]], "tile_h", "given twice"),
    (R00["knobs"] + [["unroll", "ot", 1]], "unroll", "unknown knob"),
    ([["tile_h", "ot", [1, 7]]] + R00["knobs"][:1], "tile_h", "type 'ot', expected 'sp'"),
    ('[["tile_b", "sp", [1, 1]', "vta-schedule", "not JSON"),
    ({"tile_b": [1, 1]}, "vta-schedule", "expected a list"),
    ([["tile_b", "sp"]], "vta-schedule", "is not [name, type, value]"),
])
def test_bad_knob_lists_are_one_line_errors_naming_the_knob(knobs, knob, message):
    with pytest.raises(ScheduleError) as err:
        parse_knobs(knobs, record_layer(R00))
    text = str(err.value)
    assert f": {knob}: " in text and message in text and "\n" not in text, text


def test_the_ten_records_map_and_fit_vta_pynq():
    assert len(RECORDS) == 10
    for rid, record in RECORDS.items():
        layer = record_layer(record)
        plan = Plan(layer, _pynq(), vta_schedule(record["knobs"], layer))
        # VTA's kernel shape: one tile row of uops (tic x K x K x tw); without it r06 (8x56-pixel
        # tiles, 2 threads) would need 2 x 4480 uops, more than vta-pynq's 8192
        assert plan.schedule.row_loop == 1 and plan.uop_per_thread == (plan.kstep + 1) * plan.schedule.tw, rid


def _pynq():
    from vdla_hw.config import load_config

    return load_config("vta-pynq")


def test_vta_threads_take_rows_and_oc_tiles_as_vta_does():
    plan = Plan(SMALL, _pynq(), vta_schedule(SMALL_KNOBS, SMALL))
    assert plan.items()[:3] == [(0, 0, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1)]      # n, row, oc tile, column
    rows = [{item[1] for item in items} for items in plan.thread_items()]
    assert rows == [{0}, {1}]                                                   # h_nthread 2 splits rows
    oc = Plan(SMALL, _pynq(), Schedule(th=4, tw=4, toc=2, tic=1, vthreads=2, order="vta", h_threads=1))
    assert [{item[3] for item in items} for items in oc.thread_items()] == [{0}, {1}]
    with pytest.raises(ScheduleError, match="h_threads: 2 row threads do not divide the 1 tile rows"):
        Plan(SMALL, _pynq(), Schedule(th=8, tw=4, toc=2, tic=1, vthreads=2, h_threads=2))


@pytest.mark.parametrize("layer, schedule", [
    (Conv2D(h=9, w=12, ic=48, oc=40, k=3, stride=2, pad=1, shift=7), "th=3,tw=3,toc=2,tic=3,vthreads=2,row_loop=1"),
    (Conv2D(h=12, w=12, ic=32, oc=32, k=1, stride=2, shift=7), "th=5,tw=6,toc=1,tic=2,row_loop=1"),
    (Conv2D(h=7, w=8, ic=16, oc=16, k=5, pad=2, shift=9), "th=3,tw=4,toc=1,tic=1,tky=1,row_loop=1"),
    (Conv2D(h=6, w=6, ic=16, oc=32, k=3, pad=1, shift=0, per_channel_shift=True),
     "th=3,tw=6,toc=2,tic=1,vthreads=2,row_loop=1"),
], ids=["stride2-tic3-edges", "1x1-row-step", "5x5-tky1", "per-channel-shift"])
def test_row_loop_programs_are_bit_exact(layer, schedule):
    t = random_tensors(layer, 2)
    bundle = compile_layer(layer, "vta-pynq", tensors=t, schedule=schedule, store=False)
    got = layer_output(bundle, vdla_sim.simulate(bundle).dram)
    kw = {"shift": t["shift"]} if layer.per_channel_shift else {"shift": layer.shift}
    assert (got == ref.conv2d(t["input"], t["weight"], t["bias"], stride=layer.stride, pad=layer.pad,
                              lo=layer.lo, hi=layer.hi, **kw)).all()


def test_row_loop_refuses_narrow_rows_and_partial_ic_tiles():
    layer = Conv2D(name="c", h=5, w=5, ic=48, oc=16, k=3, pad=1)
    with pytest.raises(ScheduleError, match="row_loop: a tile row of 1 pixels is below the 3"):
        Plan(layer, _pynq(), Schedule(th=2, tw=4, toc=1, tic=1, row_loop=1))
    with pytest.raises(ScheduleError, match="row_loop: tic=2 must divide the 3 input-channel blocks"):
        Plan(layer, _pynq(), Schedule(th=5, tw=5, toc=1, tic=2, row_loop=1))


def test_small_vta_schedule_bit_exact_with_vta_counts():
    t = random_tensors(SMALL, 4)
    bundle = compile_layer(SMALL, "vta-pynq", tensors=t, schedule=vta_schedule(SMALL_KNOBS, SMALL))
    got = layer_output(bundle, vdla_sim.simulate(bundle).dram)
    assert (got == ref.conv2d(t["input"], t["weight"], t["bias"], stride=1, pad=1, shift=8, relu=True)).all()
    d = differences(SMALL, SMALL_KNOBS, "vta-pynq", bundle.insns())
    # 8 tiles (2 rows x 2 oc x 2 columns), 2 reduction steps each
    assert d["vta"] == {"load_inp": 16, "load_wgt": 16, "load_acc": 0, "load_uop": 10, "gemm": 24, "alu": 24,
                        "store": 8, "sync": None, "finish": 1}
    assert d["ours"]["gemm"] == 24 and d["ours"]["load_inp"] == 16 and d["ours"]["alu"] == 32
    assert any("cannot lower this schedule" in n for n in d["notes"])        # tw < OW: no 2-D store
    assert differences(SMALL, SMALL_KNOBS)["ours"] == d["ours"]            # compiles it itself


def test_replay_smallest_record_is_bit_exact():
    out = replay(RECORDS["r09"])   # layer4.0.downsample: 1x1, 14x14, 256 -> 512
    assert out["exact"] and out["record"] == "r09" and out["clock_mhz"] == 100
    assert out["seconds"] == pytest.approx(out["cycles"] / 100e6)
    assert out["schedule"] == "th=7,tw=7,toc=16,tic=1,vthreads=2,order=vta,h_threads=1,row_loop=1"
    counts = out["counts"]
    assert counts["vta"] == vta_counts(parse_knobs(RECORDS["r09"]["knobs"], record_layer(RECORDS["r09"])))
    for kind in ("load_inp", "load_wgt", "gemm", "store"):
        assert counts["delta"][kind] == 0, kind
    assert counts["delta"]["load_acc"] == 2 and counts["delta"]["alu"] == 2    # the bias: 2 tiles
    assert out["measured_s"] == RECORDS["r09"]["measured_s"]


@pytest.mark.slow
@pytest.mark.parametrize("rid", sorted(RECORDS))
def test_replay_every_record_is_bit_exact(rid):
    assert replay(RECORDS[rid])["exact"]


def _cli(capsys, *argv):
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


def test_cli_vta_schedule(tmp_path, capsys):
    base = ["compile", "conv2d", "--h", 8, "--w", 8, "--ic", 32, "--oc", 64, "--k", 3, "--pad", 1, "--shift", 8,
            "--relu", "--config", "vta-pynq"]
    (tmp_path / "knobs.json").write_text(json.dumps(SMALL_KNOBS))
    code, err = _cli(capsys, *base, "--vta-schedule", f"@{tmp_path / 'knobs.json'}", "-o", tmp_path / "a.npz")
    assert code == 0 and "schedule th=4,tw=4,toc=2,tic=1,vthreads=2,order=vta,h_threads=2,row_loop=1" in err, err
    for extra, message in ((["--schedule", "th=1,tw=1,toc=1,tic=1"], "--schedule and --vta-schedule exclude"),
                           (["--vthreads", 2], "--vthreads does not combine with --vta-schedule"),
                           ([], "tile_co: factors 2 x 2 = 4 but the layer has 2 output-channel blocks")):
        argv = [*base, "--vta-schedule", json.dumps(SMALL_KNOBS), *extra, "-o", tmp_path / "b.npz"]
        if not extra:
            argv[argv.index("--oc") + 1] = 32
        code, err = _cli(capsys, *argv)
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_cli_vta_schedule_file_that_is_a_fifo_is_refused_at_once(tmp_path):
    """`--vta-schedule @FIFO` opened the path with open(), which waits for a writer forever;
    it is read like every user's text file (files.read_capped). A child process, so a regression
    fails by its timeout instead of hanging the suite."""
    import os
    import subprocess
    import sys

    fifo = tmp_path / "knobs.json"
    os.mkfifo(fifo)
    argv = ["compile", "conv2d", "--h", "8", "--w", "8", "--ic", "32", "--oc", "64", "--k", "3", "--pad", "1",
            "--shift", "8", "--config", "vta-pynq", "--vta-schedule", f"@{fifo}", "-o", str(tmp_path / "a.npz")]
    done = subprocess.run([sys.executable, "-m", "vdla", *argv], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [f"vdla: error: {fifo}: the --vta-schedule file is not a regular file"]
