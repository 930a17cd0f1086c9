"""docs/driver.md's figures against the driver, the protocol and `vdla serve`'s defaults."""

import re

import pytest

from driver import protocol
from driver.registers import RegisterDevice
from driver.server import ServerLimits
from tests.docs.doctext import marked_paragraph, number
from vdla.cli import build_parser

DOC = "docs/driver.md"
SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
BYTES = {"KiB": 1 << 10, "MiB": 1 << 20}


def test_the_poll_schedule_is_the_drivers():
    text = marked_paragraph(DOC, "test_the_poll_schedule_is_the_drivers")
    assert number(text, r"sleeping (\d+) us") * SECONDS["us"] == pytest.approx(RegisterDevice.poll_first_s)
    assert number(text, r"doubling to (\d+) ms") * SECONDS["ms"] == pytest.approx(RegisterDevice.poll_max_s)


def test_the_frame_prefix_is_the_protocols():
    text = marked_paragraph(DOC, "test_the_frame_prefix_is_the_protocols")
    sizes = [int(m.group(1)) for m in re.finditer(r"^\| [\w -]+ \| (\d+)\b", text, re.M)]
    assert sum(sizes) == protocol.PREFIX_BYTES  # magic, version, header length, header SHA-256, MAC
    assert number(text, r"at most (\d+) KiB") * BYTES["KiB"] == protocol.MAX_HEADER


def table_defaults(text: str) -> dict[str, list[float]]:
    """option (or the bound's text when it has none) -> the default column's values, in base units."""
    out = {}
    for row in re.findall(r"^\| (.+?) \| (.+?) \| (.+?) \|$", text, re.M)[1:]:  # the header row left out
        bound, default, option = row
        m = re.match(r"(\d+)(?: (s|KiB|MiB)\b)?", default)
        value = float(m.group(1)) * {**SECONDS, **BYTES}.get(m.group(2), 1)
        out.setdefault(option.strip("`") if option != "-" else bound, []).append(value)
    return out


def test_the_server_bounds_are_its_defaults():
    table = table_defaults(marked_paragraph(DOC, "test_the_server_bounds_are_its_defaults"))
    serve = build_parser().parse_args(["serve"])
    assert table.pop("--max-connections") == [serve.max_connections]
    assert table.pop("--idle-timeout") == [serve.idle_timeout, serve.idle_timeout]  # a byte; the prefix
    assert table.pop("--request-timeout") == [serve.request_timeout]
    assert table.pop("--max-frame-mib") == [serve.max_frame_mib * BYTES["MiB"]]
    assert table.pop("--run-timeout") == [serve.run_timeout]
    header, queued = table.values()
    assert header == [protocol.MAX_HEADER] and queued == [ServerLimits().max_queued_runs]
