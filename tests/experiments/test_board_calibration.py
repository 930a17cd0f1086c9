"""experiments/board_calibration.py: the two calibrated numbers of vta-pynq-board are what the
fit on records r01 and r09 gives today, and they reproduce those records."""

from experiments import board_calibration as cal
from vdla_hw.config import load_config


def test_the_variant_holds_what_the_fit_gives_and_the_fit_reproduces_its_records():
    result = cal.calibrate()
    board = load_config(cal.VARIANT)
    assert (board.DDR_BYTES_PER_CYCLE_CAP, board.MEM_LATENCY) == (result["DDR_BYTES_PER_CYCLE_CAP"],
                                                                  result["MEM_LATENCY"]), \
        "the fit moved: python -m experiments.board_calibration, then copy its values into vdla_hw/presets.py"
    assert all(abs(e) <= 0.01 for e in result["errors"].values()), result
    assert result["rounds"] < cal.MAX_ROUNDS, "the alternating fit did not settle"
    # each parameter is the nearest grid value: one step either way predicts its record worse
    rec = cal.record(cal.RATE[1])
    errs = [abs(cal.error(rec, cal.with_params(board, DDR_BYTES_PER_CYCLE_CAP=round(board.DDR_BYTES_PER_CYCLE_CAP + d, 2))))
            for d in (-cal.RATE_STEP, 0.0, cal.RATE_STEP)]
    assert errs[1] <= min(errs[0], errs[2])
    rec = cal.record(cal.LATENCY[1])
    errs = [abs(cal.error(rec, cal.with_params(board, MEM_LATENCY=board.MEM_LATENCY + d))) for d in (-1, 0, 1)]
    assert errs[1] <= min(errs[0], errs[2])


def test_the_command_says_whether_the_presets_hold_the_fit(capsys):
    assert cal.main([]) == 0
    out = capsys.readouterr().out
    assert "vdla_hw/presets.py holds these values" in out and "fitted on r01" in out and "fitted on r09" in out


def test_a_closed_stdout_ends_the_command_quietly():
    """`python -m experiments.board_calibration | head -0` was a BrokenPipeError traceback: now
    status 141 and nothing on stderr, as vdla and the studies end."""
    import os
    import subprocess
    import sys

    read, write = os.pipe()
    os.close(read)   # the reader is gone before the command prints
    try:
        done = subprocess.run([sys.executable, "-m", "experiments.board_calibration"], stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write)
    assert done.returncode == 141 and "Traceback" not in done.stderr, done.stderr
