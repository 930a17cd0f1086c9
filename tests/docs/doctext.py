"""Read a doc's figures back for the tests of ``<!-- checked-by: FILE::TEST -->`` markers: the test
finds the paragraph (or table) its marker names and pulls numbers out of it, so the doc cannot
drift from the code."""

from __future__ import annotations

import importlib.util
import re

from tests.test_doc_figures import ROOT, paragraphs

__all__ = ["ROOT", "generator", "marked_paragraph", "number"]


def marked_paragraph(doc: str, test_name: str) -> str:
    """The one paragraph of ``doc`` (a path from the repository's root) whose checked-by marker
    names the test function ``test_name``, inline code kept, markers removed; fails when there
    is none or more than one."""
    found = [text for _, text in paragraphs(ROOT / doc)
             if re.search(rf"<!-- checked-by: [^>]*::{re.escape(test_name)}\b", text)]
    assert len(found) == 1, f"{doc}: {len(found)} paragraphs are marked checked-by ...::{test_name}"
    return re.sub(r"<!--.*?-->", "", found[0])


def number(text: str, pattern: str | None = None) -> float:
    """A figure as written (``17,600``, ``0.5``) as a float: ``text`` itself, or what group 1 of
    ``pattern`` matches in it (fails when the doc no longer says it)."""
    if pattern is not None:
        m = re.search(pattern, text)
        assert m, f"the doc no longer says /{pattern}/"
        text = m.group(1)
    return float(text.replace(",", ""))


def generator(name: str):
    """scripts/figures/NAME.py as a module, loaded by its path: putting scripts/figures on
    sys.path would let its file names shadow packages for every later test."""
    spec = importlib.util.spec_from_file_location(f"figures_{name}", ROOT / "scripts" / "figures" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
