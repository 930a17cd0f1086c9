"""The clock estimate of a configuration (dse.clock) and its warnings: the cached synthesis of
exactly that configuration first, then the calibration's, then the fast clock model; `vdla run`,
`vdla hw bitstream` and `vdla sweep` say in one stderr line when CLOCK_MHZ is above it, and the
sweep never calls such a point "fits". Configurations are explicit (the default preset's clock is
not assumed)."""

import json

import pytest

from dse.calibrate import CALIBRATION, config_of
from dse.clock import ClockEstimate, clock_estimate, clock_warning
from dse.point import hardware_columns
from dse.report import best_points
from dse.resources import CALIBRATION_FILE, load_model
from dse.synth import TOP
from vdla.cli import main
from vdla_hw.config import Config
from vdla_hw.rtl.fmax import cache_key
from vdla_hw.rtl.fmax_reference import load_validation

DATA = json.loads(CALIBRATION_FILE.read_text())


@pytest.fixture
def no_synthesis_cache(tmp_path, monkeypatch):
    """An empty clock-estimate cache, so the answer comes from the calibration or the model."""
    monkeypatch.setenv("VDLA_TIMING_CACHE", str(tmp_path / "timing"))
    return tmp_path / "timing"


def write_config(tmp_path, config: Config):
    path = tmp_path / f"{config.name}-{config.CLOCK_MHZ:g}.json"
    path.write_text(config.to_json())
    return str(path)


def test_a_cached_synthesis_of_exactly_the_configuration_comes_first(no_synthesis_cache):
    config = Config.from_preset("tiny", CLOCK_MHZ=90.0)
    assert clock_estimate(config).source == "model"
    no_synthesis_cache.mkdir()
    (no_synthesis_cache / f"{cache_key(config, TOP)}.json").write_text(json.dumps({"fmax_mhz": 77.5, "target_mhz": 90.0}))
    estimate = clock_estimate(config)
    # the cache holds the static estimate; the clock is its validated band's pessimistic edge (vdla_hw.rtl.fmax)
    band = load_validation()["band"]
    assert (estimate.mhz, estimate.source) == (round(77.5 * band["low"], 1), "synthesis")
    other = Config.from_preset("tiny", CLOCK_MHZ=91.0)  # another fingerprint: not that synthesis
    assert clock_estimate(other).source == "model"


def test_the_calibration_synthesis_of_the_configuration_is_next(no_synthesis_cache):
    name = "b4"
    estimate = clock_estimate(config_of(CALIBRATION[name][1]))
    assert (estimate.mhz, estimate.source) == (DATA["points"][name]["fmax_mhz"], "calibration")
    assert name in estimate.basis


def test_any_other_configuration_gets_the_clock_model(no_synthesis_cache):
    config = Config.from_preset("osdi18", LOG_WGT_BUFF_SIZE=17, CLOCK_MHZ=150.0)
    estimate = clock_estimate(config)
    assert estimate.source == "model" and estimate.mhz == load_model().clock_mhz(config)
    assert "held-out error" in estimate.basis


def test_a_configuration_the_rtl_does_not_implement_has_no_estimate(no_synthesis_cache):
    config = Config.from_preset("osdi18", MEM_MAX_BURST=32)  # HP0 is AXI3: 16 beats at most
    assert clock_estimate(config) is None and clock_warning(config) is None


def test_the_warning_is_one_line_when_the_clock_is_above_the_estimate(no_synthesis_cache):
    base = Config.from_preset("osdi18", LOG_WGT_BUFF_SIZE=17, CLOCK_MHZ=150.0)
    mhz = clock_estimate(base).mhz
    above = Config.from_preset("osdi18", LOG_WGT_BUFF_SIZE=17, CLOCK_MHZ=mhz + 20)
    line = clock_warning(above)
    assert line.startswith("vdla: warning:") and "\n" not in line
    assert f"{mhz + 20:g}" in line and f"{clock_estimate(above).mhz:g} MHz" in line
    at = Config.from_preset("osdi18", LOG_WGT_BUFF_SIZE=17, CLOCK_MHZ=round(mhz - 20))
    assert clock_warning(at) is None


def test_vdla_run_warns_above_the_estimate_only(capsys, tmp_path, small_cnn_path, no_synthesis_cache):
    for clock, warned in ((300.0, True), (50.0, False)):
        cfg = write_config(tmp_path, Config.from_preset("osdi18", CLOCK_MHZ=clock))
        assert main(["run", small_cnn_path, "--config", cfg]) == 0
        err = capsys.readouterr().err
        lines = [ln for ln in err.splitlines() if "above the clock estimate" in ln]
        assert len(lines) == (1 if warned else 0), err


def test_vdla_hw_bitstream_warns_above_the_estimate(capsys, tmp_path, no_synthesis_cache):
    cfg = write_config(tmp_path, Config.from_preset("tiny", CLOCK_MHZ=200.0))
    assert main(["hw", "bitstream", "--config", cfg, "-o", str(tmp_path / "project")]) == 0
    err = capsys.readouterr().err
    assert len([ln for ln in err.splitlines() if "above the clock estimate" in ln]) == 1, err


def row(config: Config, latency: float, fmax: float) -> dict:
    resources = {"lut": 20000, "ff": 10000, "dsp": 100, "bram36": 50}
    return {"status": "ok", "model": "m", "key": config.fingerprint, "fingerprint": config.fingerprint,
            "latency_s": latency, "speedup": 1.0, "energy_j": 1.0,
            "config_json": json.dumps(config.stored_params(), sort_keys=True),  # as points.csv holds it
            **hardware_columns(config, resources, "test", "xc7z020", clock=ClockEstimate(fmax, "model", "test"))}


def test_the_sweep_never_calls_a_point_above_its_clock_estimate_fitting():
    fast = row(Config.from_preset("osdi18", CLOCK_MHZ=200.0), 0.010, 109.0)
    slow = row(Config.from_preset("osdi18", CLOCK_MHZ=100.0), 0.020, 109.0)
    assert fast["fits_xc7z020"] is True and fast["clock_met"] is False and fast["verdict"] == "over clock estimate"
    assert slow["clock_met"] is True and slow["verdict"] == "fits"
    best = best_points([fast, slow], "xc7z020")["m"]
    assert best["key"] == slow["key"] and best["clock_mhz"] == 100.0 and best["fmax_mhz"] == 109.0
