"""points.csv: rows survive a torn last line, resume keys, and rows of other code are recomputed."""

from dse.store import PointStore, read_rows

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
