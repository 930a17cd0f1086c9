"""``vdla sim --uninit`` and ``vdla exec --uninit`` (vdla_hw/sram_state.py): off by default;
``error`` stops with exit status 2 and one line naming the instruction, the buffer and the
element; ``warn`` prints that line on stderr and finishes the run; a program that writes
before it reads passes both."""

from __future__ import annotations

import json

import pytest

from tests.vdla.test_cli import EXAMPLE, run
from vdla_hw.sram_state import MODES
from vdla_sim.progen import random_program


@pytest.fixture
def progen(tmp_path):
    path = tmp_path / "r3.npz"
    random_program(3, "tiny").save(path)
    return path


@pytest.mark.parametrize("command", ["sim", "exec"])
def test_uninit_error_exits_2_naming_the_first_read(capsys, progen, command):
    code, out, err = run(capsys, command, progen, "--uninit", "error")
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, (code, err)
    assert lines[0].startswith("vdla: error: instruction 3 (GEMM): uop: reads ACC element 26 at loop step")
    assert "never written in this session" in lines[0] and "Traceback" not in err


@pytest.mark.parametrize("command", ["sim", "exec"])
def test_uninit_warn_reports_and_finishes(capsys, progen, command):
    code, out, err = run(capsys, command, progen, "--uninit", "warn", "--json")
    assert code == 0
    [line] = err.strip().splitlines()
    assert line.startswith("vdla: warning: instruction 3 (GEMM)") and line.endswith("(--uninit warn)")
    assert json.loads(out)["uninit"].startswith("instruction 3 (GEMM)")


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
