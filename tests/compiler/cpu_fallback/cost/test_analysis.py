"""The analysis cache (keyed on everything the analysis depends on) and the flow estimate of
machine blocks that have no IR block of their own."""

import dataclasses

import pytest

import compiler.cpu_fallback as cf
from compiler.cpu_fallback.cost import analysis, load_cpu
from compiler.cpu_fallback.cost.blocks import MachineBlock
from vdla_hw import cache

A9 = load_cpu("cortex-a9")
SPEC = cf.ReluSpec(size=640)


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(analysis.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(analysis, "_memo", {})
    monkeypatch.setattr(analysis, "_shipped", {"cortex-a9": {}})  # nothing shipped: the disk cache alone
    return tmp_path


def test_second_analysis_comes_from_disk(fresh_cache, monkeypatch):
    assert not analysis.is_cached(SPEC, A9)
    first = analysis.analyse(SPEC, A9)
    files = list((fresh_cache / "cpu-cost").iterdir())
    assert len(files) == 1 and files[0].suffix == ".pkl"
    monkeypatch.setattr(analysis, "_memo", {})
    assert analysis.is_cached(SPEC, A9)
    monkeypatch.setattr(analysis, "analyse_uncached", lambda spec, cpu: pytest.fail("cache not used"))
    assert analysis.analyse(SPEC, A9) == first


def test_the_disk_entry_outlives_unrelated_code_changes(fresh_cache, monkeypatch):
    first = analysis.analyse(SPEC, A9)
    monkeypatch.setattr(analysis, "_memo", {})
    monkeypatch.setattr(cache, "_code_key", "the project's code, edited elsewhere")
    monkeypatch.setattr(analysis, "analyse_uncached", lambda spec, cpu: pytest.fail("cache not used"))
    assert analysis.analyse(SPEC, A9) == first


def test_damaged_cache_entry_is_recomputed(fresh_cache, monkeypatch, capsys):
    first = analysis.analyse(SPEC, A9)
    path = next((fresh_cache / "cpu-cost").iterdir())
    path.write_bytes(path.read_bytes()[:-1] + b"!")
    monkeypatch.setattr(analysis, "_memo", {})
    monkeypatch.setattr(cache, "_warned", set())
    assert analysis.analyse(SPEC, A9) == first
    assert str(path) in capsys.readouterr().err
    monkeypatch.setattr(analysis, "_memo", {})
    monkeypatch.setattr(analysis, "analyse_uncached", lambda spec, cpu: pytest.fail("not rewritten"))
    assert analysis.analyse(SPEC, A9) == first


def test_a_shipped_analysis_is_used_before_the_disk_cache(fresh_cache, monkeypatch):
    first = analysis.analyse(SPEC, A9)
    monkeypatch.setattr(analysis, "_memo", {})
    monkeypatch.setattr(analysis, "_shipped", {"cortex-a9": {analysis.cache_key(SPEC, A9): first}})
    monkeypatch.setenv("VDLA_CACHE", "off")
    monkeypatch.setattr(analysis, "analyse_uncached", lambda spec, cpu: pytest.fail("shipped analysis not used"))
    assert analysis.is_cached(SPEC, A9) and analysis.analyse(SPEC, A9) == first


def test_key_depends_on_spec_cpu_data_and_tools():
    key = analysis.cache_key(SPEC, A9)
    assert analysis.cache_key(cf.ReluSpec(size=641), A9) != key
    faster = dataclasses.replace(A9, values={**A9.values, "clock_hz": 700e6})
    assert analysis.cache_key(SPEC, faster) != key
    assert analysis.cache_key(SPEC, load_cpu("cortex-a53")) != key
    assert analysis.cache_key(SPEC, A9) == key


def test_blocks_without_an_ir_block_get_the_flow_around_them():
    """A split latch (3) between a counted body (2) and the header (1): at most what flows in."""
    blocks = [MachineBlock(0, "b0", successors={1}), MachineBlock(1, "b1", successors={2, 4}),
              MachineBlock(2, "b2", successors={3}), MachineBlock(3, None, successors={1}),
              MachineBlock(4, "b4")]
    counts, estimated = analysis.estimate_counts(blocks, {0: 1, 1: 11, 2: 10, 4: 1})
    assert estimated == {3} and counts[3] == 10
