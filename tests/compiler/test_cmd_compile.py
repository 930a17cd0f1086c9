"""`vdla compile conv2d|dense` (vdla/cmd_compile.py): bundles that compute the layer; one-line
errors with exit status 2."""

import numpy as np
import pytest

import vdla_sim
from compiler.accel import layer_output
from vdla.cli import main
from vdla_hw import alu
from vdla_hw.bundle import Bundle

from compiler.quantize import reference as ref


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_compile_conv2d_with_given_tensors(tmp_path, capsys):
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, (1, 6, 7, 5), dtype=np.int8)
    w = rng.integers(-128, 128, (5, 6, 3, 3), dtype=np.int8)
    b = rng.integers(-999, 999, (5,), dtype=np.int32)
    for name, arr in (("x", x), ("w", w), ("b", b)):
        np.save(tmp_path / f"{name}.npy", arr)
    out = tmp_path / "layer.npz"
    code, _, err = run(capsys, "compile", "conv2d", "--h", 7, "--w", 5, "--ic", 6, "--oc", 5, "--k", 3, "--stride", 2,
                       "--pad", 1, "--shift", 5, "--relu", "--config", "tiny", "--vthreads", 2,
                       "--input", tmp_path / "x.npy", "--weight", tmp_path / "w.npy", "--bias", tmp_path / "b.npy",
                       "-o", out)
    assert code == 0 and "vthreads=2" in err
    bundle = Bundle.load(out)
    got = layer_output(bundle, vdla_sim.simulate(bundle).dram)
    assert (got == ref.conv2d(x, w, b, stride=2, pad=1, shift=5, relu=True)).all()


def test_compile_dense_random_with_schedule(tmp_path, capsys):
    out = tmp_path / "fc.npz"
    code, _, err = run(capsys, "compile", "dense", "--n", 2, "--ic", 40, "--oc", 9, "--shift", 6, "--config", "osdi18",
                       "--schedule", "th=1,tw=2,toc=1,tic=1", "-o", out)
    assert code == 0, err
    bundle = Bundle.load(out)
    assert layer_output(bundle, vdla_sim.simulate(bundle).dram).shape == (2, 9)


def test_compile_errors_are_one_line(tmp_path, capsys):
    cases = [
        (["--k", 3, "--pad", 20], "pad: 20 exceeds the 4-bit LOAD pad fields"),
        (["--k", 3, "--schedule", "th=99,tw=1,toc=1,tic=1"], "schedule.th: 99 exceeds the layer's 6 (output rows)"),
        (["--k", 3, "--schedule", "th=2"], "schedule.tw: missing"),
        (["--k", 3, "--schedule", "th=2,tw=2,toc=1,tic=1,speed=9"], "bad item 'speed=9'"),
        (["--k", 3, "--input", tmp_path / "none.npy"], "--weight is missing"),
        (["--k", 3, "--config", "tiny", "--schedule", "th=6,tw=6,toc=1,tic=1"], "buffer of tiny holds"),
    ]
    for extra, message in cases:
        code, _, err = run(capsys, "compile", "conv2d", "--h", 8, "--w", 8, "--ic", 8, "--oc", 8, *extra,
                           "-o", tmp_path / "x.npz")
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, (extra, err)
    with pytest.raises(SystemExit) as usage:  # ranges are checked while parsing (vdla.argtypes)
        run(capsys, "compile", "conv2d", "--h", 8, "--w", 8, "--ic", 8, "--oc", 8, "--k", 3, "--vthreads", 0,
            "-o", tmp_path / "x.npz")
    err = capsys.readouterr().err
    assert usage.value.code == 2 and "--vthreads: 0 is outside" in err and len(err.strip().splitlines()) == 1


def test_a_long_compile_prints_its_steps(tmp_path, capsys, monkeypatch):
    from compiler.tensorize import search
    from vdla import cmd_compile

    search._SEARCHED.clear()
    argv = ["compile", "conv2d", "--h", 9, "--w", 9, "--ic", 24, "--oc", 24, "--k", 3, "--pad", 1, "--seed", 21,
            "-o", tmp_path / "a.npz"]
    code, _, err = run(capsys, *argv)
    assert code == 0 and "vdla compile:" not in err      # quick: no progress lines
    search._SEARCHED.clear()
    monkeypatch.setenv("VDLA_CACHE", "off")
    monkeypatch.setattr(cmd_compile, "PROGRESS_AFTER_S", 0.0)  # as if it had taken long
    code, _, err = run(capsys, *argv[:-1], tmp_path / "b.npz")
    assert code == 0
    assert "vdla compile: schedule search:" in err and "vdla compile: encoding: hiding latency" in err


def test_a_shift_vta_runs_as_a_left_shift_is_refused_unless_allowed(tmp_path, capsys):
    """--shift 16..31: VTA's HLS ALU reads a signed 5-bit amount (compiler.vta_compat)."""
    out = tmp_path / "fc.npz"
    for shift in (16, 31):
        code, _, err = run(capsys, "compile", "dense", "--ic", 16, "--oc", 8, "--shift", shift, "--config", "tiny",
                           "-o", out)
        assert code == 2 and f"--shift {shift}:" in err and "--allow-vta-incompatible" in err, err
        assert len(err.strip().splitlines()) == 1 and not out.exists()
    code, _, err = run(capsys, "compile", "dense", "--ic", 16, "--oc", 8, "--shift", 15, "--config", "tiny", "-o", out)
    assert code == 0, err
    code, _, err = run(capsys, "compile", "dense", "--ic", 16, "--oc", 8, "--shift", 20, "--config", "tiny",
                       "--allow-vta-incompatible", "-o", out)
    assert code == 0, err
    shr = [i for i in Bundle.load(out).insns() if i.kind == "ALU" and i.alu_opcode == alu.OPCODE["shr"]]
    assert [i.imm for i in shr] and all(i.imm == 20 for i in shr)


def test_network_shift_warning_names_the_accelerator_ops():
    from compiler.network.partition import Placement
    from compiler.quantize.qgraph import QNode
    from compiler.vta_compat import network_shift_warning, outside

    assert outside([-16, 0, 15]) == [] and outside(np.array([16, -17, 3, 16])) == [-17, 16]
    nodes = [QNode("c1", "conv", ["x"], "y", {"shift": 9}), QNode("c2", "conv", ["y"], "z", {"shift": np.array([3, 18])}),
             QNode("a1", "add", ["y", "z"], "s", {"a_shift": 17, "b_shift": 0, "shift": 4}),
             QNode("c3", "conv", ["s"], "t", {"shift": 20})]
    places = {"c1": Placement("vdla", ""), "c2": Placement("vdla", ""), "a1": Placement("vdla", ""),
              "c3": Placement("cpu", "")}
    line = network_shift_warning(nodes, places)
    assert line.startswith("warning: 2 accelerator op(s)") and "c2 (18)" in line and "a1 (-17)" in line
    assert "c1" not in line and "c3" not in line and "\n" not in line
    assert network_shift_warning(nodes[:1], places) is None
