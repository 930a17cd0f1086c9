"""The loaded-model runtime (driver/session.py) on the sim device: byte categories, one model per
device keyed by package digest, a failed run unloads its bundle, inputs checked against symbols."""

import numpy as np
import pytest

from driver import DeviceError, open_device
from driver.session import CATEGORIES, image_categories, model_digest
from tests.driver import device_cases
from tests.hw import programs
from vdla_hw.errors import VdlaError


def test_image_categories_cover_the_image():
    bundle, _, _ = programs.blocked_matmul("tiny")
    counts = image_categories(bundle, ("a",), ("out",))
    assert set(counts) == set(CATEGORIES) and sum(counts.values()) == bundle.dram.size
    assert counts["activations_in"] == counts["activations_out"] == 0  # placeholders count as other at load
    lo, hi = bundle.symbols["a"].byte_range(bundle.config)
    assert counts["other"] >= hi - lo


def test_one_loaded_model_per_device_keyed_by_digest():
    bundle, _, _ = programs.blocked_matmul("tiny")
    with open_device("sim", "tiny") as device:
        model = device.loaded_model("pkg-1")
        model.load("mm", bundle, ("a",), ("out",))
        assert device.loaded_model("pkg-1") is model and "mm" in model
        other = device.loaded_model("pkg-2")
        assert other is not model and "mm" not in model and not model.resident  # the old buffers are freed
        assert device.loaded_model(None) is not device.loaded_model(None)


def test_a_failed_run_unloads_its_bundle():
    bundle = device_cases.deadlocking_bundle("tiny")
    with open_device("sim", "tiny") as device:
        model = device.loaded_model()
        model.load("hang", bundle, (), ())
        with pytest.raises(DeviceError, match="deadlock"):
            model.run("hang", {}, timeout_cycles=20_000)
        assert "hang" not in model


def test_inputs_must_be_the_symbols_loaded_with_their_sizes():
    bundle, _, _ = programs.blocked_matmul("tiny")
    with open_device("sim", "tiny") as device:
        model = device.loaded_model()
        with pytest.raises(VdlaError, match="no symbol 'x'"):
            model.load("mm", bundle, ("x",), ("out",))
        model.load("mm", bundle, ("a",), ("out",))
        with pytest.raises(VdlaError, match="without its input 'a'"):
            model.run("mm", {})
        with pytest.raises(VdlaError, match="does not fit"):
            model.run("mm", {"a": np.zeros(3, np.int8)})
        with pytest.raises(VdlaError, match="is loaded already"):
            model.load("mm", bundle, ("a",), ("out",))


def test_model_digest_ignores_the_input_only():
    files = {"graph.json": b"{}", "bundles/a.npz": b"12", "input.npy": b"x"}
    assert model_digest(files) == model_digest({**files, "input.npy": b"y"})
    assert model_digest(files) != model_digest({**files, "bundles/a.npz": b"13"})


def test_the_executor_counts_the_drivers_categories():
    """The compiler may not import the driver, so the executor repeats the category names."""
    from compiler.network import executor

    assert executor.CATEGORIES == CATEGORIES
