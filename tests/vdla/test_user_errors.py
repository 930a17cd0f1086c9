"""Regression tests for the inputs of issue 11 that ended in tracebacks: each is now one line on
stderr with exit status 2 (or, where the input is valid, a normal result)."""

import json
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.vdla.test_cli import EXAMPLE, run
from vdla.cli import main


def one_line_error(capsys, *argv, words):
    """Exit status 2 and the error as the last line of stderr (progress lines may come before)."""
    code, out, err = run(capsys, *argv)
    last = err.rstrip("\n").splitlines()[-1] if err.strip() else ""
    assert code == 2 and last.startswith("vdla: error: ") and words in last, (code, err)
    assert "Traceback" not in err


@pytest.fixture
def bundle(tmp_path, capsys):
    path = tmp_path / "b.npz"
    assert run(capsys, "asm", EXAMPLE, "-o", path)[0] == 0
    return path


@pytest.mark.parametrize("command", ["sim", "disasm", "exec", "rtl"])
def test_a_npy_array_is_not_a_bundle(capsys, tmp_path, command):
    np.save(tmp_path / "arr.npy", np.zeros(3))
    one_line_error(capsys, command, tmp_path / "arr.npy", words="is a single .npy array, not a bundle")


@pytest.mark.parametrize("key, value, words", [
    ("version", 2, "bundle format version 2; this vdla reads version 1"),
    ("format", "zip", "key 'format' is 'zip', not 'vdla-bundle'"),
    ("config", "/etc/hostname", "key 'config' must hold the configuration as JSON"),
])
def test_bundle_format_and_version_are_checked(capsys, bundle, key, value, words):
    with np.load(bundle) as npz:
        fields = {k: npz[k] for k in npz.files}
    fields[key] = np.array(value)
    np.savez(bundle, **fields)
    one_line_error(capsys, "sim", bundle, words=words)


def test_asm_data_messages(capsys, tmp_path):
    src = tmp_path / "d.s"
    for line, words in ((".data a acc -4 random 1", "element count -4 is negative"),
                        (".data a acc 99999999999 random 1", "past the 128 MiB limit"),
                        (".data a acc 4 random -1", "random seed -1 must be")):
        src.write_text(f".config tiny\n{line}\nFINISH\n")
        one_line_error(capsys, "asm", src, "-o", tmp_path / "d.npz", words=words)


def test_the_112_byte_program_is_refused_before_it_runs(capsys, tmp_path):
    """A 16383 x 16383 loop of 3 uops: 805 M uops; the simulator was OOM-killed at 23.5 GB."""
    src = tmp_path / "l.s"
    src.write_text(".uops k 0,0,0 1,0,0 2,0,0\nLOAD uop sram=0 dram=k x=3\nGEMM uop=0:3 iter=16383x16383\nFINISH\n")
    path = tmp_path / "l.npz"
    assert run(capsys, "asm", src, "-o", path)[0] == 0
    start = time.perf_counter()
    one_line_error(capsys, "sim", path, words="instruction 1 (GEMM) brings the program's work on the simulator past")
    one_line_error(capsys, "exec", path, words="instruction 1 (GEMM) brings the program's serial work to 805,208,")
    assert time.perf_counter() - start < 30


def test_compile_refuses_a_layer_larger_than_the_device_image(capsys, tmp_path):
    start = time.perf_counter()
    one_line_error(capsys, "compile", "conv2d", "--h", 4096, "--w", 4096, "--ic", 512, "--oc", 512, "--k", 3,
                   "-o", tmp_path / "x.npz", words="need 16.0 GiB of DRAM, more than the 128 MiB")
    assert time.perf_counter() - start < 30 and not (tmp_path / "x.npz").exists()


def test_serve_bitstream_needs_the_pynq_backend(capsys):
    one_line_error(capsys, "serve", "--backend", "sim", "--bitstream", "x.bit", words="--bitstream is for --backend pynq")


def _save(graph, path, **kwargs):
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path), **kwargs)
    return path


def _conv_graph(weight):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], name="c")
    return helper.make_graph([node], "g", [x], [y], [numpy_helper.from_array(weight.astype(np.float32), "w")])


def test_onnx_with_a_missing_external_data_file(capsys, tmp_path):
    weight = np.random.default_rng(0).standard_normal((4, 3, 3, 3))
    path = _save(_conv_graph(weight), tmp_path / "ext.onnx", save_as_external_data=True,
                 all_tensors_to_one_file=True, location="ext.onnx.data", size_threshold=0)
    (tmp_path / "ext.onnx.data").unlink()
    one_line_error(capsys, "run", path, words="cannot read its tensors")


def test_onnx_with_a_nan_weight(capsys, tmp_path):
    weight = np.random.default_rng(0).standard_normal((4, 3, 3, 3))
    weight[0, 0, 0, 0] = np.nan
    one_line_error(capsys, "run", _save(_conv_graph(weight), tmp_path / "nan.onnx"),
                   words="initializer 'w' holds 1 NaN or infinite values")


def test_int8_identity_only_model_runs(capsys, tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.INT8, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.INT8, [1, 3, 8, 8])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"], name="i")], "g", [x], [y])
    code, out, err = run(capsys, "run", _save(graph, tmp_path / "ident.onnx"))
    assert code == 0 and "median per-layer error n/a" in out, err
    # nothing offloaded: said so, not "0.00 ms on VDLA speedup 0.0x"
    assert "offloaded ops alone:                none (nothing is offloaded)" in out and "0.0x" not in out, out


def test_run_refuses_tensors_beyond_the_limit_before_quantizing(capsys, tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8192, 8192])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8192, 8192])
    weight = np.ones((4, 3, 3, 3), np.float32)
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], name="c")
    graph = helper.make_graph([node], "g", [x], [y], [numpy_helper.from_array(weight, "w")])
    one_line_error(capsys, "run", _save(graph, tmp_path / "big.onnx"), words="more than the 32 MiB limit")


def test_run_plots_into_an_existing_file_fails_before_the_run(capsys, tmp_path):
    (tmp_path / "f").write_text("")
    start = time.perf_counter()
    with pytest.raises(SystemExit):
        main(["run", "resnet18", "--plots", str(tmp_path / "f")])
    assert "exists and is not a folder" in capsys.readouterr().err and time.perf_counter() - start < 5


# --- issue 22 item 4: per-backend work bounds, checked before running; duplicate asm fields --------
LIMITS_LOOP = ".uops k 0,0,0 1,0,0 2,0,0\nLOAD uop sram=0 dram=k x=3\n{insn} uop=0:{n} iter=16383x16383\nFINISH\n"


def _assembled(capsys, tmp_path, text, name="l"):
    src, path = tmp_path / f"{name}.s", tmp_path / f"{name}.npz"
    src.write_text(text)
    assert run(capsys, "asm", src, "-o", path)[0] == 0
    return path


@pytest.mark.parametrize("insn, n", [("GEMM", 3), ("GEMM", 1), ("ALU add", 1)])
def test_the_limits_loop_is_refused_by_exec_sim_and_rtl_before_running(capsys, tmp_path, insn, n):
    """vdla_hw/limits.py's 112-byte 16383 x 16383 loop; with one uop it is 268 M uops, under the
    cycle bound: `vdla exec` ran it for about 2.6 hours."""
    path = _assembled(capsys, tmp_path, LIMITS_LOOP.format(insn=insn, n=n))
    one_line_error(capsys, "exec", path, words="instruction 1 (")
    one_line_error(capsys, "sim", path, words="brings the program's work on the simulator past the limit")
    one_line_error(capsys, "rtl", path, words="cycles on the RTL (icarus, cocotb bench)")


def test_exec_one_uop_loop_names_the_uop_bound(capsys, tmp_path):
    path = _assembled(capsys, tmp_path, LIMITS_LOOP.format(insn="GEMM", n=1))
    one_line_error(capsys, "exec", path, words="268,402,693 in all, about 2.7 h at the measured")


def test_a_program_at_the_bound_runs_and_one_step_over_is_refused(capsys, tmp_path):
    from vdla_hw import program, work
    from vdla_hw.bundle import Bundle
    from vdla_sim import cost

    path = _assembled(capsys, tmp_path, open(EXAMPLE).read())
    bundle = Bundle.load(path)
    steps = work.of(program.decode_checked(bundle), bundle.config).steps
    ref = sum(work.reference_units(s) for s in steps)
    sim = cost.program_work(bundle)
    assert run(capsys, "exec", path, "--max-uops", ref)[0] == 0
    one_line_error(capsys, "exec", path, "--max-uops", ref - 1, words=f"past the limit of {ref - 1:,} micro-ops")
    assert run(capsys, "sim", path, "--max-work", sim)[0] == 0
    one_line_error(capsys, "sim", path, "--max-work", sim - 1, words=f"it needs {sim:,} in all")
    floor = work.of(program.decode_checked(bundle), bundle.config).min_cycles
    one_line_error(capsys, "rtl", path, "--max-cycles", floor - 1, words=f"needs at least {floor:,} cycles")


@pytest.mark.parametrize("line, field", [("LOAD inp sram=0 dram=0 x=4 x=5", "x_size"),
                                         ("GEMM uop=0:1 iter=2x2 uop=0:2", "uop_bgn/uop_end"),
                                         ("ALU add uop=0:1 imm=3 push_next push_next", "push_next")])
def test_asm_refuses_a_field_given_twice(capsys, tmp_path, line, field):
    src = tmp_path / "d.s"
    src.write_text(f".config tiny\n{line}\nFINISH\n")
    one_line_error(capsys, "asm", src, "-o", tmp_path / "d.npz", words=f"d.s:2: ")
    one_line_error(capsys, "asm", src, "-o", tmp_path / "d.npz", words=f"field {field} is given twice")
    assert not (tmp_path / "d.npz").exists()


@pytest.mark.parametrize("content, words", [
    (b"PK\x03\x04" + bytes(range(256)) * 8, "not a readable .npz file (corrupt or truncated"),
    (b"\x00garbage" * 300, "not a numpy .npy/.npz file"),
    ("truncated", "not a readable .npz file (corrupt or truncated"),
    ("bad deflate", "not a readable .npz file (corrupt or truncated"),
    ("huge header", "its header announces"),
])
def test_a_garbage_calibration_array_is_a_one_line_error(capsys, tmp_path, content, words):
    """Issue 22: a garbage --calibration .npz ended in `internal error` (BadZipFile, zlib.error)."""
    path = tmp_path / "cal.npz"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content == "huge header":   # an .npy whose header announces 2**40 floats
        header = np.lib.format.header_data_from_array_1_0(np.zeros(1, np.float32))
        header["shape"] = (1 << 40,)
        with open(tmp_path / "cal.npy", "wb") as fh:
            np.lib.format.write_array_header_1_0(fh, header)
        path = tmp_path / "cal.npy"
    else:
        np.savez_compressed(path, x=np.random.default_rng(0).standard_normal((4, 3, 32, 32)).astype(np.float32))
        raw = bytearray(path.read_bytes())
        if content == "truncated":
            raw = raw[: len(raw) // 2]
        else:
            raw[80:120] = b"\xff" * 40
        path.write_bytes(bytes(raw))
    one_line_error(capsys, "run", "resnet18", "--resolution", "32", "--calibration", path, words=words)


@pytest.mark.parametrize("option", ["space", "--energy-table"])
def test_sweep_files_are_capped_and_checked(capsys, tmp_path, option):
    """Issue 22: the sweep space and energy table were read whole (`/dev/zero` until memory ran out)."""
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    space = EXAMPLE.parent / "sweep_resnet18.json"
    for bad, words in (("/dev/zero", "is not a regular file"), (deep, "JSON nested too deeply")):
        argv = ["sweep", bad, "-o", tmp_path / "out"] if option == "space" else \
            ["sweep", space, "-o", tmp_path / "out", "--energy-table", bad]
        one_line_error(capsys, *argv, words=words)
