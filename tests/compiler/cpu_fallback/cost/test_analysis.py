"""The analysis cache (keyed on everything the analysis depends on) and the flow estimate of
machine blocks that have no IR block of their own."""

import dataclasses
import json

import pytest

import compiler.cpu_fallback as cf
from compiler.cpu_fallback.cost import analysis, load_cpu
from compiler.cpu_fallback.cost.blocks import MachineBlock

A9 = load_cpu("cortex-a9")
SPEC = cf.ReluSpec(size=640)


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(analysis.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(analysis, "_memo", {})
    return tmp_path


def test_second_analysis_comes_from_disk(fresh_cache, monkeypatch):
    first = analysis.analyse(SPEC, A9)
    files = list(fresh_cache.rglob("*.json"))
    assert len(files) == 1 and files[0].parent.parent.name == "cortex-a9"
    monkeypatch.setattr(analysis, "_memo", {})
    monkeypatch.setattr(analysis, "analyse_uncached", lambda spec, cpu: pytest.fail("cache not used"))
    assert analysis.analyse(SPEC, A9) == first


def test_unreadable_cache_entry_is_recomputed(fresh_cache, monkeypatch):
    first = analysis.analyse(SPEC, A9)
    path = next(fresh_cache.rglob("*.json"))
    path.write_text("{not json")
    monkeypatch.setattr(analysis, "_memo", {})
    assert analysis.analyse(SPEC, A9) == first
    assert json.loads(path.read_text())["format"] == analysis.FORMAT


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
