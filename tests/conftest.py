"""Shared pytest setup: hypothesis profiles (CI runs the same examples every time), a fresh disk
cache per session, shared by its xdist workers (tests never read what an earlier run left
behind), and `cache_folder`, an empty disk cache for one test. With ``VDLA_TEST_REPORT`` naming a
folder, each pytest session writes its tests' durations and timeline there (benchmarks/
test_suite.py reads them)."""

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
# a longer fuzzing campaign by hand: pytest tests/fuzz --hypothesis-profile=long
settings.register_profile("long", deadline=None, max_examples=2000, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "default")


SESSION_CACHE = "VDLA_TEST_SESSION_CACHE"   # the session's cache folder, handed to xdist workers


def pytest_configure(config):
    """One disk cache per test session, shared by its xdist workers: the controller (or a run
    without workers) makes it and removes it at the end; each worker, started with the
    controller's environment, uses the same folder, so a network or CPU-kernel analysis the
    first worker made is read, not remade, by the second (the cache takes concurrent writers,
    docs/caching.md)."""
    inherited = os.environ.get(SESSION_CACHE)
    if hasattr(config, "workerinput") and inherited and os.path.isdir(inherited):
        config._vdla_cache = None      # the controller's: not this worker's to remove
        folder = inherited
    else:
        config._vdla_cache = folder = tempfile.mkdtemp(prefix="vdla-test-cache-")
        os.environ[SESSION_CACHE] = folder
    os.environ["VDLA_CACHE_DIR"] = folder
    os.environ.setdefault(TIMING_CACHE, str(machine_timing_cache()))
    config.pluginmanager.register(LongestFirst(), "vdla-longest-first")


TIMING_CACHE = "VDLA_TIMING_CACHE"   # the clock estimate's cache (vdla_hw.rtl.fmax.cache_root)


def machine_timing_cache() -> Path:
    """Where the tests keep syntheses unless ``VDLA_TIMING_CACHE`` says otherwise: the machine's
    (``$XDG_CACHE_HOME/vdla-timing``, else ``~/.cache/vdla-timing``), not the checkout's
    ``build/timing``, so a new clone of unchanged RTL synthesises nothing again, as ccache
    compiles no unchanged C++ again (docs/testing.md). Safe to share: an entry's key holds every
    input of the synthesis and its timing (vdla_hw.rtl.fmax.cache_key), and one process
    synthesises a key at a time (vdla_hw.rtl.fmax_shared)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "vdla-timing"


def pytest_unconfigure(config):
    if getattr(config, "_vdla_cache", None):
        shutil.rmtree(config._vdla_cache, ignore_errors=True)


REPORT = "VDLA_TEST_REPORT"
# this session: its start, each test's (seconds, outcome), and each test's [worker, first phase's
# start, last phase's end] in epoch seconds (the timeline: which worker ran what, and when)
_RUN = {"started": 0.0, "tests": {}, "timeline": {}}


def pytest_sessionstart(session):
    _RUN.update(started=time.time(), tests={}, timeline={})


def pytest_runtest_logreport(report):
    """Sum each test's setup, call and teardown seconds; its outcome is the first phase's that did
    not pass (under pytest-xdist the controller receives every worker's reports)."""
    seconds, outcome = _RUN["tests"].get(report.nodeid, (0.0, "passed"))
    if report.outcome != "passed" and outcome == "passed":
        outcome = report.outcome
    _RUN["tests"][report.nodeid] = (seconds + report.duration, outcome)
    node = getattr(report, "node", None)   # xdist's worker controller, on the controller's side
    worker = node.gateway.id if node is not None else "main"
    span = _RUN["timeline"].setdefault(report.nodeid, [worker, report.start, report.stop])
    span[1], span[2] = min(span[1], report.start), max(span[2], report.stop)


def pytest_sessionfinish(session, exitstatus):
    """With ``VDLA_TEST_REPORT`` set, write ``pytest-<pid>.json`` there (not from an xdist worker)."""
    folder = os.environ.get(REPORT)
    if not folder or hasattr(session.config, "workerinput"):
        return
    record = dict(_RUN, finished=time.time(), exitstatus=int(exitstatus), argv=sys.argv[1:])
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"pytest-{os.getpid()}.json"), "w") as f:
        json.dump(record, f)


@pytest.fixture
def cache_folder(tmp_path, monkeypatch):
    """A fresh, empty disk cache for one test (``VDLA_CACHE_DIR``, not yet created), with the
    cache on, the default size bound and :mod:`vdla_hw.cache`'s per-process counters reset."""
    from vdla_hw import cache

    path = tmp_path / "vdla-cache"
    monkeypatch.setenv("VDLA_CACHE_DIR", str(path))
    monkeypatch.delenv("VDLA_CACHE", raising=False)
    monkeypatch.delenv("VDLA_CACHE_MAX_BYTES", raising=False)
    monkeypatch.setattr(cache, "stats", {})
    monkeypatch.setattr(cache, "_warned", set())
    return path


# --- the slow tier ------------------------------------------------------------------------------
# `pytest -m "not slow"` is the fast tier (docs/testing.md). A test is slow when it runs an RTL
# simulator or a synthesis (every `rtl` test), qemu, Ray, a full-size network, a whole study or a
# document's generator, or several `vdla` processes: the modules and tests below (a module: all
# its tests, which share what is slow), beside the tests that carry @pytest.mark.slow themselves.
# tests/test_conftest.py checks that every entry names a module and test functions that exist.
SLOW_MODULES = {
    "tests/dse/test_sweep.py",                     # sweeps on Ray
    "tests/test_determinism.py",                   # full-size runs under several BLAS thread counts
    "tests/vdla/test_run.py",                      # `vdla run resnet18` at 224
    "tests/vdla/test_interrupts.py",               # `vdla` processes interrupted at set moments
    "tests/vdla/test_plots.py",                    # every figure of a network drawn
    "tests/vdla/test_figure_worker.py",            # figure worker processes
    "tests/vdla/test_cpu_costs.py",                # CPU-kernel analyses of the main job
    "tests/compiler/cpu_fallback/test_qemu.py",    # ARM kernels under qemu
    "tests/compiler/cpu_fallback/test_arm.py",     # the ARM library, cross-compiled and run under qemu
    "tests/driver/test_bitstream.py",              # Verilog of the FPGA top for the Vivado project
    "tests/driver/test_vivado_flow.py",            # the same, through the recipe's steps
    "tests/experiments/test_vta_fig8.py",          # whole reproduction studies
    "tests/experiments/test_tvm_fig21.py",
    "tests/experiments/test_tvm_fig10.py",
}
SLOW_TESTS = {
    "tests/test_doc_figures.py": {"test_generated_blocks_are_current"},   # every document generator
    "tests/test_mutants.py": {"test_the_fast_subset_is_killed"},          # five mutants, each a pytest run
    "tests/fuzz/test_fuzz_kernels.py": {"test_hostile_package_for_every_cpu_kernel",
                                        "test_hostile_kernel_parameters_and_buffers"},
    "tests/driver/test_deploy.py": {"test_cli_deploy_over_loopback_matches_vdla_run"},
    "tests/driver/test_server.py": {"test_six_long_runs_leave_pings_answered"},
    "tests/compiler/frontend/test_float_ref.py": {"test_iter_graph_frees_each_value_after_its_last_reader"},
    "tests/compiler/frontend/test_products.py": {"test_vdla_run_path_on_an_onnx_file"},
    "tests/compiler/frontend/test_several_outputs.py": {"test_vdla_run_lists_every_output_and_writes_them_as_npz"},
    "tests/compiler/network/test_loaded_model.py": {"test_second_inference_moves_no_weights_and_gives_the_same_output",
                                                    "test_server_run_path_keeps_the_package_loaded"},
    "tests/compiler/network/test_network.py": {"test_resnet34_executor_vs_quantized_reference"},
    "tests/compiler/cpu_fallback/test_fp32.py": {"test_fp32_kernel_on_the_a9_under_qemu_equals_numpy"},
    "tests/compiler/tensorize/test_search_shared.py": {"test_resnet18_layers_on_the_sweeps_buffer_sizes"},
    "tests/compiler/quantize/test_calibrate.py": {"test_the_quantized_graph_is_the_same_object_under_any_string_hashing"},
    "tests/hw/test_asm.py": {"test_arbitrary_bundles_round_trip_byte_identical"},
    "tests/dse/test_clock.py": {"test_vdla_hw_bitstream_warns_above_the_estimate", "test_vdla_run_warns_above_the_estimate_only"},
    "tests/dse/test_calibration.py": {"test_the_calibration_is_not_stale"},
    "tests/vdla/test_outputs.py": {"test_run_replaces_its_files_as_one_set"},
    "tests/vdla/test_run_inputs.py": {"test_dynamic_dimensions_need_input_shape", "test_input_output_and_calibration_files"},
    "tests/vdla/test_quantization_report.py": {"test_streamed_report_equals_the_whole_batch_computation"},
    "tests/vdla/test_cli_contract.py": {"test_every_json_output_is_strict"},
    "tests/vdla/test_network_cache.py": {"test_a_second_run_hits_every_cache_and_gives_the_same_report"},
}


def is_slow(item) -> bool:
    """Whether ``item`` belongs to the slow tier: marked ``slow`` or ``rtl``, or listed above."""
    path = item.path.relative_to(ROOT).as_posix()
    name = getattr(item, "originalname", item.name)
    return (item.get_closest_marker("slow") is not None or item.get_closest_marker("rtl") is not None
            or path in SLOW_MODULES or name in SLOW_TESTS.get(path, ()))


@pytest.hookimpl(tryfirst=True)   # before -m selects by marker
def pytest_collection_modifyitems(config, items):
    for item in items:
        if is_slow(item) and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)


# The modules that take longest (worker-seconds in a clean-clone CI run's timeline, benchmarks/
# test_suite.py), in the order they are handed to the workers: under `--dist loadscope` a module is
# one unit of work, so a long one that starts last leaves the other worker idle at the end. The
# syntheses lead (minutes each); the sweeps come after tiny's synthesis for the datapath timing,
# whose cached result their --synth test reads (vdla_hw/rtl/fmax_shared.py) instead of waiting on
# its lock. pyproject's --no-loadscope-reorder keeps this order: by default xdist hands out the
# modules with the most tests first, and the osdi18 synthesis (two tests) started 14 minutes into
# a 17-minute run. Every other module follows in pytest-randomly's order.
FIRST = ("tests/rtl/test_synth.py",            # the osdi18 synthesis, ~150 s
         "tests/rtl/test_datapath_timing.py",  # tiny's synthesis, ~80 s
         "tests/rtl/test_fmax_reference.py",   # three reference cores' syntheses, ~50 s
         "tests/dse/test_sweep.py",            # sweeps on Ray, ~390 s
         "tests/rtl/test_axi.py",              # the FPGA top under the AXI memory, ~210 s
         "tests/rtl/test_rtl_vs_sim.py",       # the RTL corpus, ~100 s
         "tests/test_doc_figures.py",          # every document generator, ~75 s
         "tests/vdla/test_run.py")             # `vdla run resnet18`, ~70 s


class LongestFirst:
    """Moves the modules of :data:`FIRST` to the front, in that order (a plugin of its own, so
    that its hook runs after pytest-randomly's shuffle and the order is the same on every
    worker)."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items):
        def rank(item) -> int:
            path = item.path.relative_to(ROOT).as_posix()
            return FIRST.index(path) if path in FIRST else len(FIRST)

        items.sort(key=rank)
