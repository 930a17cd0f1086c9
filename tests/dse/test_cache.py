"""The sweep's disk cache: entries carry a checksum; an entry that is not JSON, has none or fails
it (``{}``, an edited number, an entry copied to another key) is reported once, naming the file,
and recomputed instead of trusted."""

import json

import pytest

from dse.cache import DiskCache

TIMING = {"cycles": 1234, "gemm_utilization": 0.5, "bytes": {"inp": 64}, "meta": {"output": {"shape": [1, 16]}}}


def test_an_entry_round_trips_with_its_checksum(tmp_path):
    cache = DiskCache(tmp_path)
    cache.put("layers", "k1", TIMING)
    assert cache.get("layers", "k1") == TIMING and cache.get("layers", "k2") is None
    entry = json.loads((tmp_path / "layers" / "k1.json").read_text())
    assert set(entry) == {"sha256", "value"} and len(entry["sha256"]) == 64
    assert not cache.problems


def edited(text: str) -> str:
    return text.replace("1234", "1")


def copied(tmp_path, text):
    DiskCache(tmp_path).put("layers", "other", {**TIMING, "cycles": 7})
    return (tmp_path / "layers" / "other.json").read_text()


@pytest.mark.parametrize("damage, why", [
    (lambda tmp_path, text: "{}", "not a checksummed cache entry"),
    (lambda tmp_path, text: "[1, 2", "not valid JSON"),
    (lambda tmp_path, text: "\xff", "not valid JSON"),
    (lambda tmp_path, text: edited(text), "fails its checksum"),
    (copied, "fails its checksum"),
])
def test_an_untrusted_entry_is_reported_once_and_recomputed(tmp_path, damage, why):
    notes = []
    cache = DiskCache(tmp_path, notes.append)
    cache.put("layers", "k1", TIMING)
    path = tmp_path / "layers" / "k1.json"
    path.write_text(damage(tmp_path, path.read_text()))
    assert cache.get("layers", "k1") is None
    assert cache.get("layers", "k1") is None
    assert len(notes) == 1 and cache.problems == notes
    assert notes[0].startswith(f"{path}: sweep cache entry") and why in notes[0] and notes[0].endswith("recomputing it")
    cache.put("layers", "k1", TIMING)  # what the caller does next
    assert cache.get("layers", "k1") == TIMING and len(notes) == 1
