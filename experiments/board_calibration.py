"""The calibration of the ``vta-pynq-board`` variant on two PYNQ-Z1 records (issue 44, item 4).

    python -m experiments.board_calibration

``vta-pynq-board`` is VTA's hardware on the board as the simulator models it: ``vta-pynq`` with
VTA's HLS DMA (``MEM_ROW_SERIAL`` = 1: one ``memcpy`` per row, sourced from VTA's code) and two
numbers no publication gives, the ACP's first-beat latency and its sustained read rate for
VTA's 16-beat bursts. They are fitted here, each on one record of
``compiler/data/board_records.csv``, and those two records leave the validation
(``experiments.board_validation`` reports them as calibration rows, outside its bands):

* ``DDR_BYTES_PER_CYCLE_CAP`` on **r01** (layer4.0.conv2, 512 x 7 x 7, 3x3): 2.4 MB of weights
  streamed once, so its time follows the sustained rate;
* ``MEM_LATENCY`` on **r09** (layer4.0.downsample, 1x1 stride 2): many short rows, each paying
  the first-beat latency once when rows go one at a time.

Each parameter is found by bisection so that its record's predicted time equals the measured
one (the prediction falls as the rate rises and grows with the latency), the other held; the
two fits alternate until neither moves (a few rounds: each record depends mostly on its own
parameter). The rate is kept to 0.05 B/cycle, the latency to a whole cycle. The result is printed;
``vdla_hw/presets.py`` holds it with this command as its source, and
tests/experiments/test_board_calibration.py checks the two agree.
"""

from __future__ import annotations

import sys
import time

from compiler import paper
from vdla_hw.config import Config, load_config

VARIANT = "vta-pynq-board"
RATE = ("DDR_BYTES_PER_CYCLE_CAP", "r01")   # (parameter, the record it is fitted on)
LATENCY = ("MEM_LATENCY", "r09")
RECORDS = (RATE[1], LATENCY[1])
RATE_STEP = 0.05        # B/cycle: the resolution of the fitted rate
RATE_RANGE = (0.5, 8.0)   # from far below the measured layers' rate up to the port's 8 B beat
LATENCY_RANGE = (1, 512)
MAX_ROUNDS = 6


def record(name: str) -> dict:
    return next(r for r in paper.board_records("vta") if r["record"] == name)


def with_params(base: Config, **params) -> Config:
    return Config(name=f"{base.name}-calibrating", params={**base.params, **params}, sources=dict(base.sources))


def error(rec: dict, config: Config) -> float:
    """``predicted / measured - 1`` of ``rec`` replayed on ``config`` (timing only)."""
    from dse.vta_replay import replay

    return replay(rec, config, check=False)["seconds"] / rec["measured_s"] - 1.0


def fit_rate(base: Config, rec: dict) -> float:
    """The rate (a multiple of RATE_STEP) whose prediction of ``rec`` is nearest the measurement."""
    lo, hi = round(RATE_RANGE[0] / RATE_STEP), round(RATE_RANGE[1] / RATE_STEP)
    while hi - lo > 1:   # error(lo) > 0 >= error(hi): a higher rate is faster
        mid = (lo + hi) // 2
        if error(rec, with_params(base, DDR_BYTES_PER_CYCLE_CAP=mid * RATE_STEP)) > 0:
            lo = mid
        else:
            hi = mid
    return _nearest(rec, base, "DDR_BYTES_PER_CYCLE_CAP", [round(lo * RATE_STEP, 2), round(hi * RATE_STEP, 2)])


def fit_latency(base: Config, rec: dict) -> int:
    """The latency (whole cycles) whose prediction of ``rec`` is nearest the measurement."""
    lo, hi = LATENCY_RANGE
    while hi - lo > 1:   # error(lo) < 0 <= error(hi): a longer latency is slower
        mid = (lo + hi) // 2
        if error(rec, with_params(base, MEM_LATENCY=mid)) < 0:
            lo = mid
        else:
            hi = mid
    return _nearest(rec, base, "MEM_LATENCY", [lo, hi])


def _nearest(rec: dict, base: Config, key: str, candidates: list):
    return min(candidates, key=lambda v: abs(error(rec, with_params(base, **{key: v}))))


def calibrate(progress=None) -> dict:
    """{parameter: value} fitted on RECORDS, starting from the variant's base (vta-pynq with rows
    one at a time and the base's latency), plus ``errors`` of the two records at the result and
    ``rounds``."""
    say = progress or (lambda message: None)
    base = with_params(load_config("vta-pynq"), MEM_ROW_SERIAL=1)
    rate_rec, lat_rec = record(RATE[1]), record(LATENCY[1])
    rate, latency = base.DDR_BYTES_PER_CYCLE_CAP, base.MEM_LATENCY
    for rounds in range(1, MAX_ROUNDS + 1):
        new_rate = fit_rate(with_params(base, MEM_LATENCY=latency), rate_rec)
        new_latency = fit_latency(with_params(base, DDR_BYTES_PER_CYCLE_CAP=new_rate), lat_rec)
        say(f"round {rounds}: {RATE[0]} {new_rate} B/cycle on {RATE[1]}, {LATENCY[0]} {new_latency} cycles on {LATENCY[1]}")
        if (new_rate, new_latency) == (rate, latency):
            break
        rate, latency = new_rate, new_latency
    final = with_params(base, DDR_BYTES_PER_CYCLE_CAP=rate, MEM_LATENCY=latency)
    return {RATE[0]: rate, LATENCY[0]: latency, "rounds": rounds,
            "errors": {name: round(error(record(name), final), 4) for name in RECORDS}}


def main(argv=None) -> int:
    from vdla.argtypes import ArgumentParser

    ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    from experiments import study   # a user error one line, a closed stdout quiet (status 141)

    return study.guarded("board_calibration", run)


def run() -> int:
    start = time.process_time()
    result = calibrate(progress=lambda m: print(m, file=sys.stderr, flush=True))
    stored = load_config(VARIANT)
    print(f"{VARIANT}: {RATE[0]} = {result[RATE[0]]} (fitted on {RATE[1]}), {LATENCY[0]} = {result[LATENCY[0]]} "
          f"(fitted on {LATENCY[1]}); errors at the fit: "
          + ", ".join(f"{k} {v:+.1%}" for k, v in result["errors"].items())
          + f"; {result['rounds']} rounds, {time.process_time() - start:.0f} CPU s")
    same = all(stored.params[k] == result[k] for k in (RATE[0], LATENCY[0]))
    print("vdla_hw/presets.py holds these values" if same else
          f"vdla_hw/presets.py holds {RATE[0]} = {stored.params[RATE[0]]}, {LATENCY[0]} = {stored.params[LATENCY[0]]}: "
          "copy the fitted values there")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
