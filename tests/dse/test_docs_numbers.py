"""The resource and clock numbers of README.md and docs/dse.md are the stored syntheses' (issue 23):
each generated block is exactly what its command prints today, and the README has one resource
table. Regenerate a block with the command its marker names."""

import re
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[2]
GENERATED = re.compile(r"<!-- generated: python -m dse\.calibrate (?P<flag>--\w+) -->\n(?P<body>.*?)\n<!-- end generated -->",
                       re.S)


def generated_blocks(path: Path) -> list[tuple[str, str]]:
    return [(m.group("flag"), m.group("body")) for m in GENERATED.finditer(path.read_text())]


def test_the_calibration_tables_are_generated_blocks():
    """Their content is checked by tests/test_doc_figures.py, which runs every generator."""
    assert [flag for flag, _ in generated_blocks(ROOT / "README.md")] == ["--presets"]
    assert [flag for flag, _ in generated_blocks(ROOT / "docs/dse.md")] == ["--report"]


def test_the_readme_has_one_resource_table():
    text = (ROOT / "README.md").read_text()
    assert len(re.findall(r"^\|[^\n]*\bLUT\b[^\n]*\|$", text, re.M)) == 1


def test_no_stale_clock_statement_is_left():
    for name in ("README.md", "docs/dse.md", "docs/board.md"):
        text = (ROOT / name).read_text()
        assert "39 MHz" not in text and "misses both" not in text, name
