"""README.md's figures read out of the README and compared with the code, and the recorded
benchmark results its Performance table is rendered from (scripts/figures/performance.py)."""

import ast
import json
import math
import re
from pathlib import Path

import pytest

from tests.docs.doctext import generator, marked_paragraph, number
from tests.test_doc_figures import ROOT
from vdla_hw.config import load_config

README = "README.md"
BENCHMARKS = ROOT / "benchmarks"
performance = generator("performance")  # scripts/figures/performance.py: the table's renderer


def table_rows(text: str) -> list[list[str]]:
    """The cells of a markdown table's body rows."""
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in text.splitlines()
            if line.startswith("|")]
    return rows[2:]


def buffers(cell: str, rows: dict) -> dict[str, int]:
    """The LOG_*_BUFF_SIZE values a "core and buffers" cell states ("as `osdi18`" inherits that row's)."""
    inherit = re.search(r"as `([\w-]+)`", cell)
    sizes = dict(buffers(rows[inherit[1]][2], rows)) if inherit else {}
    for kib, what in re.findall(r"(\d+) kB ([\w/]+)", cell):
        for mem in {"weights": ["wgt"]}.get(what, what.split("/")):
            sizes[f"LOG_{mem.upper()}_BUFF_SIZE"] = int(math.log2(int(kib) * 1024))
    return sizes


def test_the_presets_table_is_the_presets():
    rows = {re.search(r"`([\w-]+)`", r[0])[1]: r for r in table_rows(marked_paragraph(
        README, "test_the_presets_table_is_the_presets"))}
    assert set(rows) >= {"osdi18", "osdi18-200", "vta-pynq", "tiny"}
    for name, (_, _, core, clock, port, roof, ddr) in rows.items():
        config = load_config(name)
        block = re.search(r"(\d+)x(\d+)", core) or re.search(r"(\d+)x(\d+)", rows["osdi18"][2])
        assert (int(block[1]), int(block[2])) == (config.block_in, config.block_out), name
        for param, value in buffers(core, rows).items():
            assert config.params[param] == value, (name, param)
        assert number(re.search(r"([\d.]+) MHz", clock)[1]) == config.CLOCK_MHZ, name
        assert re.match(r"`(\w+)`", port)[1] == config.params["MEM_PORT"], name
        assert number(re.search(r"([\d.]+) GB/s", roof)[1]) == pytest.approx(config.mem_bytes_per_s / 1e9), name
        cap = config.params["DDR_BYTES_PER_CYCLE_CAP"]
        assert (ddr == "none") == (cap == 0), name
        stated = re.search(r"([\d.]+) GB/s", ddr)
        if stated:
            assert number(stated[1]) == pytest.approx(cap * config.CLOCK_MHZ * 1e6 / 1e9), name


def test_the_fit_paragraph_is_the_code():
    from vdla_hw.rtl.fmax_reference import REFERENCES

    text = " ".join(marked_paragraph(README, "test_the_fit_paragraph_is_the_code").split())
    held = re.search(r"published Vivado fmax of (\d+) held-out designs", text)
    assert held and int(held[1]) == len(REFERENCES), text
    decode = re.search(r"a (\d+)-cycle LOAD/STORE decode pipeline, `INSN_OVERHEAD` (\d+)", text)
    overhead = load_config("osdi18").params["INSN_OVERHEAD"]
    assert decode and int(decode[1]) == int(decode[2]) == overhead, text


def test_the_mutation_paragraph_is_the_script():
    from tests.test_mutants import mutants

    text = " ".join(marked_paragraph(README, "test_the_mutation_paragraph_is_the_script").split())
    listed = re.search(r"\((\d+) in version (\d+):", text)
    assert listed and (int(listed[1]), int(listed[2])) == (len(mutants.MUTANTS), mutants.VERSION), text
    target = re.search(r"exits 0 when the score is at least (\d+) %", text)
    assert target and number(target[1]) / 100 == mutants.TARGET, text


def declared_figures(benchmark: Path) -> dict:
    """A benchmark's FIGURES constant, read from its source (not imported: benchmarks are scripts)."""
    for node in ast.parse(benchmark.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "FIGURES" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{benchmark.relative_to(ROOT)} declares no FIGURES")


RECORDS = sorted((BENCHMARKS / "results").glob("*.json"))


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.stem)
def test_each_record_holds_what_its_benchmark_measures_today(path):
    record = json.loads(path.read_text())
    benchmark = ROOT / record["benchmark"]
    assert benchmark in (BENCHMARKS / f"{path.stem}.py", ROOT / "scripts" / f"{path.stem}.py") and benchmark.is_file(), \
        record["benchmark"]
    declared = declared_figures(benchmark)
    assert list(record["figures"]) == list(declared) and record["units"] == declared, \
        f"{path.name}: re-run `python {record['benchmark']} --record` (its figures changed)"
    assert set(record["targets"]) <= set(declared)
    assert record["command"].startswith(f"python {record['benchmark']} ") and "--record" in record["command"]
    for key in ("date", "commit", "load_average_before", "load_average_after", "machine"):
        assert record[key], key


def test_every_row_of_the_performance_table_names_a_recorded_figure():
    recorded = performance.recording.read_all()
    for name, _, cells, target in performance.ROWS:
        declared = declared_figures(ROOT / performance.script(name))
        assert {figure for figure, _ in cells} | ({target} - {None}) <= set(declared), name
        assert name in recorded, f"benchmarks/results/{name}.json is missing: run python {performance.script(name)} --record"
