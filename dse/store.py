"""``DIR/points.csv``: every evaluated point, one row each, written as points complete.

Rows are appended and flushed one at a time, so an interrupted sweep keeps every point it
finished (a torn last line is dropped on reading). On a re-run the store tells which points
are already done: a row counts when its ``key`` (configuration fingerprint, knobs and model
hash) matches, its status is ``ok`` or ``invalid`` (a ``failed`` point is tried again) and it was
computed by the same code (``code_key``); anything else is recomputed and its row replaced.
"""

from __future__ import annotations

import csv
import math
import os
from pathlib import Path

DONE = ("ok", "invalid")
# Columns kept as text when read back (a hexadecimal key may look like a number).
TEXT = {"key", "status", "error", "model", "model_hash", "fingerprint", "resource_basis", "config_json", "worker",
        "code_key"}


def cell(value) -> str:
    """One CSV cell: '' for None, repr-exact floats, JSON-ish booleans."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ("inf" if value > 0 else "-inf" if value < 0 else "nan")
    return str(value)


def parse(value: str):
    """A CSV cell back to a number or boolean where it is one (else the text, '' -> None)."""
    if value == "":
        return None
    if value in ("true", "false"):
        return value == "true"
    try:
        number = float(value)
    except ValueError:
        return value
    return int(number) if number.is_integer() and "." not in value and "e" not in value.lower() else number


def read_rows(path: Path) -> tuple[list[str], list[dict]]:
    """(header, rows with parsed cells) of a points CSV; a torn last line is dropped."""
    if not path.exists():
        return [], []
    with open(path, newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, [])
        rows = [{c: (v if c in TEXT else parse(v)) for c, v in zip(header, line)} for line in reader
                if len(line) == len(header)]
    return header, rows


class PointStore:
    """The points of one sweep directory: those already done, and an append-only writer."""

    def __init__(self, out_dir: Path, columns: list[str], code_key: str):
        self.path = Path(out_dir) / "points.csv"
        self.code_key = code_key
        header, rows = read_rows(self.path)
        self.columns = list(columns) + [c for c in header if c not in columns]
        if "code_key" not in self.columns:
            self.columns.append("code_key")
        self.rows: dict[str, dict] = {}
        for row in rows:
            if row.get("key"):
                self.rows[str(row["key"])] = row
        self.stale = sum(1 for r in self.rows.values() if r.get("code_key") != code_key)
        self._rewrite()

    def done(self, key: str) -> dict | None:
        row = self.rows.get(key)
        if row and row.get("status") in DONE and row.get("code_key") == self.code_key:
            return row
        return None

    def add(self, row: dict) -> None:
        row = {**row, "code_key": self.code_key}
        replaced = row["key"] in self.rows
        self.rows[row["key"]] = row
        if replaced:
            self._rewrite()
        else:
            with open(self.path, "a", newline="") as fh:
                csv.writer(fh).writerow([cell(row.get(c)) for c in self.columns])
                fh.flush()

    def _rewrite(self) -> None:
        tmp = self.path.with_suffix(".csv.tmp")
        with open(tmp, "w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(self.columns)
            for row in self.rows.values():
                writer.writerow([cell(row.get(c)) for c in self.columns])
        os.replace(tmp, self.path)


def write_rows(path: Path, columns: list[str], rows: list[dict]) -> None:
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        for row in rows:
            writer.writerow([cell(row.get(c)) for c in columns])
