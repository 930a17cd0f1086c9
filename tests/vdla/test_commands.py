"""vdla/commands.py, the table of the cmd_* modules' commands, and the lazy start-up of
vdla/cli.py built on it: the table agrees with what each module adds, a command's parser is the
same whether the other modules are loaded or not, and `vdla --help` / `vdla config show` import
none of the command modules (nor the compiler, the simulator or the driver)."""

import argparse
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from vdla import cli, commands
from vdla.argtypes import ArgumentParser

ROOT = Path(__file__).parents[2]


def subparsers(parser) -> argparse._SubParsersAction:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


@pytest.mark.parametrize("module", list(commands.EXTENSIONS))
def test_each_module_adds_exactly_its_commands_of_the_table(module):
    parser = ArgumentParser(prog="vdla")
    sub = parser.add_subparsers(dest="command")
    loaded = commands.modules_for([next(iter(commands.EXTENSIONS[module]))])
    assert module in loaded
    for other in loaded:
        importlib.import_module(other).add_parser(sub)
    added = {a.dest: a.help for a in sub._choices_actions}
    expected = {name: text for m in loaded for name, text in commands.EXTENSIONS[m].items()}
    assert added == expected


def help_of(parser, words):
    for word in words:
        parser = subparsers(parser).choices[word]
    return parser.format_help()


@pytest.mark.parametrize("words", [[name] for name in commands.MODULE_OF] + [["hw", "synth"], ["hw", "bitstream"],
                                                                             ["compile", "conv2d"]])
def test_a_command_parses_the_same_without_the_other_modules(words):
    lazy = cli.build_parser(commands.modules_for(words))
    assert help_of(lazy, words) == help_of(cli.build_parser(), words)


def test_the_top_level_help_lists_every_command_without_loading_them():
    assert cli.build_parser(()).format_help() == cli.build_parser().format_help()


@pytest.mark.parametrize("argv, modules", [
    ([], ()), (["--help"], ()), (["config", "show"], ()), (["bogus"], ()),
    (["run", "resnet18", "--plots", "x"], ("vdla.cmd_run",)), (["--version", "sim", "a.npz"], ("vdla.cmd_sim",)),
    (["hw", "synth"], ("vdla.cmd_hw",)), (["hw", "bitstream"], ("vdla.cmd_hw",)), (["deploy", "--help"], ("vdla.cmd_deploy",)),
])
def test_modules_for_reads_the_command_word(argv, modules):
    assert commands.modules_for(argv) == modules


def test_a_line_that_reaches_a_stub_is_parsed_again_with_every_module(monkeypatch, capsys):
    """If modules_for ever misreads a line, the stub it reaches does not run: the whole parser does."""
    monkeypatch.setattr(commands, "modules_for", lambda argv: ())
    with pytest.raises(SystemExit) as err:
        cli.main(["model", "resnet18", "-o", "x.onnx", "--resolution", "7"])
    assert err.value.code == 2
    assert "--resolution: 7 is outside" in capsys.readouterr().err


HEAVY = ("vdla.cmd_", "compiler", "vdla_sim", "driver", "dse", "experiments", "matplotlib")


@pytest.mark.parametrize("argv, numpy", [(["--help"], False), (["config", "show"], True)])
def test_help_and_config_show_import_no_command_module(argv, numpy):
    code = ("import sys\nfrom vdla.cli import main\ntry:\n    main(%r)\nexcept SystemExit:\n    pass\n"
            "print(__import__('json').dumps(sorted(sys.modules)), file=sys.stderr)" % argv)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    loaded = json.loads(done.stderr.strip().splitlines()[-1])
    assert not [m for m in loaded if m.startswith(HEAVY)], loaded
    assert ("numpy" in loaded) == numpy  # config show needs vdla_hw.isa (numpy); the help needs nothing


# A process that runs ``vdla ARGV`` as its own command (main() with no argv) with an atexit
# handler and an object whose finaliser runs only in the interpreter's teardown.
QUICK = """
import atexit, sys
atexit.register(lambda: print("atexit ran", file=sys.stderr, flush=True))
class Teardown:
    def __del__(self):
        print("teardown ran", file=sys.stderr, flush=True)
keep = Teardown()
sys.argv = ["vdla", *sys.argv[1:]]
from vdla.cli import main
sys.exit(main())
"""


def quick(tmp_path, *argv):
    return subprocess.run([sys.executable, "-c", QUICK, *argv], capture_output=True, text=True, cwd=tmp_path,
                          env={**__import__("os").environ, "PYTHONPATH": str(ROOT), "VDLA_CACHE": "off"})


def test_quick_exit_commands_skip_the_teardown_but_not_atexit_or_their_outputs(tmp_path):
    """`vdla compile` (a QUICK_EXIT command) ends without the interpreter's teardown; its atexit
    handlers still run, its output file is whole and its stdout/stderr arrive."""
    assert {"run", "compile", "sim"} <= commands.QUICK_EXIT
    bundle = tmp_path / "c.npz"
    done = quick(tmp_path, "compile", "conv2d", "--h=4", "--w=4", "--ic=16", "--oc=16", "--k=1", "-o", str(bundle))
    assert done.returncode == 0, done.stderr
    assert "atexit ran" in done.stderr and "teardown ran" not in done.stderr and "wrote" in done.stderr
    sim = quick(tmp_path, "sim", str(bundle), "--json")
    assert sim.returncode == 0 and json.loads(sim.stdout)["cycles"] > 0
    assert "atexit ran" in sim.stderr and "teardown ran" not in sim.stderr


def test_other_commands_and_errors_exit_the_ordinary_way(tmp_path):
    shown = quick(tmp_path, "config", "show")
    assert shown.returncode == 0 and "teardown ran" in shown.stderr and "atexit ran" in shown.stderr
    failed = quick(tmp_path, "sim", str(tmp_path / "missing.npz"))
    assert failed.returncode == 2 and failed.stderr.count("vdla: error") == 1 and "atexit ran" in failed.stderr


# A `vdla ARGV` process (main() with no argv) that prints, as it exits, the thread count of the
# BLAS numpy loaded (threadpoolctl) on stderr.
BLAS_COUNT = """
import atexit, sys
def report():
    from threadpoolctl import ThreadpoolController
    found = ThreadpoolController().select(user_api="blas").lib_controllers
    print("blas threads", found[0].num_threads if found else None, file=sys.stderr, flush=True)
atexit.register(report)
sys.argv = ["vdla", *sys.argv[1:]]
from vdla.cli import main
sys.exit(main())
"""


@pytest.mark.parametrize("given, expected", [({}, "1"), ({"OPENBLAS_NUM_THREADS": "2"}, "2"),
                                             ({"OMP_NUM_THREADS": "2"}, "2")])
def test_a_vdla_process_runs_numpys_blas_on_one_thread_unless_the_user_names_a_count(given, expected):
    env = {k: v for k, v in __import__("os").environ.items() if k not in cli.BLAS_THREAD_VARIABLES}
    done = subprocess.run([sys.executable, "-c", BLAS_COUNT, "config", "show"], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, env={**env, **given, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert f"blas threads {expected}" in done.stderr.splitlines()


def test_one_blas_thread_leaves_a_count_the_environment_names():
    mine = {"MKL_NUM_THREADS": "4"}
    cli._one_blas_thread(mine)
    assert mine == {"MKL_NUM_THREADS": "4"}
    empty: dict[str, str] = {}
    cli._one_blas_thread(empty)
    assert empty == {"OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "BLIS_NUM_THREADS": "1"}
