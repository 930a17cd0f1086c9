"""``vdla sim --uninit`` and ``vdla exec --uninit`` (vdla_hw/sram_state.py): off by default;
``error`` stops with exit status 2 and one line naming the instruction, the buffer and the
element; ``warn`` prints that line on stderr and finishes the run; a program that writes
before it reads passes both."""

from __future__ import annotations

import json
import re

import pytest

from tests.vdla.test_cli import EXAMPLE, run
from vdla_hw.bundle import Bundle
from vdla_hw.sram_state import MODES, execute
from vdla_sim.progen import random_program


@pytest.fixture
def progen(tmp_path):
    path = tmp_path / "r3.npz"
    random_program(3, "tiny").save(path)
    return path


def first_read(path) -> str:
    """The tracker's own words for the program's first uninitialised read."""
    first = execute(Bundle.load(path), None, "warn")[1]
    assert first is not None
    return str(first)


@pytest.mark.parametrize("command", ["sim", "exec"])
def test_uninit_error_exits_2_naming_the_first_read(capsys, progen, command):
    expected = first_read(progen)
    code, out, err = run(capsys, command, progen, "--uninit", "error")
    assert code == 2 and err.strip().splitlines() == [f"vdla: error: {expected}"], (code, err)
    assert re.match(r"instruction \d+ \((GEMM|ALU|STORE)\): \w+: reads (INP|WGT|ACC|UOP|OUT) element \d+ at ", expected)


@pytest.mark.parametrize("command", ["sim", "exec"])
def test_uninit_warn_reports_and_finishes(capsys, progen, command):
    expected = first_read(progen)
    code, out, err = run(capsys, command, progen, "--uninit", "warn", "--json")
    assert code == 0
    assert err.strip().splitlines() == [f"vdla: warning: {expected} (--uninit warn)"]
    assert json.loads(out)["uninit"] == expected


@pytest.mark.parametrize("command", ["sim", "exec"])
def test_uninit_is_off_by_default(capsys, progen, command):
    code, out, err = run(capsys, command, progen, "--json")
    assert code == 0 and "uninit" not in json.loads(out) and "warning" not in err


@pytest.mark.parametrize("command", ["sim", "exec"])
def test_a_program_that_writes_first_passes(capsys, tmp_path, command):
    bundle = tmp_path / "v.npz"
    assert run(capsys, "asm", EXAMPLE, "-o", bundle)[0] == 0
    code, out, err = run(capsys, command, bundle, "--uninit", "error", "--json")
    assert code == 0 and json.loads(out)["uninit"] is None, err


def test_the_flag_offers_the_tracker_modes(capsys, progen):
    with pytest.raises(SystemExit) as info:
        run(capsys, "sim", progen, "--uninit", "loud")
    assert info.value.code == 2 and "invalid choice: 'loud'" in capsys.readouterr().err
    for mode in MODES:
        assert run(capsys, "sim", progen, "--uninit", mode)[0] == (2 if mode == "error" else 0)
