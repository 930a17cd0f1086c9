"""The calibration data of the resource and clock models against today's RTL (issue 23): the data
carry the generator key of the RTL they were made from, the test fails when that RTL has changed
(regenerate with ``python -m dse.calibrate``), every stored synthesis is of the configuration its
name says, and the models meet their targets on the held-out syntheses (fast: stored results)."""

import json
import re

from dse.calibrate import CALIBRATION, config_of
from dse.resources import CALIBRATION_FILE, TARGET_ERROR, load_model
from dse.synth import TOP, rtl_generator_key, rtl_verilog_key

DATA = json.loads(CALIBRATION_FILE.read_text())
HEX16 = re.compile(r"^[0-9a-f]{16}$")
# The clock model's largest relative error on the held-out syntheses (docs/dse.md states it,
# tests/docs/test_dse.py checks that; it is linear in log2(MACs), the critical paths are control logic).
CLOCK_TARGET = 0.08


def test_the_calibration_carries_the_keys_of_its_rtl():
    assert HEX16.match(DATA["generator_key"]) and HEX16.match(DATA["verilog_key"])
    assert DATA["top"] == TOP == "axi"  # the FPGA top, what the bitstream builds
    assert DATA["regenerate"] == "python -m dse.calibrate"


def test_the_calibration_is_not_stale():
    """Fails when the RTL changed since the calibration: equal generator keys mean the same
    synthesis inputs; otherwise the FPGA top's generated Verilog must be unchanged
    (ResourceModel.is_stale; its logic: tests/dse/test_resources.py)."""
    assert not load_model().is_stale(), (
        f"{CALIBRATION_FILE.name} is stale: the RTL changed since it was made (generator key "
        f"{DATA['generator_key']} -> {rtl_generator_key()}, Verilog key {DATA['verilog_key']} -> "
        f"{rtl_verilog_key()}); run python -m dse.calibrate")


def test_every_calibration_configuration_has_its_synthesis():
    assert set(DATA["points"]) == set(CALIBRATION)
    for name, point in DATA["points"].items():
        role, overrides = CALIBRATION[name]
        assert "error" not in point, (name, point.get("error"))
        assert (point["role"], point["overrides"]) == (role, overrides)
        assert point["fingerprint"] == config_of(overrides).fingerprint, name
        assert point["params"] == config_of(overrides).stored_params(), name
        assert point["top"] == "axi" and point["fmax_mhz"] > 0


def test_held_out_syntheses_meet_the_targets():
    """LUT and FF within 5 %, DSP and BRAM36 exact, on syntheses the fit never saw."""
    model = load_model()
    held = model.errors("holdout")
    assert len(held["points"]) >= 3
    assert {row["name"] for row in held["points"]}.isdisjoint(model.fitted())
    for resource, target in TARGET_ERROR.items():
        assert held["summary"][resource]["max_rel"] <= target, (resource, held["points"])
    assert held["summary"]["fmax_mhz"]["max_rel"] <= CLOCK_TARGET, held["points"]


def test_the_sweep_space_blocks_are_calibrated():
    """Every BLOCK the RTL converts at BATCH 1 below 32 is in the fit (4, 8, 16)."""
    blocks = {config_of(CALIBRATION[n][1]).block_in for n in load_model().fitted()}
    assert {4, 8, 16} <= blocks
