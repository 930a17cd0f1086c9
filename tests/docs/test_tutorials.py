"""The tutorial ladder (docs/tutorials/) runs as written and prints what its pages show.

Each page's ``sh`` blocks run in order, as one reader would type them from the repository's
root, in one fresh folder per page holding ``examples/`` and ``.venv`` of the checkout (the pages
say ``.venv/bin/vdla``, as README.md does; nothing of the environment is put on PATH). A block marked ``<!-- output -->`` (a ``text`` block) is what the ``sh`` block before it
prints, stdout and stderr together as a terminal shows them: line for line, trailing spaces
ignored, where a line ``...`` stands for any number of lines (elided timings and long tables).
A number with a unit in a page's prose (tests/test_doc_figures.py's scan) must be one its output
blocks show, so the explanation cannot drift from the runs either.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_doc_figures import FIGURE

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs" / "tutorials").glob("[0-9]*.md"))
BLOCK = re.compile(r"(?:^<!-- (?P<marker>[^>]*?) -->\n)?^```(?P<lang>\w*)\n(?P<body>.*?)^```", re.S | re.M)
SLOW = {"05-offload-study.md",            # runs ResNet-18 (about 10 s of CPU with a warm cache)
        "06-a-sweep.md",                  # four ResNet-18 points at 64x64 (about 15 s of CPU)
        "07-rtl-and-the-board.md"}        # Icarus, and a deploy to a local server (about 15 s of CPU)
TIMEOUT = 300


def steps(page: Path) -> list[tuple[int, str, str | None]]:
    """(line, sh block, the output block after it or None) of ``page``, in order."""
    text = page.read_text()
    found, out = [], []
    for m in BLOCK.finditer(text):
        line = text[:m.start()].count("\n") + 1
        if m.group("marker") == "output":
            assert found and found[-1][2] is None, f"{page.name}:{line}: an output block follows no sh block"
            found[-1] = (found[-1][0], found[-1][1], m.group("body"))
        elif m.group("lang") == "sh":
            found.append((line, m.group("body"), None))
        else:
            assert m.group("marker") == "text" or m.group("lang") == "text", \
                f"{page.name}:{line}: a tutorial block is sh, an output block, or marked <!-- text -->"
    return found


def matches(expected: str, got: str) -> bool:
    """``got`` line for line equals ``expected``, a ``...`` line matching any run of lines."""
    want = [ln.rstrip() for ln in expected.strip("\n").splitlines()]
    have = [ln.rstrip() for ln in got.strip("\n").splitlines()]

    def fit(i: int, j: int) -> bool:
        if i == len(want):
            return j == len(have)
        if want[i] == "...":
            return any(fit(i + 1, k) for k in range(j, len(have) + 1))
        return j < len(have) and want[i] == have[j] and fit(i + 1, j + 1)

    return fit(0, 0)


def prose(page: Path) -> str:
    return BLOCK.sub("", page.read_text())


@pytest.mark.parametrize("page", [pytest.param(p, marks=[pytest.mark.slow] if p.name in SLOW else [], id=p.name)
                                  for p in PAGES])
def test_the_page_runs_and_prints_what_it_shows(page, tmp_path):
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    (tmp_path / ".venv").symlink_to(Path(sys.executable).parents[1])
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "100", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    ran = steps(page)
    assert ran, f"{page.name}: no sh block"
    for line, body, output in ran:
        strict = "set -euo pipefail\n" if output is None else "set -uo pipefail\n"  # a shown error is shown
        done = subprocess.run(["bash", "-c", strict + body], cwd=tmp_path, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=TIMEOUT)
        where = f"docs/tutorials/{page.name}:{line}"
        if output is None:
            assert done.returncode == 0, f"{where} failed:\n{body}\n---\n{done.stdout[-3000:]}"
        else:
            assert matches(output, done.stdout), f"{where} printed:\n{done.stdout}\n--- the page shows:\n{output}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_figure_in_the_prose_is_one_the_outputs_show(page):
    shown = "\n".join(out for _, _, out in steps(page) if out)
    missing = [f for f in FIGURE.findall(prose(page)) if f not in shown]
    assert not missing, f"docs/tutorials/{page.name}: figures in the prose that no output block shows: {missing}"


def test_the_ladder_lists_every_page():
    index = (ROOT / "docs" / "tutorials" / "README.md").read_text()
    assert PAGES and all(f"({p.name})" in index for p in PAGES)
