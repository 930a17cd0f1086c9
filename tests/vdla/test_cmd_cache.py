"""`vdla cache info` / `vdla cache clear`: what the folder holds, per kind, and its removal;
user errors are one line with exit status 2."""

import json

import pytest

from vdla.cli import main
from vdla_hw import cache


@pytest.fixture
def filled(cache_folder):
    folder = cache_folder
    for i in range(3):
        cache.cached("model", (i,), lambda: b"m" * 1000)
    cache.cached("qgraph", (0,), lambda: b"q" * 500)
    return folder


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_info_json_counts_entries_and_bytes_per_kind(filled, capsys):
    code, out, _ = run(capsys, "cache", "info", "--json")
    info = json.loads(out)
    assert code == 0 and info["folder"] == str(filled) and info["state"] == "ok"
    assert info["kinds"]["model"]["entries"] == 3 and info["kinds"]["qgraph"]["entries"] == 1
    assert info["entries"] == 4 and info["max_bytes"] == cache.DEFAULT_MAX_BYTES
    code, out, _ = run(capsys, "cache", "info")
    assert code == 0 and str(filled) in out and "model" in out and "qgraph" in out and "total" in out


def test_clear_one_kind_then_all(filled, capsys):
    code, _, err = run(capsys, "cache", "clear", "--kind", "model")
    assert code == 0 and "removed 3 entries of kind model" in err
    assert set(cache.info()["kinds"]) == {"qgraph"}
    code, _, err = run(capsys, "cache", "clear")
    assert code == 0 and "removed 1 entries" in err and cache.info()["entries"] == 0
    # a cleared cache computes again
    calls = []
    cache.cached("model", (0,), lambda: calls.append(1) or b"m")
    assert calls == [1]


@pytest.mark.parametrize("argv, env", [
    (("cache", "clear", "--kind", "../etc"), {}),
    (("cache", "clear", "--kind", "nope"), {}),
    (("cache", "info", "--kind", "nope"), {}),
    (("cache", "info"), {"VDLA_CACHE_MAX_BYTES": "lots"}),
    (("cache", "frobnicate"), {}),
])
def test_user_errors_are_one_line_exit_2(filled, capsys, monkeypatch, argv, env):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    try:
        code = main(list(argv))
    except SystemExit as stop:  # argparse usage errors
        code = stop.code
    err = capsys.readouterr().err
    assert code == 2 and err.strip().count("\n") == 0 and err.startswith(("vdla: error", "usage", "vdla cache"))


def test_a_shared_folder_is_not_cleared(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o777)
    monkeypatch.setenv("VDLA_CACHE_DIR", str(folder))
    code, _, err = run(capsys, "cache", "clear")
    assert code == 2 and "other users" in err and err.count("\n") == 1


def test_an_unknown_kind_is_refused_before_anything_is_removed(filled, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["cache", "clear", "--kind", "modle"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "unknown" in err and "model" in err and err.count("\n") == 1
    assert cache.info()["entries"] == 4


def test_info_of_one_kind(filled, capsys):
    code, out, _ = run(capsys, "cache", "info", "--kind", "qgraph", "--json")
    info = json.loads(out)
    assert code == 0 and info["kinds"] == {"qgraph": {"entries": 1, "bytes": info["bytes"]}} and info["entries"] == 1
