"""README's "Performance" section, rendered from the recorded benchmark results
(``benchmarks/results/NAME.json``, written by ``python benchmarks/NAME.py --record``; see
benchmarks/record.py):

    python scripts/figures/performance.py table          # the table, then where each record comes from
    python scripts/figures/performance.py sweep-answer   # the recorded sweep's answer, one sentence
    python scripts/figures/performance.py slowest-tests  # the test suite's 20 slowest tests, recorded

Nothing is measured here: re-run a benchmark with ``--record`` and paste this output into
README (tests/test_doc_figures.py checks that README holds exactly what it prints).
"""

from __future__ import annotations

import operator
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import record as recording  # noqa: E402

COMPARE = {"<=": operator.le, "<": operator.lt, ">=": operator.ge}

# (record, what is measured, [(figure, format)], the figure its target is on or None); the
# benchmarks set the targets (their issue in brackets)
ROWS = [
    ("main_job", "main job cold: `vdla run resnet18 --plots DIR`, empty cache (issue 24)",
     [("cold_wall_s", "{:.2f} s wall"), ("cold_cpu_s", "{:.2f} s CPU")], "cold_wall_s"),
    ("main_job", "main job warm: the same again", [("warm_wall_s", "{:.2f} s wall"), ("warm_cpu_s", "{:.2f} s CPU")],
     "warm_wall_s"),
    ("main_job", "main job warm, no `--plots`", [("no_plots_wall_s", "{:.2f} s wall"), ("no_plots_cpu_s", "{:.2f} s CPU")],
     "no_plots_wall_s"),
    ("sim_resnet18_convs", "simulator: ResNet-18's 19 offloaded convs at 224, with data / timing only (issue 24)",
     [("data_cpu_s", "{:.3f} s CPU"), ("timing_cpu_s", "{:.3f} s CPU")], "data_cpu_s"),
    ("sim_gemm", "simulator: 1024^3 int8 GEMM, with data / timing only (issue 24)",
     [("cycles_per_cpu_s", "{:.1f} M cycles/s"), ("timing_cycles_per_cpu_s", "{:.1f} M cycles/s")],
     "cycles_per_cpu_s"),
    ("work_bounds", "simulator work bounds' rates per GEMM plan, every instruction planned anew: product plans' "
     "uops/s on tiny / multiply-adds/s on osdi18; the per-uop plan's multiply-adds/s on osdi18 (issue 45)",
     [("product_uops_per_s_tiny", "{:,.0f} uops/s"), ("product_macs_per_s_osdi18", "{:,.0f} MAC/s"),
      ("entry_macs_per_s_osdi18", "{:,.0f} MAC/s")], None),
    ("work_bounds", "the same: a 64-pattern plan piece / reset GEMM uops / ALU uops on one accumulator",
     [("groups64_insns_per_s", "{:,.0f} insns/s"), ("reset_uops_per_s", "{:,.0f} uops/s"),
      ("alu_uops_per_s", "{:,.0f} uops/s")], None),
    ("scalesim_compare", "SCALE-Sim 3 against `vdla compile` + `vdla sim` on ResNet-18's layer1 conv, CPU time "
     "ratio cold / warm (issue 24)", [("cold_ratio", "{:.0f}x"), ("warm_ratio", "{:.0f}x")], "cold_ratio"),
    ("scalesim_compare", "the same: SCALE-Sim / VDLA cold / VDLA warm",
     [("scalesim_cpu_s", "{:.2f} s CPU"), ("cold_cpu_s", "{:.2f} s"), ("warm_cpu_s", "{:.2f} s")], None),
    ("sweep_resnet18", "`vdla sweep examples/sweep_resnet18.json`, 2 workers, empty cache (issue 24)",
     [("points_per_s", "{:.2f} points/s"), ("wall_s", "{:.1f} s wall"), ("cpu_s", "{:.1f} s CPU")], "points_per_s"),
    ("search_resnet18", "schedule search (`best_schedule`) of the 19 convs, 1-2 threads / 1 thread",
     [("search_cpu_s", "{:.2f} s CPU"), ("one_thread_cpu_s", "{:.2f} s CPU")], None),
    ("rtl_speed", "RTL, Verilator compiled bench on a conv layer: core top / FPGA top (issue 13)",
     [("compiled_core_cycles_per_s", "{:.2f} M cycles/s"), ("compiled_axi_cycles_per_s", "{:.2f} M cycles/s")],
     "compiled_core_cycles_per_s"),
    ("rtl_speed", "`vdla run resnet18 --target rtl` at 224, warm build / the same on `--target sim` (issue 13)",
     [("resnet18_rtl_wall_s", "{:.1f} s wall"), ("resnet18_sim_wall_s", "{:.1f} s wall")], "resnet18_rtl_wall_s"),
    ("serve_preauth", "`vdla serve` under 64 keyless clients: RSS rise; an authenticated ping, median / max "
     "(issue 22)", [("rss_rise_mb", "{:.1f} MB"), ("ping_median_ms", "{:.1f} ms"), ("ping_max_ms", "{:.1f} ms")],
     "ping_max_ms"),
    ("serve_preauth", "`vdla serve`: peak memory growth of one 127 MiB upload, over its size (issue 22)",
     [("upload_peak_ratio", "{:.3f}x")], "upload_peak_ratio"),
    ("test_suite", "the fast tier, `pytest -n auto -m \"not slow\"` on 2 cores: wall / CPU / tests (issue 43)",
     [("fast_wall_s", "{:.0f} s wall"), ("fast_cpu_s", "{:.0f} s CPU"), ("fast_tests", "{:d} tests")], "fast_wall_s"),
    ("test_suite", "clean-clone `CI=true bash .ci/run` (set-up, whole suite on 2 cores, board tests): wall / CPU "
     "(issue 43)", [("ci_wall_s", "{:.0f} s wall"), ("ci_cpu_s", "{:.0f} s CPU")], "ci_wall_s"),
    ("test_suite", "the same: its whole-suite pytest session, wall / tests; board tests",
     [("suite_wall_s", "{:.0f} s wall"), ("suite_tests", "{:d} tests"), ("board_tests", "{:d} tests")], None),
    ("test_suite", "the same: the compiler and synthesis caches it used; C++ compilations ccache answered / "
     "compiled (docs/testing.md)", [("caches", "{}"), ("ci_ccache_hits", "{:d} hits"),
                                   ("ci_ccache_misses", "{:d} compiled")], None),
    ("mutants", "mutation testing, every mutant of `scripts/mutants.py`: killed / run, score (issue 26)",
     [("killed", "{:d}"), ("listed", "{:d}"), ("score", "{:.1%}")], "score"),
    ("mutants", "the same: wall time of the whole run / CPU of its tests (issue 26)",
     [("wall_s", "{:.0f} s wall"), ("cpu_s", "{:.0f} s CPU")], "wall_s"),
]
SCRIPTS = {"mutants": "scripts/mutants.py"}  # the measuring scripts that are not benchmarks/NAME.py


def script(name: str) -> str:
    """The path (from the repository's root) of the script that records ``name``."""
    return SCRIPTS.get(name, f"benchmarks/{name}.py")


def target_cell(record: dict, figure: str | None) -> str:
    if figure is None or figure not in record["targets"]:
        return "-"
    op, value = record["targets"][figure]
    unit = record["units"][figure].split(":")[0]
    met = COMPARE[op](record["figures"][figure], value)
    stated = f"{value:.0%}" if unit == "fraction" else f"{value:g}{'' if unit == 'x' else ' '}{unit}"
    return f"{op} {stated}: {'met' if met else '**not met**'}"


def table() -> str:
    recorded = recording.read_all()
    lines = ["| measured | recorded | target | benchmark |", "|---|---|---|---|"]
    for name, what, cells, target in ROWS:
        if name not in recorded:
            lines.append(f"| {what} | not recorded | - | `{script(name)}` |")
            continue
        record = recorded[name]
        shown = " / ".join(fmt.format(record["figures"][figure]) for figure, fmt in cells)
        lines.append(f"| {what} | {shown} | {target_cell(record, target)} | `{script(name)}` |")
    lines.append("")
    lines.append("Where each record comes from (load: the 1-minute load average before and after the run):")
    lines.append("")
    shown = {name for name, *_ in ROWS}  # other records (onnx_int8's accuracy) belong to other docs
    for name, record in recorded.items():
        if name not in shown:
            continue
        lines.append(f"- `{name}`: {recording.provenance(record)}")
    return "\n".join(lines)


def sweep_answer() -> str:
    record = recording.read_all()["sweep_resnet18"]
    best = record["figures"]["answer"]["resnet18"]
    return (f"The recorded sweep's answer: the fastest configuration that fits the xc7z020 within its clock "
            f"estimate is `{best['fingerprint'].split('-')[0]}` (fingerprint without its hash) at {best['clock_mhz']:g} MHz (its estimate {best['fmax_mhz']:g} "
            f"MHz), {best['latency_ms']:.1f} ms per inference, {best['speedup']:.2f}x over the modelled CPU alone; "
            f"{record['figures']['over_clock_estimate']} of the {record['figures']['points']} points are over their "
            f"clock estimate.")


def slowest_tests() -> str:
    """The whole suite's slowest tests in the recorded clean-clone CI run (setup + call + teardown)."""
    record = recording.read_all()["test_suite"]
    lines = ["| seconds | test |", "|---|---|"]
    lines += [f"| {seconds:.1f} | `{test}` |" for seconds, test in record["figures"]["slowest"]]
    return "\n".join(lines)


BLOCKS = {"table": table, "sweep-answer": sweep_answer, "slowest-tests": slowest_tests}

if __name__ == "__main__":
    from block_cli import main

    sys.exit(main(BLOCKS))
