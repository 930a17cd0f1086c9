"""The resource model against its yosys calibration data: the structural BRAM count equals
synthesis on every configuration, the held-out points are not fitted, staleness follows the
RTL, and configurations the RTL refuses have no resources (the held-out targets and the
calibration's keys: tests/dse/test_calibration.py)."""

import json

import pytest

from dse.cache import DiskCache
from dse.resources import CALIBRATION_FILE, ResourceModelError, calibration_config, features, fit, load_model
from dse.synth import rtl_generator_key
from vdla_hw.config import Config
from vdla_hw.errors import ConfigError

DATA = json.loads(CALIBRATION_FILE.read_text())
POINTS = {name: p for name, p in DATA["points"].items() if "error" not in p}


@pytest.mark.parametrize("name", sorted(POINTS))
def test_structural_bram_count_equals_synthesis(name):
    assert features(calibration_config(POINTS[name]))["bram36"] == POINTS[name]["bram36"]


def test_the_held_out_points_are_not_fitted():
    without = {**DATA, "points": {k: v for k, v in DATA["points"].items() if v.get("role") == "fit"}}
    assert fit(without).coefficients == load_model().coefficients
    assert fit(without).clock == load_model().clock


def test_too_little_data_is_an_error():
    with pytest.raises(ResourceModelError, match="too few"):
        fit({**DATA, "points": dict(list(POINTS.items())[:2])})


def test_staleness_follows_the_rtl(tmp_path):
    model = fit(DATA)
    model.rtl_key = rtl_generator_key()
    assert not model.is_stale()
    model.rtl_key = "0" * 16  # sources differ: the generated Verilog's hash decides (kept in the cache)
    cache = DiskCache(tmp_path)
    cache.put("rtl", rtl_generator_key(), {"verilog_key": model.data.get("verilog_key")})
    assert not model.is_stale(cache)
    cache.put("rtl", rtl_generator_key(), {"verilog_key": "changed"})
    assert model.is_stale(cache)
    assert "STALE" in model.basis(True) and "STALE" not in model.basis(False)


def test_the_rtl_check_is_made_once_per_rtl_not_per_sweep_directory(tmp_path, cache_folder, monkeypatch):
    """A new sweep DIR finds the Verilog key in the user's cache (vdla_hw.cache, kind rtl-check)
    instead of generating the Verilog again; with that cache off it is generated again."""
    import dse.synth

    made = []
    monkeypatch.setattr(dse.synth, "rtl_verilog_key", lambda: made.append(1) or "0123456789abcdef")
    model = load_model()
    model.rtl_key = "0" * 16  # the sources differ from the calibration's
    assert model.is_stale(DiskCache(tmp_path / "one")) and len(made) == 1
    assert model.is_stale(DiskCache(tmp_path / "two")) and len(made) == 1
    monkeypatch.setenv("VDLA_CACHE", "off")
    assert model.is_stale(DiskCache(tmp_path / "three")) and len(made) == 2


def test_configurations_the_rtl_refuses_have_no_resources():
    with pytest.raises(ConfigError, match="not supported by the RTL"):
        load_model().predict(Config.from_preset("osdi18", MEM_MAX_BURST=32))  # HP0 is AXI3: 16 beats at most
