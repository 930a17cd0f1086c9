"""Read a doc's figures back for the tests of `<!-- checked-by: ... -->` markers: the test finds
the paragraph that names it and pulls numbers out of it, so the doc cannot drift from the code."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def marked_paragraph(doc: str, test_name: str) -> str:
    """The paragraph (or table) of ``doc`` (a path from the repository's root) whose checked-by
    marker names ``test_name``; fails when there is none or more than one."""
    found = [p for p in re.split(r"\n\s*\n", (ROOT / doc).read_text())
             if re.search(rf"<!-- checked-by: [^>]*::{re.escape(test_name)}\b", p)]
    assert len(found) == 1, f"{doc}: {len(found)} paragraphs marked checked-by ...::{test_name}"
    return found[0]


def number(text: str, pattern: str) -> float:
    """The number ``pattern``'s group 1 matches in ``text`` (commas allowed); fails when absent."""
    m = re.search(pattern, text)
    assert m, f"the doc no longer says /{pattern}/"
    return float(m.group(1).replace(",", ""))
