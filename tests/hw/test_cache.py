"""vdla_hw.cache: content keys, sealed pickled entries, the folder's safety checks, the size
bound, and two processes writing one entry."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vdla_hw import cache

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def folder(cache_folder):
    return cache_folder


class Calls:
    """A compute function that counts its calls."""

    def __init__(self, value):
        self.value, self.n = value, 0

    def __call__(self):
        self.n += 1
        return self.value


def test_second_call_hits_and_returns_an_equal_copy(folder):
    value = {"w": np.arange(12, dtype=np.int8).reshape(3, 4), "name": "x"}
    compute = Calls(value)
    first = cache.cached("model", ("resnet18", 224), compute)
    second = cache.cached("model", ("resnet18", 224), compute)
    assert compute.n == 1 and first is value
    assert second is not value and second["name"] == "x" and np.array_equal(second["w"], value["w"])
    assert second["w"].dtype == np.int8
    assert cache.stats["model"]["hit"] == 1 and cache.stats["model"]["miss"] == 1
    assert oct(os.stat(folder).st_mode & 0o777) == "0o700"


@pytest.mark.parametrize("other", [
    ("resnet18", 225), ("resnet18", 224.0), ("resnet18", "224"), ("resnet19", 224), ("resnet18", 224, None),
    ("resnet18", [224]), ("resnet18", True),
])
def test_any_changed_part_misses(folder, other):
    cache.cached("model", ("resnet18", 224), Calls(1))
    compute = Calls(2)
    assert cache.cached("model", other, compute) == 2 and compute.n == 1


def test_kind_and_code_are_in_the_key(folder, monkeypatch):
    cache.cached("model", (1,), Calls("a"))
    assert cache.cached("qgraph", (1,), Calls("b")) == "b"
    monkeypatch.setattr(cache, "_code_key", "other code")
    assert cache.cached("model", (1,), Calls("c")) == "c"


def test_arrays_are_keyed_by_dtype_shape_and_bytes():
    a = np.arange(6, dtype=np.int32)
    keys = {cache.key_of("model", (x,)) for x in (a, a.astype(np.int64), a.reshape(2, 3), a + 1, a.tobytes())}
    assert len(keys) == 5
    assert cache.key_of("model", (a,)) == cache.key_of("model", (np.arange(6, dtype=np.int32),))
    assert cache.key_of("model", (a.reshape(2, 3).T,)) == cache.key_of("model", (np.ascontiguousarray(a.reshape(2, 3).T),))
    assert cache.key_of("model", ({"b": 1, "a": 2},)) == cache.key_of("model", ({"a": 2, "b": 1},))
    with pytest.raises(TypeError):
        cache.key_of("model", (object(),))
    with pytest.raises(cache.CacheError):
        cache.cached("Bad/kind", (), lambda: 1)
    with pytest.raises(cache.CacheError):
        cache.contains("Bad/kind", ())
    # key_of is a hash of any label: dse.cache keys its own store's entries with kind "sweep"
    assert cache.key_of("sweep", (1,)) != cache.key_of("model", (1,))


def test_code_key_covers_every_package_source():
    key = cache.code_key()
    assert len(key) == 64 and cache.code_key() is key  # memoised
    assert set(cache.CODE_PACKAGES) >= {"vdla_hw", "vdla_sim", "compiler", "driver", "dse", "vdla"}


def test_off_computes_every_time(folder, monkeypatch):
    monkeypatch.setenv("VDLA_CACHE", "off")
    compute = Calls(5)
    cache.cached("model", (), compute)
    cache.cached("model", (), compute)
    assert compute.n == 2 and not folder.exists()


def test_off_hashes_no_key(folder, monkeypatch):
    """With the cache off no key is computed (issue 45: hashing a run's four 128 MiB inputs took
    1.6 s of a run that stores nothing); an unknown kind is still refused."""
    monkeypatch.setenv("VDLA_CACHE", "off")

    def no_hashing(*args, **kwargs):
        raise AssertionError("a key was computed with the cache off")

    monkeypatch.setattr(cache, "key_of", no_hashing)
    assert cache.cached("model", (b"x" * 10,), Calls(5)) == 5
    with pytest.raises(cache.CacheError):
        cache.cached("no-such-kind", (), Calls(5))


@pytest.mark.parametrize("damage", ["flip", "truncate", "rename", "garbage"])
def test_a_damaged_entry_is_recomputed_with_one_warning(folder, capsys, damage):
    cache.cached("qgraph", ("a",), Calls([1, 2, 3]))
    cache.cached("qgraph", ("b",), Calls([4, 5, 6]))
    path_a = cache.entry_path(folder, "qgraph", cache.key_of("qgraph", ("a",)))
    path_b = cache.entry_path(folder, "qgraph", cache.key_of("qgraph", ("b",)))
    data = path_a.read_bytes()
    if damage == "flip":
        path_a.write_bytes(data[:-3] + bytes([data[-3] ^ 1]) + data[-2:])
    elif damage == "truncate":
        path_a.write_bytes(data[:len(data) // 2])
    elif damage == "rename":
        os.replace(path_b, path_a)  # b's entry under a's name
    else:
        path_a.write_bytes(b"not a cache entry")
    capsys.readouterr()
    compute = Calls([1, 2, 3])
    assert cache.cached("qgraph", ("a",), compute) == [1, 2, 3] and compute.n == 1
    warning = capsys.readouterr().err
    assert warning.count("\n") == 1 and str(path_a) in warning and "recomputing" in warning
    again = Calls(None)
    assert cache.cached("qgraph", ("a",), again) == [1, 2, 3] and again.n == 0  # rewritten whole
    assert capsys.readouterr().err == ""


def test_an_unsafe_folder_is_refused_with_one_warning(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cache, "_warned", set())
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    for path in (link, shared):
        monkeypatch.setenv("VDLA_CACHE_DIR", str(path))
        compute = Calls(1)
        cache.cached("model", (), compute)
        cache.cached("model", (), compute)
        assert compute.n == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(path) in err and "without the cache" in err
    assert list(real.iterdir()) == [] and list(shared.iterdir()) == []


def test_the_size_bound_evicts_least_recently_used(folder, monkeypatch):
    blob = lambda i: bytes([i]) * 10_000  # noqa: E731
    monkeypatch.setenv("VDLA_CACHE_MAX_BYTES", "35000")
    for i in range(3):
        cache.cached("layer", (i,), Calls(blob(i)))
        path = cache.entry_path(folder, "layer", cache.key_of("layer", (i,)))
        os.utime(path, (1000 + i, 1000 + i))  # distinct ages: 0 oldest
    cache.cached("layer", (0,), Calls(None))  # a hit: 0 becomes the most recent
    cache.cached("layer", (3,), Calls(blob(3)))  # over the bound: 1, the least recent, goes
    kept = {i for i in range(4) if cache.entry_path(folder, "layer", cache.key_of("layer", (i,))).exists()}
    assert kept == {0, 2, 3}
    assert cache.stats["layer"]["evicted"] == 1
    assert cache.info()["bytes"] <= 35000


def test_an_entry_larger_than_the_bound_is_not_stored(folder, monkeypatch):
    monkeypatch.setenv("VDLA_CACHE_MAX_BYTES", "1000")
    cache.cached("model", (), Calls(b"x" * 10))
    compute = Calls(b"y" * 5000)
    assert cache.cached("layer", (), compute) == b"y" * 5000
    assert cache.cached("layer", (), compute) == b"y" * 5000 and compute.n == 2
    assert set(cache.info()["kinds"]) == {"model"}


def test_a_bad_bound_is_one_user_error(folder, monkeypatch):
    monkeypatch.setenv("VDLA_CACHE_MAX_BYTES", "2GB")
    with pytest.raises(cache.CacheError, match="VDLA_CACHE_MAX_BYTES"):
        cache.cached("model", (), Calls(1))


def test_info_and_clear(folder):
    cache.cached("model", (1,), Calls(b"a" * 100))
    cache.cached("model", (2,), Calls(b"b" * 100))
    cache.cached("qgraph", (1,), Calls(b"c" * 100))
    summary = cache.info()
    assert summary["folder"] == str(folder) and summary["state"] == "ok" and summary["entries"] == 3
    assert summary["kinds"]["model"]["entries"] == 2 and summary["kinds"]["qgraph"]["entries"] == 1
    assert summary["bytes"] == sum(row["bytes"] for row in summary["kinds"].values())
    assert cache.clear("model")[0] == 2
    assert set(cache.info()["kinds"]) == {"qgraph"}
    assert cache.clear()[0] == 1 and cache.info()["entries"] == 0
    with pytest.raises(cache.CacheError):
        cache.clear("../x")


def test_stale_temporaries_of_killed_writers_are_removed(folder):
    cache.cached("model", (), Calls(1))
    stale = folder / "model" / ".abc.pkl.x.tmp"
    fresh = folder / "model" / ".def.pkl.y.tmp"
    stale.write_bytes(b"partial")
    fresh.write_bytes(b"being written")
    os.utime(stale, (1, 1))
    assert cache.info()["entries"] == 1  # neither counts as an entry
    assert not stale.exists() and fresh.exists()


WRITER = """
import sys, numpy as np
from vdla_hw import cache
value = np.full(1 << 20, 7, dtype=np.int32)
for _ in range(int(sys.argv[1])):
    cache.write_entry(cache.root(), "layer", cache.key_of("layer", ("shared",)), value)
    hit, got = cache.read_entry(cache.entry_path(cache.root(), "layer", cache.key_of("layer", ("shared",))),
                                "layer", cache.key_of("layer", ("shared",)))
    assert hit and np.array_equal(got, value), "torn or wrong entry"
print(sum(c["bad"] for c in cache.stats.values()))
"""


def test_two_processes_writing_one_entry(folder):
    env = dict(os.environ, PYTHONPATH=str(ROOT), VDLA_CACHE_DIR=str(folder))
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, "15"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert out.strip() == "0" and err == ""
    assert [p.name for p in (folder / "layer").iterdir()] == [f"{cache.key_of('layer', ('shared',))}.pkl"]


def test_a_narrow_code_key_replaces_the_project_one(folder, monkeypatch):
    cache.cached("cpu-cost", ("k",), Calls(1), code="analysis sources v1")
    assert cache.contains("cpu-cost", ("k",), code="analysis sources v1")
    assert not cache.contains("cpu-cost", ("k",), code="analysis sources v2")
    assert not cache.contains("cpu-cost", ("k",))
    monkeypatch.setattr(cache, "_code_key", "other project code")  # unrelated edits keep the entry
    again = Calls(2)
    assert cache.cached("cpu-cost", ("k",), again, code="analysis sources v1") == 1 and again.n == 0


def test_an_unpicklable_value_is_returned_and_said_once(folder, capsys):
    value = lambda: None  # noqa: E731  (a lambda does not pickle)
    assert cache.cached("model", (), Calls(value)) is value
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot store a function" in err
    assert cache.info()["entries"] == 0


def test_only_registered_kinds_are_cached(folder):
    compute = Calls(1)
    with pytest.raises(cache.CacheError, match="cache kind 'modle': unknown .*model"):
        cache.cached("modle", (), compute)
    assert compute.n == 0
    with pytest.raises(cache.CacheError, match="unknown"):
        cache.clear("nope")


def test_every_kind_the_code_caches_is_registered():
    """The kinds named at the call sites of ``cached``/``contains`` (a literal first argument,
    or a ``CACHE_KIND`` constant) are all in KINDS, and every registered kind has a user."""
    import re
    from pathlib import Path

    root = Path(cache.__file__).resolve().parents[1]
    used = set()
    for package in cache.CODE_PACKAGES:
        for path in (root / package).rglob("*.py"):
            text = path.read_text()
            used |= set(re.findall(r"\b(?:cached|contains)\(\s*\"([^\"]+)\"", text))
            used |= set(re.findall(r"^CACHE_KIND = \"([^\"]+)\"", text, re.M))
    assert used == set(cache.KINDS)
