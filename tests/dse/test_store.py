"""points.csv: rows survive a torn last line, resume keys, rows of other code are recomputed, a
rewrite never loses rows, a damaged file is one error naming the line, and a row whose seal
fails (edited, forged, another user's) is dropped instead of resumed (issue 45, finding 15)."""

import pytest

from dse.store import PointStore, StoreError, read_rows

COLUMNS = ["key", "status", "error", "model", "latency_s", "fits_xc7z020"]
KEY = bytes(range(32))  # the sweep key of these tests (dse.row_seal)


def test_rows_round_trip_and_a_torn_line_is_dropped(tmp_path):
    store = PointStore(tmp_path, COLUMNS, "code1", KEY)
    store.add({"key": "0123456789012345", "status": "ok", "model": "m", "latency_s": 0.1, "fits_xc7z020": True})
    store.add({"key": "1e10", "status": "invalid", "error": "bad, really", "model": "m"})
    with open(store.path, "a") as fh:
        fh.write("abc,ok,")  # interrupted while writing
    header, rows = read_rows(store.path)
    assert header == COLUMNS + ["code_key", "row_mac"]
    assert [r["key"] for r in rows] == ["0123456789012345", "1e10"]
    assert rows[0]["latency_s"] == 0.1 and rows[0]["fits_xc7z020"] is True and rows[1]["error"] == "bad, really"


def test_done_points_depend_on_status_and_code(tmp_path):
    store = PointStore(tmp_path, COLUMNS, "code1", KEY)
    store.add({"key": "a", "status": "ok", "model": "m"})
    store.add({"key": "b", "status": "failed", "error": "worker died", "model": "m"})
    again = PointStore(tmp_path, COLUMNS, "code1", KEY)
    assert again.done("a") and not again.done("b")
    other = PointStore(tmp_path, COLUMNS, "code2", KEY)
    assert other.stale == 2 and not other.done("a")
    other.add({"key": "a", "status": "ok", "model": "m", "latency_s": 0.2})
    _, rows = read_rows(other.path)
    assert [(r["key"], r["code_key"]) for r in rows] == [("a", "code2"), ("b", "code1")]


def test_a_rewrite_keeps_the_rows_another_store_appended(tmp_path):
    """Two writers of one points.csv (what the sweep lock prevents): a rewrite by one (a replaced
    row) merges what the other appended instead of dropping it."""
    first, second = PointStore(tmp_path, COLUMNS, "code1", KEY), PointStore(tmp_path, COLUMNS, "code1", KEY)
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
        PointStore(tmp_path, COLUMNS, "code1", KEY)
    assert str(path) in str(err.value) and "\n" not in str(err.value) and len(str(err.value)) < 400


def test_only_a_last_line_without_its_line_end_is_torn(tmp_path):
    _csv(tmp_path, b"k1,ok,,m,0.1,true\r\n", b"k2,ok,,m,0.")
    _, rows = read_rows(tmp_path / "points.csv")
    assert [r["key"] for r in rows] == ["k1"]


def test_an_edited_or_forged_row_is_dropped_not_resumed(tmp_path):
    """A resumed sweep took points.csv's rows on trust: a forged latency became "the fastest
    configuration". Now a row is used only when its seal (an HMAC under the user's key) holds."""
    store = PointStore(tmp_path, COLUMNS, "code1", KEY)
    for key, latency in (("a", 0.5), ("b", 0.25), ("c", 0.125)):
        store.add({"key": key, "status": "ok", "model": "m", "latency_s": latency, "fits_xc7z020": True})
    text = store.path.read_text()
    assert text.count(",0.25,") == 1
    last = text.splitlines()[-1]
    assert last.startswith("c,ok,")
    forged_row = "d" + last[1:].replace(",0.125,", ",1e-09,")
    store.path.write_text(text.replace(",0.25,", ",1e-09,")  # an edited latency
                          + forged_row + "\r\n")  # a new row with a copied seal
    another = PointStore(tmp_path, COLUMNS, "code1", bytes(32))  # another user's key: nothing holds
    assert another.untrusted == ["a", "b", "c", "d"] and not another.rows
    store.path.write_text(text.replace(",0.25,", ",1e-09,") + forged_row + "\r\n")
    again = PointStore(tmp_path, COLUMNS, "code1", KEY)
    assert again.untrusted == ["b", "d"]
    assert again.done("a") and again.done("c") and not again.done("b") and not again.done("d")
    _, rows = read_rows(again.path)  # dropped from the file too: the summary ranks none of them
    assert [(r["key"], r["latency_s"]) for r in rows] == [("a", 0.5), ("c", 0.125)]
    assert all(again.trusted(r) for r in rows)
