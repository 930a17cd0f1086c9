"""The pynq backend, on the real pynq 3.0.1 package, against the simulated PYNQ device
(tests/board/pynq_sim.py: a pynq.Device subclass found by pynq's own device discovery, its
programmable logic a register-level model backed by vdla_sim). The test bodies are the ones
the sim and rtl backends pass (tests/driver/device_cases.py)."""

import json
import warnings

import numpy as np
import pynq
import pytest

from driver import DeviceError, open_device
from driver.pynq_device import check_pynq_version
from tests.driver import device_cases
from tests.hw import programs
from vdla_hw.config import load_config

warnings.filterwarnings("ignore", message="No devices found")
from tests.board import pynq_sim  # noqa: E402  (registers the simulated device with pynq)

IP_NAME, CONTROL_BASE = "vdla_0", 0x43C0_0000


def write_bitstream(folder, config, hardware=None, **manifest_changes):
    """A bitstream folder as `vdla hw bitstream` + Vivado leave it, with a stand-in .bit whose
    simulated hardware implements ``hardware`` (default: ``config``)."""
    config = load_config(config)
    folder.mkdir(parents=True, exist_ok=True)
    bit = pynq_sim.write_fake_bitstream(folder / "vdla.bit", hardware or config)
    manifest = {"format": "vdla-bitstream", "fingerprint": config.fingerprint, "isa_version": 1,
                "config": json.loads(config.to_json()), "clock_mhz": config.CLOCK_MHZ, "ip_name": IP_NAME,
                "control_base": CONTROL_BASE, "control_span": 0x1000, "vivado": "2020.2"}
    manifest.update(manifest_changes)
    (folder / "vdla.json").write_text(json.dumps(manifest))
    return bit


@pytest.fixture(scope="module")
def sim_device():
    return pynq_sim.register()


@pytest.fixture
def opener(tmp_path, sim_device):
    def open_(config):
        return open_device("pynq", config, bitstream=write_bitstream(tmp_path / load_config(config).name, config))
    return open_


def test_pynq_discovers_the_simulated_device(sim_device):
    assert pynq.__version__ == "3.0.1"
    assert sim_device in pynq.Device.devices
    assert pynq.Device.active_device is sim_device
    assert np.__version__.startswith("1.")


@pytest.mark.parametrize("case", ["runs_like_the_reference", "buffers_round_trip", "start_and_wait",
                                  "bundle_for_another_configuration", "device_error_names_instruction",
                                  "loaded_model_runs_twice"])
def test_device_case(case, opener):
    device_cases.CASES[case](opener)


def test_timeout_names_each_module(opener):
    device_cases.case_timeout_names_each_module(opener, timeout_s=0.5)


def test_the_driver_writes_the_register_map_like_the_testbench(opener, sim_device):
    bundle, _, _ = programs.blocked_matmul("tiny")
    device = opener("tiny")
    before = sim_device.model.starts
    device.run(bundle)
    regs = sim_device.model.regs
    assert sim_device.model.starts == before + 1
    assert regs["DRAM_BYTES"] == bundle.dram.size and regs["INSN_ADDR"] == bundle.insn_offset
    assert regs["INSN_COUNT"] == bundle.insn_count and regs["DRAM_BASE"] >= pynq_sim.MEMORY_BASE
    assert regs["STATUS"] == 0  # CLEAR after the run


def test_results_need_the_cache_invalidate(opener, sim_device):
    """The device writes its own copy of DRAM: without sync_from_device the CPU would see the
    old image, so a correct result proves the driver invalidates (and flushes before START)."""
    bundle, expected, _ = programs.blocked_matmul("tiny", seed=5)
    result = opener("tiny").run(bundle)
    np.testing.assert_array_equal(bundle.read("out", result.dram), expected["out"])
    assert not np.array_equal(bundle.read("out"), expected["out"])


def _loaded_run(device, seed=5):
    """One load and one run of a loaded model (input ``a``, output ``out``): (model, bundle, result, expected)."""
    bundle, expected, _ = programs.blocked_matmul(device.config, seed=seed)
    model = device.loaded_model()
    model.load("mm", bundle, ("a",), ("out",))
    result, _ = model.run("mm", {"a": bundle.read("a")})
    return model, bundle, result, expected


def test_loaded_model_maintains_only_the_moved_ranges_on_hp(opener, sim_device):
    device = opener("tiny")
    flushed, invalidated, stale = sim_device.flushed, sim_device.invalidated, sim_device.stale_reads
    _, bundle, result, expected = _loaded_run(device)
    np.testing.assert_array_equal(bundle.read("out", result.dram), expected["out"])
    (a_lo, a_hi), (o_lo, o_hi) = (bundle.symbols[s].byte_range(bundle.config) for s in ("a", "out"))
    assert sim_device.flushed - flushed == bundle.dram.size + (a_hi - a_lo)  # the load, then the input
    assert sim_device.invalidated - invalidated == o_hi - o_lo                 # the output only
    assert sim_device.stale_reads == stale
    assert device.maintained == {"flush": bundle.dram.size + a_hi - a_lo, "invalidate": o_hi - o_lo}


def test_a_driver_that_skips_the_flush_on_hp_reads_stale_data(opener, sim_device):
    """The simulated HP port: a driver that believed the port coherent would run on stale bytes
    (here: the second run's input, written but not flushed, and its output, not invalidated)."""
    device = opener("tiny")
    model, bundle, first, expected = _loaded_run(device)
    other, _, _ = programs.blocked_matmul("tiny", seed=6)
    device.coherent = True  # wrong for this bitstream: it skips flush and invalidate
    stale = sim_device.stale_reads
    second, _ = model.run("mm", {"a": other.read("a")})
    assert sim_device.stale_reads > stale
    # the CPU still sees the first run's output: its view of the output range was never invalidated
    np.testing.assert_array_equal(bundle.read("out", second.dram), expected["out"])


def test_a_coherent_port_needs_no_cache_maintenance(tmp_path, sim_device):
    config = load_config(json.dumps({"preset": "tiny", "MEM_PORT": "acp"}))
    device = open_device("pynq", config, bitstream=write_bitstream(tmp_path / "acp", config))
    assert device.coherent and sim_device.coherent
    flushed, invalidated = sim_device.flushed, sim_device.invalidated
    _, bundle, result, expected = _loaded_run(device)
    np.testing.assert_array_equal(bundle.read("out", result.dram), expected["out"])
    assert (sim_device.flushed, sim_device.invalidated) == (flushed, invalidated)
    assert device.maintained == {"flush": 0, "invalidate": 0}


def test_manifest_for_another_configuration(tmp_path, sim_device):
    bit = write_bitstream(tmp_path, "osdi18")
    with pytest.raises(DeviceError, match="built for configuration 1x16_.*not 1x4_.*vdla hw bitstream"):
        open_device("pynq", "tiny", bitstream=bit)


def test_bit_and_manifest_that_do_not_belong_together(tmp_path, sim_device):
    bit = write_bitstream(tmp_path, "tiny", hardware="osdi18")
    with pytest.raises(DeviceError, match="reports ISA v1 and configuration hash .* do not belong together"):
        open_device("pynq", "tiny", bitstream=bit)


def _open_with_hwh(bit, **hwh_changes):
    """Open with a .hwh (the simulated device's metadata) that differs from the manifest."""
    original = pynq_sim._Metadata.__init__

    def hwh(self, manifest):
        original(self, {**manifest, **hwh_changes})
    pynq_sim._Metadata.__init__ = hwh
    try:
        return open_device("pynq", "tiny", bitstream=bit)
    finally:
        pynq_sim._Metadata.__init__ = original


def test_hwh_that_disagrees_with_the_manifest(tmp_path, sim_device):
    bit = write_bitstream(tmp_path, "tiny")
    with pytest.raises(DeviceError, match="no IP 'vdla_0' .*it has vdla_top"):
        _open_with_hwh(bit, ip_name="vdla_top")
    with pytest.raises(DeviceError, match="puts vdla_0 at 0x43c10000 but the manifest says 0x43c00000"):
        _open_with_hwh(bit, control_base=CONTROL_BASE + 0x10000)


def test_missing_bitstream_or_manifest(tmp_path, sim_device):
    with pytest.raises(DeviceError, match="no such bitstream"):
        open_device("pynq", "tiny", bitstream=tmp_path / "none.bit")
    pynq_sim.write_fake_bitstream(tmp_path / "vdla.bit", "tiny")
    with pytest.raises(DeviceError, match="no bitstream manifest"):
        open_device("pynq", "tiny", bitstream=tmp_path / "vdla.bit")


def test_image_version_check():
    check_pynq_version("3.0.1")
    check_pynq_version("3.1.2")
    for bad in ("2.7.0", "3.0.0", "4.0.0"):
        with pytest.raises(DeviceError, match="v3.0.1 .*v3.1.0"):
            check_pynq_version(bad)
