"""The paragraph of a doc that a ``<!-- checked-by: FILE::TEST -->`` marker assigns to a test, so
the test reads its figures out of the doc and compares them with the code (the doc cannot drift)."""

from __future__ import annotations

import re

from tests.test_doc_figures import ROOT, paragraphs


def marked_paragraph(doc: str, test: str) -> str:
    """The one paragraph of ``doc`` (a path from the repository's root) whose checked-by marker
    names ``test`` (``tests/docs/test_x.py::test_name``), inline code kept, markers removed."""
    found = [text for _, text in paragraphs(ROOT / doc) if re.search(rf"<!-- checked-by: [^>]*{re.escape(test)}\b", text)]
    assert len(found) == 1, f"{doc}: {len(found)} paragraphs are marked checked-by {test}"
    return re.sub(r"<!--.*?-->", "", found[0])


def number(text: str) -> float:
    """A figure as written (``17,600``, ``0.5``) as a float."""
    return float(text.replace(",", ""))
