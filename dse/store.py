"""``DIR/points.csv``: every evaluated point, one row each, written as points complete.

Rows are appended and flushed one at a time, so an interrupted sweep keeps every point it
finished (a torn last line, one without its line end, is dropped on reading). On a re-run the
store tells which points are already done: a row counts when its ``key`` (configuration
fingerprint, knobs and model hash) matches, its status is ``ok`` or ``invalid`` (a ``failed``
point is tried again) and it was computed by the same code (``code_key``); anything else is
recomputed and its row replaced.

Every row is sealed (:mod:`dse.row_seal`: an HMAC of its cells under this user's sweep key, in
the ``row_mac`` column). A row on disk whose seal does not verify (edited by hand, forged by
someone else, written by another user or on another machine, or from before rows were sealed)
is never used: the store drops it when it reads the file (:attr:`PointStore.untrusted` lists
their keys, for one line on stderr), so it is neither resumed nor ranked in the summary, and the
sweep computes the point again if it still has it.

A rewrite (a replaced row, the start of a sweep) never loses rows: it merges the rows on disk
that this process does not know into its own and replaces the file atomically
(:func:`vdla_hw.files.atomic_write`). :mod:`dse.lock` keeps a second sweep out of the directory
in the first place.

Reading checks what the sweep relies on: UTF-8 text, CSV fields of sane size, a known
``status`` and numbers in the numeric columns. Anything else is a :class:`StoreError`, one line
naming the file, the line and the column.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from dse.metrics import ENERGY, PERFORMANCE, RESOURCES
from dse.row_seal import COLUMN as SEAL
from dse.row_seal import row_mac, verifies
from vdla_hw.errors import VdlaError
from vdla_hw.files import atomic_write, printable

DONE = ("ok", "invalid")
STATUSES = ("ok", "invalid", "failed")
# Columns kept as text when read back (a hexadecimal key may look like a number).
TEXT = {"key", "status", "error", "model", "model_hash", "fingerprint", "resource_basis", "config_json", "worker",
        "code_key", SEAL}
# Columns that hold a number or nothing; the sweep's summary, fronts and figures compute with them.
NUMERIC = {*PERFORMANCE, *RESOURCES, *(f"{r}_model" for r in RESOURCES), "fmax_mhz", "part_use", *ENERGY,
           "eval_s", "programs_simulated"}


class StoreError(VdlaError):
    """A points CSV the sweep cannot read: names the file, the line and the column."""


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


def _lines(fh, path: Path, position: list[int]):
    """The text lines of the binary file ``fh``, without a torn last line; ``position[0]`` is the
    number (1-based) of the line last given out."""
    pending = None
    for number, raw in enumerate(fh, 1):
        if pending is not None:
            position[0] = number - 1
            yield pending
        try:
            pending = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise StoreError(f"{path}: line {number}: not UTF-8 text (byte {err.start + 1} of the line)") from None
    if pending is not None and pending.endswith("\n"):  # else: torn by an interrupted append
        position[0] += 1
        yield pending


def _row(path: Path, number: int, header: list[str], line: list[str]) -> dict:
    """The parsed row of CSV ``line`` (line ``number`` of ``path``), checked."""
    row = {c: (v if c in TEXT else parse(v)) for c, v in zip(header, line)}
    status = row.get("status")
    if status not in STATUSES:
        raise StoreError(f"{path}: line {number}, column 'status': {printable(status, 40)!r} is not one of "
                         f"{', '.join(STATUSES)}")
    for column, text in zip(header, line):
        if column in NUMERIC and isinstance(row[column], (str, bool)):
            raise StoreError(f"{path}: line {number}, column {column!r}: {printable(text, 40)!r} is not a number")
    return row


def read_rows(path: Path) -> tuple[list[str], list[dict]]:
    """(header, rows with parsed cells) of a points CSV; a torn last line is dropped, any other
    defect is a :class:`StoreError`."""
    path = Path(path)
    if not path.exists():
        return [], []
    position = [0]
    rows = []
    try:
        with open(path, "rb") as fh:
            reader = csv.reader(_lines(fh, path, position))
            header = next(reader, [])
            for line in reader:
                if len(line) == len(header):
                    rows.append(_row(path, position[0], header, line))
    except csv.Error as err:
        raise StoreError(f"{path}: line {position[0]}: not a points CSV ({err})") from None
    except OSError as err:
        raise StoreError(f"{path}: cannot read it ({err.strerror or err})") from None
    return header, rows


def csv_text(columns: list[str], rows) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([cell(row.get(c)) for c in columns])
    return out.getvalue()


class PointStore:
    """The points of one sweep directory: those already done, and an append-only writer. Rows are
    sealed with ``seal_key`` (:mod:`dse.row_seal`); rows on disk that do not verify are dropped."""

    def __init__(self, out_dir: Path, columns: list[str], code_key: str, seal_key: bytes):
        self.path = Path(out_dir) / "points.csv"
        self.code_key = code_key
        self.seal_key = seal_key
        self.columns = list(columns)
        for column in ("code_key", SEAL):
            if column not in self.columns:
                self.columns.append(column)
        self.rows: dict[str, dict] = {}
        self.untrusted: list[str] = []  # keys of the rows on disk whose seal failed (dropped)
        self._rewrite()
        self.stale = sum(1 for r in self.rows.values() if r.get("code_key") != code_key)

    def done(self, key: str) -> dict | None:
        row = self.rows.get(key)
        if row and row.get("status") in DONE and row.get("code_key") == self.code_key:
            return row
        return None

    def trusted(self, row: dict) -> bool:
        """Whether a row read back from the file (:func:`read_rows`) carries a valid seal."""
        return verifies(self.seal_key, {c: cell(v) for c, v in row.items()})

    def add(self, row: dict) -> None:
        """Seal ``row`` (its cells in this store's columns) and write it."""
        row = {c: row.get(c) for c in self.columns if c != SEAL}
        row["code_key"] = self.code_key
        row[SEAL] = row_mac(self.seal_key, {c: cell(v) for c, v in row.items()})
        replaced = row["key"] in self.rows
        self.rows[row["key"]] = row
        if replaced:
            self._rewrite()
        else:
            with open(self.path, "a", newline="") as fh:
                csv.writer(fh).writerow([cell(row.get(c)) for c in self.columns])
                fh.flush()

    def _rewrite(self) -> None:
        """Replace the file by this process's rows plus every row on disk it does not have and
        whose seal verifies (the others are dropped, their keys noted in ``untrusted``)."""
        header, on_disk = read_rows(self.path)
        self.columns += [c for c in header if c not in self.columns]
        merged = {}
        for row in on_disk:
            key = str(row.get("key") or "")
            if key in self.rows:  # this process's row, in the file's order
                merged[key] = self.rows[key]
            elif not key:
                continue
            elif self.trusted(row):
                merged[key] = row
            elif key not in self.untrusted:
                self.untrusted.append(key)
        merged.update(self.rows)
        self.rows = merged
        atomic_write(self.path, csv_text(self.columns, self.rows.values()))


def write_rows(path: Path, columns: list[str], rows: list[dict]) -> None:
    """Write a CSV of ``rows`` atomically (readers see the old file or the new one)."""
    atomic_write(path, csv_text(columns, rows))
