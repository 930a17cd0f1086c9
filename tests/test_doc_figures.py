"""No figure in README.md or docs/ without a generator or a test behind it (issue 26, item 6).

A number with a unit of measure (seconds, cycles, MHz, x, %, bytes, LUTs, ...) in the prose of a
documentation file must be one of:

- inside a **generated block**: ``<!-- generated: COMMAND -->`` ... ``<!-- end generated -->``
  holds exactly what COMMAND (``python -m MODULE ARGS`` or ``python PATH ARGS``, run from the
  repository's root) prints today; :func:`test_generated_blocks_are_current` runs every command;
- in a paragraph (or table) marked ``<!-- checked-by: tests/PATH.py::test_name -->``: that test
  exists and asserts the paragraph's figures against the code that produces them;
- in a paragraph marked ``<!-- fact: SOURCE -->``: the figures are not measurements but facts of
  the design or of a publication (a preset, the spec, the paper's Fig. 21); SOURCE names where
  they come from, and when it is a repository path (has a ``/`` or a file suffix) it exists.

Code blocks and inline code are not prose and are not scanned (test_docs.py runs them).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

GENERATED = re.compile(r"^<!-- generated: (?P<command>[^>]*?) -->\n(?P<body>.*?)\n?^<!-- end generated -->$",
                       re.S | re.M)
FENCE = re.compile(r"^```.*?^```[^\n]*$", re.S | re.M)
MARKER = re.compile(r"<!-- (?P<kind>checked-by|fact): (?P<what>[^>]*?) -->")
UNIT = (r"(?:ms|µs|us|ns|s|min|minutes?|seconds?|hours?|h|MHz|GHz|GOPS|GOP/s|Gop/s|GFLOPS|"
        r"cycles/s|cycles?|points/s|insns/s|MiB|KiB|GiB|MB|KB|kB|GB|mW|W|LUTs?|FFs?|DSPs?|BRAMs?|DSP48E1s?|BRAM36s?)")
FIGURE = re.compile(r"(?<![\w.-])\d[\d,]*(?:\.\d+)?(?:(?:x|×|%)(?!\w)| ?%|[ -]?(?:[kMG] )?" + UNIT + r"(?!\w))")


def generated_blocks(path: Path) -> list[tuple[int, str, str]]:
    """(line, command, body) of every generated block of a file."""
    text = path.read_text()
    return [(text[:m.start()].count("\n") + 1, m.group("command"), m.group("body")) for m in GENERATED.finditer(text)]


def run_generator(command: str) -> str:
    words = shlex.split(command)
    assert words[0] == "python" and len(words) > 1, f"a generator is `python -m MODULE ...` or `python PATH ...`: {command}"
    done = subprocess.run([sys.executable, *words[1:]], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"`{command}` failed:\n{done.stderr[-3000:]}"
    return done.stdout.rstrip("\n")


def _commands() -> list[str]:
    return sorted({command for path in DOCS for _, command, _ in generated_blocks(path)})


@pytest.mark.parametrize("command", _commands())
def test_generated_blocks_are_current(command):
    output = run_generator(command)
    for path in DOCS:
        for line, cmd, body in generated_blocks(path):
            if cmd == command:
                assert body == output, (f"{path.relative_to(ROOT)}:{line}: the block is not what `{command}` prints "
                                        "today; paste its output between the markers")


def paragraphs(path: Path) -> list[tuple[int, str]]:
    """(first line, text) of every prose paragraph (a table counts as one), with fenced code,
    generated blocks and inline code left out."""
    text = path.read_text()
    blank = lambda m: "\n" * m.group(0).count("\n")  # keep line numbers
    text = GENERATED.sub(blank, text)
    text = FENCE.sub(blank, text)
    out, start, lines = [], 0, []
    for k, line in enumerate(text.split("\n") + [""], start=1):
        if line.strip():
            if not lines:
                start = k
            lines.append(line)
        elif lines:
            out.append((start, "\n".join(lines)))
            lines = []
    return out


def figures(paragraph: str) -> list[str]:
    prose = re.sub(r"`[^`]*`", "", MARKER.sub("", paragraph))
    prose = re.sub(r"\]\([^)]*\)", "]", prose)  # link targets
    return [m.group(0) for m in FIGURE.finditer(prose)]


def check_marker(kind: str, what: str, where: str) -> None:
    if kind == "checked-by":
        for target in what.split():
            file, _, name = target.partition("::")
            assert (ROOT / file).is_file(), f"{where}: checked-by {target}: no file {file}"
            assert name and re.search(rf"^\s*def {re.escape(name)}\(", (ROOT / file).read_text(), re.M), \
                f"{where}: checked-by {target}: {file} has no test {name}"
    else:
        assert what.strip(), f"{where}: a fact marker names its source"
        for word in what.split():
            word = word.strip(",;()")
            if "/" in word or re.search(r"\.(py|md|csv|toml|json)$", word):
                assert (ROOT / word).exists(), f"{where}: fact source {word} does not exist"


def unmarked(path: Path) -> list[str]:
    """``file:line: figures`` of each paragraph with figures and no marker."""
    found = []
    for line, paragraph in paragraphs(path):
        where = f"{path.relative_to(ROOT)}:{line}"
        markers = list(MARKER.finditer(paragraph))
        for m in markers:
            check_marker(m.group("kind"), m.group("what"), where)
        shown = figures(paragraph)
        if shown and not markers:
            found.append(f"{where}: {', '.join(shown[:6])}")
    return found


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_figure_has_a_generator_or_a_test(path):
    found = unmarked(path)
    assert not found, (f"{path.relative_to(ROOT)}: paragraphs with figures and no generated block, checked-by "
                       "or fact marker:\n" + "\n".join(found))


def test_the_scan_finds_figures():
    assert figures("took 4.41 s, 1.6x faster, 48 % of 53,200 LUTs, 104.5 MHz, 69.7 M cycles/s, 16x16 `7 s`") == \
        ["4.41 s", "1.6x", "48 %", "53,200 LUTs", "104.5 MHz", "69.7 M cycles/s"]
    assert figures("ResNet-18 on 2 cores, section 6.4, [a](docs/x.md#3-s)") == []
