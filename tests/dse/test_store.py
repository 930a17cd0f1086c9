"""points.csv: rows survive a torn last line, resume keys, rows of other code are recomputed, a
rewrite never loses rows, and a damaged file is one error naming the line."""

import pytest

from dse.store import PointStore, StoreError, read_rows

COLUMNS = ["key", "status", "error", "model", "latency_s", "fits_xc7z020"]


def test_rows_round_trip_and_a_torn_line_is_dropped(tmp_path):
    store = PointStore(tmp_path, COLUMNS, "code1")
    store.add({"key": "0123456789012345", "status": "ok", "model": "m", "latency_s": 0.1, "fits_xc7z020": True})
    store.add({"key": "1e10", "status": "invalid", "error": "bad, really", "model": "m"})
    with open(store.path, "a") as fh:
        fh.write("abc,ok,")  # interrupted while writing
    header, rows = read_rows(store.path)
    assert header == COLUMNS + ["code_key"]
    assert [r["key"] for r in rows] == ["0123456789012345", "1e10"]
    assert rows[0]["latency_s"] == 0.1 and rows[0]["fits_xc7z020"] is True and rows[1]["error"] == "bad, really"


def test_done_points_depend_on_status_and_code(tmp_path):
    store = PointStore(tmp_path, COLUMNS, "code1")
    store.add({"key": "a", "status": "ok", "model": "m"})
    store.add({"key": "b", "status": "failed", "error": "worker died", "model": "m"})
    again = PointStore(tmp_path, COLUMNS, "code1")
    assert again.done("a") and not again.done("b")
    other = PointStore(tmp_path, COLUMNS, "code2")
    assert other.stale == 2 and not other.done("a")
    other.add({"key": "a", "status": "ok", "model": "m", "latency_s": 0.2})
    _, rows = read_rows(other.path)
    assert [(r["key"], r["code_key"]) for r in rows] == [("a", "code2"), ("b", "code1")]


def test_a_rewrite_keeps_the_rows_another_store_appended(tmp_path):
    """Two writers of one points.csv (what the sweep lock prevents): a rewrite by one (a replaced
    row) merges what the other appended instead of dropping it."""
    first, second = PointStore(tmp_path, COLUMNS, "code1"), PointStore(tmp_path, COLUMNS, "code1")
    first.add({"key": "a", "status": "ok", "model": "m", "latency_s": 0.1})
    second.add({"key": "b", "status": "failed", "error": "worker died", "model": "m"})
    second.add({"key": "b", "status": "ok", "model": "m", "latency_s": 0.2})  # replaced: a rewrite
    _, rows = read_rows(second.path)
    assert sorted((r["key"], r["status"]) for r in rows) == [("a", "ok"), ("b", "ok")]
    assert second.done("a") and not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*.tmp"))


def _csv(tmp_path, *lines: bytes):
    path = tmp_path / "points.csv"
    path.write_bytes(b"key,status,error,model,latency_s,fits_xc7z020\r\n" + b"".join(lines))
    return path


@pytest.mark.parametrize("line, message", [
    (b"k2,ok,,m,0.1\xff,true\r\n", r"points.csv: line 3: not UTF-8 text \(byte 13 of the line\)"),
    (b"k2,ok," + b"e" * 131073 + b",m,0.1,true\r\n", r"points.csv: line 3: not a points CSV \(field larger"),
    (b"k2,ok,,m,fast,true\r\n", r"points.csv: line 3, column 'latency_s': 'fast' is not a number"),
    (b"k2,ok,,m,true,true\r\n", r"points.csv: line 3, column 'latency_s': 'true' is not a number"),
    (b"k2,done,,m,0.1,true\r\n", r"points.csv: line 3, column 'status': 'done' is not one of ok, invalid, failed"),
])
def test_a_damaged_points_csv_is_one_error_naming_the_line(tmp_path, line, message):
    path = _csv(tmp_path, b"k1,ok,,m,0.1,true\r\n", line, b"k3,ok,,m,0.3,false\r\n")
    with pytest.raises(StoreError, match=message) as err:
        PointStore(tmp_path, COLUMNS, "code1")
    assert str(path) in str(err.value) and "\n" not in str(err.value) and len(str(err.value)) < 400


def test_only_a_last_line_without_its_line_end_is_torn(tmp_path):
    _csv(tmp_path, b"k1,ok,,m,0.1,true\r\n", b"k2,ok,,m,0.")
    _, rows = read_rows(tmp_path / "points.csv")
    assert [r["key"] for r in rows] == ["k1"]
