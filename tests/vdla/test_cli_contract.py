"""The contract of vdla/cli.py that every command gets: argument types checked while parsing
(ranges, output paths), one-line errors with exit status 2, a quiet end on a closed pipe, and
one line (status 1) for a bug. The parser walk holds every command, including ones added
later, to the convention."""

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from vdla import argtypes, cli
from vdla.cli import main

ROOT = Path(__file__).parents[2]
# options that name something the command writes, by dest
OUTPUT_DESTS = {"output", "image", "tensor", "trace", "plots", "vcd", "keep"}


def all_parsers(parser=None, path=("vdla",)):
    parser = parser or cli.build_parser()
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from all_parsers(sub, path + (name,))


def test_every_option_uses_a_checked_type():
    """No bare int/float (ranges are argtypes types) and every output option is an output type."""
    bad = []
    for path, parser in all_parsers():
        for action in parser._actions:
            where = f"{' '.join(path)} {'/'.join(action.option_strings) or action.dest}"
            if action.type in (int, float):
                bad.append(f"{where}: bare {action.type.__name__}; use argtypes.int_range/float_range")
            if action.dest in OUTPUT_DESTS and action.type not in argtypes.OUTPUT_TYPES:
                bad.append(f"{where}: writes a file but has type {action.type}; use argtypes.output_file/_dir")
    assert not bad, "\n".join(bad)


def test_every_parser_gives_one_line_usage_errors():
    for path, parser in all_parsers():
        assert isinstance(parser, argtypes.ArgumentParser), path


def usage_error(capsys, *argv, words):
    with pytest.raises(SystemExit) as err:
        main([str(a) for a in argv])
    out, text = capsys.readouterr()
    assert err.value.code == 2, text
    assert text.count("\n") == 1 and words in text and "Traceback" not in text, text
    return text


@pytest.mark.parametrize("argv, words", [
    (["serve", "--port", "99999"], "outside the allowed range [0, 65535]"),
    (["deploy", "resnet18", "--board", "127.0.0.1:9091", "--timeout", "-5"], "--timeout: -5 is outside"),
    (["deploy", "resnet18", "--board", "nohostport"], "is not HOST:PORT"),
    (["model", "resnet18", "--seed", "-1", "-o", "m.onnx"], "--seed: -1 is outside"),
    (["run", "resnet18", "--resolution", "100000"], "--resolution: 100000 is outside the allowed range [32, 704]"),
    (["sim", "x.npz", "--max-cycles", "-5"], "--max-cycles: -5 is outside"),
    (["rtl", "x.npz", "--max-cycles", "0"], "--max-cycles: 0 is outside"),
    (["compile", "conv2d", "--h", "x", "--w", "4", "--ic", "1", "--oc", "1", "--k", "1", "-o", "o.npz"],
     "'x' is not an integer"),
    (["compile", "dense", "--ic", "4", "--oc", "4", "--shift", "40", "-o", "o.npz"], "--shift: 40 is outside"),
])
def test_ranges_are_checked_while_parsing(capsys, argv, words):
    usage_error(capsys, *argv, words=words)


def outputs(tmp_path):
    """(argv, words): every command that writes, pointed below a regular file (unwritable even as root)."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    bad = blocker / "sub" / "x"
    bundle = tmp_path / "b.npz"
    return [
        (["asm", ROOT / "examples" / "vector_add.s", "-o", bad], "asm"),
        (["exec", bundle, "-o", bad], "exec"),
        (["sim", bundle, "-o", bad], "sim"),
        (["sim", bundle, "--output", bad], "sim"),
        (["sim", bundle, "--trace", bad], "sim"),
        (["rtl", bundle, "-o", bad], "rtl"),
        (["rtl", bundle, "--vcd", bad], "rtl"),
        (["compile", "dense", "--ic", "4", "--oc", "4", "-o", bad], "compile dense"),
        (["import-vta", tmp_path, "-o", bad], "import-vta"),
        (["export-vta", bundle, bad], "export-vta"),
        (["model", "resnet18", "-o", bad], "model"),
        (["hw", "verilog", "-o", bad], "hw verilog"),
        (["hw", "synth", "--keep", bad], "hw synth"),
        (["hw", "bitstream", "-o", bad], "hw bitstream"),
        (["run", "resnet18", "--plots", blocker], "run"),      # an existing file as the plots folder
        (["sweep", "space.json", "-o", blocker], "sweep"),      # an existing file as the sweep folder
        (["sim", bundle, "-o", tmp_path], "sim"),              # a folder as the output file
    ]


def test_unwritable_outputs_fail_while_parsing(capsys, tmp_path):
    for argv, command in outputs(tmp_path):
        text = usage_error(capsys, *argv, words=f"vdla {command}: error: argument ")
        assert "cannot write" in text or "is a directory" in text or "not a folder" in text, text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]  # nothing was written


def test_a_folder_that_refuses_files_fails_while_parsing(capsys, tmp_path):
    """Permission bits do not tell (root passes them on /proc and on read-only mounts): whether
    a folder takes files is tried, and the probe leaves nothing behind."""
    for argv, command in [(["run", "resnet18", "--plots", "/proc/vdla-plots"], "run"),
                          (["run", "resnet18", "--plots", "/proc/a/b"], "run"),
                          (["sim", "examples/vector_add.s", "-o", "/proc/out.npz"], "sim")]:
        text = usage_error(capsys, *argv, words=f"vdla {command}: error: argument ")
        assert "cannot write" in text and "/proc is not writable" in text, text
    assert argtypes.output_dir(str(tmp_path / "new")) and list(tmp_path.iterdir()) == []


def test_closed_pipe_ends_quietly(tmp_path):
    """`vdla regmap | head -1`: the reader goes away; no traceback, status 141 like a killed cat."""
    proc = subprocess.Popen([sys.executable, "-m", "vdla", "regmap"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(60) == cli.EXIT_BROKEN_PIPE and err == b"", err


def test_a_file_system_error_is_one_line(capsys, monkeypatch):
    def full(args):
        raise OSError(28, "No space left on device", "out.npz")

    monkeypatch.setattr(cli, "cmd_regmap", full)
    assert main(["regmap"]) == 2
    assert capsys.readouterr().err == "vdla: error: out.npz: No space left on device\n"


def test_a_bug_is_one_line_with_status_1(capsys, monkeypatch):
    def bug(args):
        return {}["missing"]

    monkeypatch.setattr(cli, "cmd_regmap", bug)
    monkeypatch.delenv("VDLA_DEBUG", raising=False)
    assert main(["regmap"]) == cli.EXIT_INTERNAL_ERROR
    err = capsys.readouterr().err
    assert err.startswith("vdla: internal error: KeyError") and err.count("\n") == 1
    monkeypatch.setenv("VDLA_DEBUG", "1")
    with pytest.raises(KeyError):
        main(["regmap"])


def test_output_types_accept_what_can_be_written(tmp_path):
    assert argtypes.output_file(str(tmp_path / "new.npz"))
    (tmp_path / "old.npz").write_text("")
    assert argtypes.output_file(str(tmp_path / "old.npz"))
    assert argtypes.output_dir(str(tmp_path / "a" / "b"))  # created by the command
    assert argtypes.output_dir(str(tmp_path))
    with pytest.raises(argparse.ArgumentTypeError, match="does not exist"):
        argtypes.output_file(str(tmp_path / "a" / "b.npz"))  # files get no folders made for them


def strict_json(text: str):
    """``json.loads`` refusing NaN and Infinity (not JSON; json.loads accepts them by default)."""
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_every_json_output_is_strict(capsys, tmp_path, monkeypatch):
    """--json wrote NaN/Infinity (not JSON) for a missing quantity; now null, for every command."""
    from tests.vdla.test_plots import small_net

    bundle = tmp_path / "b.npz"
    assert main(["compile", "dense", "--ic", "16", "--oc", "16", "-o", str(bundle)]) == 0
    model = small_net(tmp_path / "tiny.onnx")
    for argv in (["config", "show", "tiny", "--json"], ["exec", str(bundle), "--json"],
                 ["sim", str(bundle), "--json"], ["run", str(model), "--json"]):
        capsys.readouterr()
        assert main(argv) == 0, argv
        assert isinstance(strict_json(capsys.readouterr().out), dict), argv
    # hw synth --json: yosys is slow; its printing is what this checks, with a missing clock estimate
    import vdla_hw.rtl.fmax as fmax

    monkeypatch.setattr(fmax, "estimate_fmax", lambda *args, **kwargs: {"fmax_mhz": float("nan"),
                                                                      "slack_ns": float("-inf"), "lut": 1})
    capsys.readouterr()
    assert main(["hw", "synth", "--config", "tiny", "--json"]) == 0
    assert strict_json(capsys.readouterr().out) == {"fmax_mhz": None, "slack_ns": None, "lut": 1}


@pytest.mark.parametrize("kind", ["user", "internal"])
def test_an_error_line_is_capped_and_says_how_much_was_cut(capsys, monkeypatch, kind):
    """Issue 45 finding 14: an 8 MiB node name printed an 8 MB error line. The message after
    the prefix is now at most cli.ERROR_LIMIT characters, ending with how many were cut; short
    messages are unchanged."""
    import vdla_hw.config
    from vdla_hw.errors import VdlaError

    size = 8 << 20
    error = VdlaError if kind == "user" else RuntimeError

    def refuse(*_args, **_kwargs):
        raise error(f"node {'n' * size}: unsupported op")

    monkeypatch.setattr(vdla_hw.config, "load_config", refuse)
    code = main(["config", "show"])
    out, err = capsys.readouterr()
    prefix = "vdla: error: " if kind == "user" else "vdla: internal error: "
    assert code == (2 if kind == "user" else 1) and out == ""
    assert err.count("\n") == 1 and err.startswith(prefix) and "Traceback" not in err
    line = err[:-1]
    assert len(line) - len(prefix) <= cli.ERROR_LIMIT
    cut = len("node ") + size + len(": unsupported op") - (cli.ERROR_LIMIT - cli._CUT_MARKER_ROOM)
    if kind == "user":
        assert line.endswith(f"nnn ... [{cut} more characters cut]")
    else:  # the hint after the cut message stays
        assert " more characters cut] (a bug: please report it" in line and line.endswith("shows the traceback)")
    assert cli._capped("node a: unsupported op") == "node a: unsupported op"
