"""The mutation script (scripts/mutants.py) kept honest in CI: every mutant's snippet is in the
tree exactly once (a stale one fails here, not silently in the script), and a fast subset of the
mutants, one per area the issue named, is run through the script's own machinery and killed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("mutants_script", ROOT / "scripts" / "mutants.py")
mutants = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # dataclasses look it up there
spec.loader.exec_module(mutants)

FAST = ("sem_mul_operand_unsigned", "q_no_per_channel_scales", "q_no_bias_correction", "cost_no_writeback_bytes",
        "rtl_imm_zero_extended")


def test_every_snippet_is_in_the_tree_once_and_the_replacement_differs():
    names = [m.name for m in mutants.MUTANTS]
    assert len(names) == len(set(names))
    for m in mutants.MUTANTS:
        text = (ROOT / m.file).read_text()
        assert text.count(m.original) == 1, f"{m.name}: snippet not found once in {m.file}"
        assert m.replacement != m.original and m.tests, m.name
        for arg in m.tests:
            if arg.startswith("tests/"):
                assert (ROOT / arg.split("::")[0]).exists(), f"{m.name}: {arg} does not exist"


def test_a_missing_snippet_is_an_error_not_a_survivor(tmp_path):
    (tmp_path / "f.py").write_text("x = 1\n")
    stale = mutants.Mutant("stale", "test", "f.py", "x = 2", "x = 3", ("tests",))
    with pytest.raises(LookupError, match="snippet not found"):
        mutants.mutate("x = 1\n", stale)
    row = mutants.run_one(tmp_path, stale)
    assert row["status"] == "error" and (tmp_path / "f.py").read_text() == "x = 1\n"


def test_the_fast_subset_is_killed():
    rows = mutants.run(mutants.by_name(FAST), python=sys.executable)
    assert [(r["name"], r["status"]) for r in rows] == [(name, "killed") for name in FAST], rows
    assert mutants.score(rows) == 1.0


def test_a_closed_stdout_pipe_ends_quietly():
    """``scripts/mutants.py --list | head`` ended in a BrokenPipeError traceback: now a reader
    that closed before the list was written gives exit status 141 and nothing on stderr."""
    import os
    import subprocess

    read, write = os.pipe()
    os.close(read)  # the reader is gone before the script writes
    try:
        done = subprocess.run([sys.executable, str(ROOT / "scripts" / "mutants.py"), "--list"], stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, "")
