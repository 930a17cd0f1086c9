"""vdla/outputs.py and every command's output files (issue 22): written exactly at the path the
user gave (``--output F`` writes ``F``, not ``F.npy``), whole (a temporary name renamed onto it),
a failed write one line with exit status 2 leaving the old file, devices and read-only files
refused before any work, and the files of a run replaced as one set (an interrupted run leaves
the old files, never a mix)."""

import errno
import os
import signal
import stat

import numpy as np
import pytest

from tests.vdla.test_cli import EXAMPLE, run
from tests.vdla.test_plots import FIGURES, small_net
from vdla import cmd_run, outputs
from vdla.figure_worker import FigureWorker
from vdla.cli import main
from vdla.outputs import Outputs, check_writable, file_problem


def listing(folder):
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture
def bundle(tmp_path_factory, capsys):
    path = tmp_path_factory.mktemp("bundle") / "layer.npz"
    assert run(capsys, "compile", "dense", "--ic", 16, "--oc", 16, "-o", path)[0] == 0
    return path


@pytest.mark.parametrize("argv", [
    ["asm", EXAMPLE, "-o", "{out}"],
    ["compile", "dense", "--ic", "16", "--oc", "16", "-o", "{out}"],
    ["exec", "{bundle}", "-o", "{out}"],
    ["sim", "{bundle}", "-o", "{out}"],
    ["sim", "{bundle}", "--output", "{out}"],
    ["sim", "{bundle}", "--trace", "{out}"],
])
def test_every_output_is_written_at_the_exact_path(capsys, tmp_path, bundle, argv):
    """`--output F` wrote F.npy (np.save adds the suffix) and said "wrote F"."""
    out = tmp_path / "result"   # no suffix: nothing may be added to it
    code, _, err = run(capsys, *(a.format(out=out, bundle=bundle) if isinstance(a, str) else a for a in argv))
    assert code == 0, err
    assert listing(tmp_path) == ["result"] and out.stat().st_size > 0
    if "--output" in argv:
        assert np.load(out).dtype == np.int8  # an .npy, whatever its name


def test_a_failed_write_is_one_line_and_keeps_the_old_file(capsys, tmp_path, monkeypatch, bundle):
    """Disk full: one line naming the file, exit status 2, the old file intact, no temporary left."""
    out = tmp_path / "y.npy"
    out.write_bytes(b"old")

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    for argv in (["sim", bundle, "--output", out], ["asm", EXAMPLE, "-o", out],
                 ["compile", "dense", "--ic", 16, "--oc", 16, "-o", out]):
        code, _, err = run(capsys, *argv)
        assert code == 2 and err == f"vdla: error: {out}: No space left on device\n", err
        assert out.read_bytes() == b"old" and listing(tmp_path) == ["y.npy"]


@pytest.mark.parametrize("device", ["/dev/full", "/dev/null"])
def test_a_device_is_refused_as_an_output(capsys, bundle, device):
    """`--output /dev/full` created /dev/full.npy with exit status 0; renaming onto a device would
    replace it (as root): it is refused while parsing, and the device stays a device."""
    for option in ("--output", "-o", "--trace"):
        with pytest.raises(SystemExit) as exit_:
            main(["sim", str(bundle), option, device])
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and err.count("\n") == 1 and "is not a regular file" in err, err
    assert stat.S_ISCHR(os.stat(device).st_mode)


def test_file_problem_names_what_cannot_be_replaced(tmp_path):
    (tmp_path / "ro").write_text("")
    (tmp_path / "ro").chmod(0o444)  # read-only even for root, who could otherwise replace it
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    assert file_problem(tmp_path / "ro") == "the file is read-only"
    assert "is a directory" in file_problem(tmp_path / "dir")
    assert "not a regular file" in file_problem(tmp_path / "fifo")
    assert "does not exist" in file_problem(tmp_path / "nowhere" / "x")
    assert file_problem(tmp_path / "new") is None
    (tmp_path / "link").symlink_to("/dev/null")  # the link is replaced, not the device
    assert file_problem(tmp_path / "link") is None
    check_writable([tmp_path / "new", tmp_path / "later" / "x"])  # a folder to be made is not checked here
    with pytest.raises(outputs.VdlaError, match=r"cannot write .*ro: the file is read-only"):
        check_writable([tmp_path / "new", tmp_path / "ro"])


def test_a_set_is_committed_together_or_not_at_all(tmp_path):
    old = {name: f"old {name}".encode() for name in ("a", "b", "stale")}
    for name, data in old.items():
        (tmp_path / name).write_bytes(data)
    with pytest.raises(RuntimeError):
        with Outputs() as out:
            out.supersede([tmp_path / n for n in old])
            out.write(tmp_path / "a", b"new a")
            out.write(tmp_path / "b", lambda fh: fh.write(b"new b"))
            raise RuntimeError("the command failed before its commit")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == old   # old files, no staging folder
    with Outputs() as out:
        out.supersede([tmp_path / n for n in old])
        out.write(tmp_path / "a", b"new a")
        out.path(tmp_path / "b").write_bytes(b"new b")   # a writer that takes a file name
        assert {p.name: p.read_bytes() for p in tmp_path.glob("[!.]*")} == old   # nothing in place yet
        assert out.commit() == [tmp_path / "a", tmp_path / "b"]
    # the superseded file that was not written again is gone: the folder holds one run's set
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == {"a": b"new a", "b": b"new b"}


def test_ctrl_c_during_the_commit_is_delivered_after_it(tmp_path, monkeypatch):
    """The moves run with SIGINT held: a Ctrl-C among them ends the command after the last one."""
    real_replace = os.replace

    def replace_then_interrupt(src, dst):
        real_replace(src, dst)
        if os.path.dirname(dst) == str(tmp_path):  # a move onto a destination, not a staged write
            signal.raise_signal(signal.SIGINT)     # as if Ctrl-C came between two moves

    monkeypatch.setattr(outputs.os, "replace", replace_then_interrupt)
    # a foreground command's Ctrl-C (Python's handler), also when the suite runs as a background
    # job, whose SIGINT is ignored (Outputs then leaves it ignored: nothing to hold)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            with Outputs() as out:
                for name in "abc":
                    out.write(tmp_path / name, name)
                out.commit()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == {"a": "a", "b": "b", "c": "c"}


def test_run_checks_its_plots_folder_before_any_work(capsys, tmp_path, monkeypatch):
    """A read-only file in --plots DIR was found only after the run."""
    (tmp_path / "roofline.pdf").write_text("mine")
    (tmp_path / "roofline.pdf").chmod(0o444)

    def no_run(*args, **kwargs):
        raise AssertionError("the run started")

    monkeypatch.setattr("vdla.network.run_network", no_run)
    code, _, err = run(capsys, "run", "resnet18", "--plots", tmp_path)
    assert code == 2 and err == f"vdla: error: cannot write {tmp_path / 'roofline.pdf'}: the file is read-only\n"


def test_run_replaces_its_files_as_one_set(capsys, tmp_path, monkeypatch):
    """An interrupted `vdla run --plots DIR --output F` left new and stale files mixed; now the old
    files stay until the whole run is done, then the new set replaces them at once."""
    model = small_net(tmp_path / "tiny.onnx")
    plot_dir, out = tmp_path / "plots", tmp_path / "y"
    plot_dir.mkdir()
    old = {path: b"old" for path in [*cmd_run.study_files(plot_dir), out]}
    for path, data in old.items():
        path.write_bytes(data)
    (plot_dir / "notes.txt").write_text("the user's")   # not the run's: never touched

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # Ctrl-C while the figures are drawn (by the figure worker)

    monkeypatch.setattr(FigureWorker, "result", interrupted)
    # --placement all: the tiny net's convs lose to the CPU, and the timeline is of an offloaded one
    assert main(["run", str(model), "--plots", str(plot_dir), "--output", str(out), "--placement", "all"]) == 130
    assert "vdla: interrupted" in capsys.readouterr().err
    assert all(path.read_bytes() == b"old" for path in old) and listing(plot_dir) == sorted(
        [p.name for p in old if p.parent == plot_dir] + ["notes.txt"])
    monkeypatch.undo()
    code, text, err = run(capsys, "run", model, "--plots", plot_dir, "--output", out, "--placement", "all")
    assert code == 0, err
    assert np.load(out).shape == (1, 10) and f"wrote {out}\n" in text
    for name in FIGURES:
        assert (plot_dir / f"{name}.png").read_bytes().startswith(b"\x89PNG")
    assert (plot_dir / "layers.csv").read_text().startswith("name,op,placement")
    assert (plot_dir / "notes.txt").read_text() == "the user's" and listing(tmp_path) == ["plots", "tiny.onnx", "y"]
