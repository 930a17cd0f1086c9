"""docs/spec.md is the project's own specification: its register table is the one vdla_hw.regmap
generates, every configuration parameter it names exists, and the repository cites it instead of
a spec outside the repository."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from vdla_hw import regmap
from vdla_hw.config import PARAMETERS

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "docs" / "spec.md"


def test_register_table_is_regmap():
    text = SPEC.read_text()
    table = text.split("<!-- regmap:begin -->\n", 1)[1].split("<!-- regmap:end -->", 1)[0].strip()
    assert table == regmap.markdown().strip(), "docs/spec.md section 8 differs from `vdla regmap`; paste its output"


def test_parameters_named_in_spec_exist():
    registers = {r.name for r in regmap.REGISTERS}
    names = set(re.findall(r"`((?:LOG|MEM|DDR|CMD|TOKEN|FETCH|QUEUE|GEMM|ALU|INSN|CLOCK)_[A-Z_]+)`", SPEC.read_text()))
    names -= registers
    assert names and names <= set(PARAMETERS), sorted(names - set(PARAMETERS))


def test_code_cites_the_spec_in_the_repository():
    files = subprocess.run(["git", "ls-files", "*.py", "*.md", "*.txt", "*.tcl"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    outside = re.compile(r"(?<![\w/])" + "SPEC" + r"\.md")  # built so this file does not match itself
    stale = [f for f in files if outside.search((ROOT / f).read_text())]
    assert not stale, f"cite docs/spec.md, not the shared spec outside the repository: {stale}"
    cited = {int(n) for f in files for n in re.findall(r"docs/spec\.md sections? (\d)", (ROOT / f).read_text())}
    headings = {int(n) for n in re.findall(r"^## (\d)\. ", SPEC.read_text(), re.M)}
    assert cited <= headings, sorted(cited - headings)


def test_differences_from_vta_cite_vta_files():
    """Section 9 lists every known difference from VTA, each with the VTA file it refers to
    (or the page that covers it), and the issue-25 items are all there."""
    text = SPEC.read_text().split("## 9. Differences from VTA", 1)[1]
    items = re.findall(r"^\* \*\*(.+?)\*\*(.*?)(?=^\* \*\*|\Z)", text, re.M | re.S)
    titles = [title for title, _ in items]
    for needed in ("accumulator-hazard", "DRAM addresses", "STORE after LOAD ACC", "OUT after a reset GEMM",
                   "MUL", "SHR amount", "FINISH and leftover tokens", "Memory type 5", "Padded WGT and UOP"):
        assert any(needed in t for t in titles), needed
    for title, body in items:
        if title.startswith(("The accumulator-hazard", "DRAM addresses", "Aligned with VTA")):
            assert "Section 5" in body or "docs/vta.md" in body or "section 4" in body, title
            continue
        assert re.search(r"[\w/]+\.(cc|h|scala|cl|tcl)\b", body), f"{title}: names no VTA source file"
