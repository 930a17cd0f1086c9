"""vdla_hw.files: atomic writes, capped reads, strict JSON and escaped text."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vdla_hw import files
from vdla_hw.errors import VdlaError


def test_atomic_write_replaces_whole_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "out.json"
    path.write_text("old")
    files.atomic_write(path, "new")
    assert path.read_text() == "new"
    assert os.listdir(tmp_path) == ["out.json"]


def test_atomic_write_interrupted_keeps_the_old_file(tmp_path):
    path = tmp_path / "out.bin"
    path.write_bytes(b"old")

    def writer(fh):
        fh.write(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        files.atomic_write(path, writer)
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["out.bin"]


def test_read_capped_refuses_devices_large_files_and_folders(tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b"x" * 101)
    with pytest.raises(VdlaError, match="more than the 100-byte limit"):
        files.read_capped(big, "configuration", max_bytes=100)
    with pytest.raises(VdlaError, match="not a regular file"):
        files.read_capped("/dev/zero", "configuration")
    with pytest.raises(VdlaError, match="directory"):
        files.read_capped(tmp_path, "configuration")
    with pytest.raises(VdlaError, match="no such configuration"):
        files.read_capped(tmp_path / "missing", "configuration")
    assert files.read_capped(big, "configuration", max_bytes=101) == b"x" * 101


def test_read_capped_refuses_a_fifo_without_waiting_for_a_writer(tmp_path):
    """Opening a FIFO nobody writes blocked (vdla import-vta of a case with a FIFO hung); it is
    refused at once. In a child process, so a regression fails by its timeout, not by a hang."""
    fifo = tmp_path / "uop.bin"
    os.mkfifo(fifo)
    code = f"from vdla_hw import files\ntry:\n    files.read_capped({str(fifo)!r}, 'uop.bin')\nexcept Exception as e:\n    print(e)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    assert done.stdout.strip() == f"{fifo}: the uop.bin is not a regular file", done.stderr


@pytest.mark.parametrize("text, why", [("[" * 200_000 + "]" * 200_000, "nested too deeply"),
                                       ('{"a": ' + "9" * 5000 + "}", "not valid JSON"),
                                       (b"\xff\xfe{}", "not"), ("{", "not valid JSON")])
def test_json_loads_gives_one_error(text, why):
    with pytest.raises(VdlaError, match=why):
        files.json_loads(text, "cfg.json")


def test_json_text_is_strict():
    text = files.json_text({"a": float("inf"), "b": [float("nan"), 1.5], "c": (float("-inf"),)})
    assert json.loads(text) == {"a": None, "b": [None, 1.5], "c": [None]}
    assert "Infinity" not in text and "NaN" not in text


def test_printable_escapes_controls():
    assert files.printable("a\x1b[31mb\nc\x7f\x9b") == "a\\x1b[31mb\\nc\\x7f\\u009b"
    assert files.printable("plain text") == "plain text"
    assert files.printable("x" * 10, limit=4) == "xxxx..."
