"""Mutation testing: apply a fixed, versioned list of mutants one at a time and check the tests kill them.

Each mutant is one exact snippet of one file replaced by another, and the targeted test selection
that should fail on it. The script copies the repository's files (``git ls-files``: tracked and
untracked-but-not-ignored, as they are in the working tree now) to a temporary folder once, then
per mutant writes the mutated file there, runs the selection with ``pytest -x`` in that copy and
restores the file: the working tree is never edited. A mutant is *killed* when its selection
fails, *survived* when it passes; a snippet that is missing or appears more than once is an
*error* (the list went stale: fix the snippet, never let it pass silently), and so is a selection
that collects no tests.

    .venv/bin/python scripts/mutants.py                 # every mutant, the score, exit 0 iff >= TARGET
    .venv/bin/python scripts/mutants.py --list          # the list
    .venv/bin/python scripts/mutants.py --only NAME ... # some of them
    .venv/bin/python scripts/mutants.py --json          # the results as JSON on stdout

Before the mutants, each distinct selection runs once unmutated and must pass (``--no-baseline``
skips this): a selection that fails anyway would "kill" every mutant it is given.

Progress goes to stderr, the table to stdout; a closed stdout (``--list | head``) ends quietly
with exit status 141, as ``vdla`` does. The selections are kept small so the whole run
stays under 10 minutes on a 2-core machine (``--record``: README's Performance table shows the score and time);
tests/test_mutants.py runs a few of them in CI through :func:`run`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VERSION = 3       # bump when the list changes (the score in the README is for this version)
TARGET = 0.95     # the score the run must reach
MAX_WALL_S = 600  # the whole run on a 2-core machine (issue 26)
# what --record writes (benchmarks/record.py; README's Performance table shows it)
FIGURES = {"killed": "mutants: killed", "listed": "mutants: run", "score": "fraction: killed over run",
           "wall_s": "s: wall time of the whole run, baselines included", "cpu_s": "s: CPU time of its tests"}
TIMEOUT_S = 300   # per mutant: a selection still running then is killed by the timeout (detail says so)


@dataclass(frozen=True)
class Mutant:
    name: str
    area: str            # simulator, semantics, compiler, quantizer, cost model, rtl
    file: str            # path in the repository
    original: str        # exact snippet, present exactly once in the file
    replacement: str
    tests: tuple         # pytest arguments: paths / node ids (and -k / -m options)
    why: str = ""


M = Mutant
COST = "tests/compiler/cpu_fallback/cost/"
MUTANTS = (
    # --- semantics (the reference the simulator calls) ---------------------------------------
    M("sem_mul_operand_unsigned", "semantics", "vdla_hw/alu.py",
      "return ((b & 0xFF) ^ 0x80) - 0x80", "return b & 0xFF",
      ("tests/hw/test_alu_int32.py",), "MUL reads its operand's low byte unsigned (issue 26)"),
    M("sem_mul_saturates", "semantics", "vdla_hw/alu.py",
      'AluOp(4, "mul", lambda a, b: a * _low8(b),',
      'AluOp(4, "mul", lambda a, b: np.clip(a * _low8(b), -(1 << 31), (1 << 31) - 1),',
      ("tests/hw/test_alu_int32.py",), "MUL saturates instead of wrapping"),
    M("sem_add_saturates", "semantics", "vdla_hw/alu.py",
      'AluOp(2, "add", lambda a, b: a + b,', 'AluOp(2, "add", lambda a, b: np.clip(a + b, -(1 << 31), (1 << 31) - 1),',
      ("tests/hw/test_alu_int32.py",), "ADD saturates instead of wrapping"),
    M("sem_shr_clip_30", "semantics", "vdla_hw/alu.py",
      "amount = np.clip(b, -SHIFT_MAX, SHIFT_MAX)", "amount = np.clip(b, -SHIFT_MAX, SHIFT_MAX - 1)",
      ("tests/hw/test_alu_int32.py",), "SHR by 31 shifts by 30"),
    M("sem_shl_one_short", "semantics", "vdla_hw/alu.py",
      "left = a << np.maximum(-amount, 0)", "left = a << np.maximum(-amount - 1, 0)",
      ("tests/hw/test_alu_int32.py",), "a negative SHR shifts left one bit short"),
    M("sem_min_is_max", "semantics", "vdla_hw/alu.py",
      'AluOp(0, "min", np.minimum,', 'AluOp(0, "min", np.maximum,',
      ("tests/hw/test_alu_int32.py",), "MIN computes MAX"),
    # --- simulator ----------------------------------------------------------------------------
    M("sim_alu_reads_dst_as_src", "simulator", "vdla_sim/datapath.py",
      "operand = np.full_like(target, insn.imm) if s is None else acc[s]",
      "operand = np.full_like(target, insn.imm) if s is None else acc[d]",
      ("tests/sim/test_sim_vs_reference.py",), "a register-operand ALU reads its destination"),
    M("sim_alu_vectorises_read_after_write", "simulator", "vdla_sim/datapath.py",
      "ok = bool((self.mark[s] >= pos).all())", "ok = True",
      ("tests/sim/test_sim_vs_reference.py",), "an ALU wave reads a source an earlier uop of it writes"),
    M("sim_token_queue_one_deeper", "simulator", "vdla_sim/engine.py",
      "if held + 1 > depth:", "if held > depth:",
      ("tests/sim/test_errors.py",), "a token queue takes one token more than its depth"),
    M("sim_gemm_empty_pays_pipeline", "simulator", "vdla_hw/timing.py",
      "return config.INSN_OVERHEAD + (n + config.GEMM_PIPELINE_DEPTH if n else 0)",
      "return config.INSN_OVERHEAD + n + config.GEMM_PIPELINE_DEPTH",
      ("tests/sim/test_timing.py",), "a GEMM with no uops pays the pipeline depth"),
    M("sim_load_no_pad_cycles", "simulator", "vdla_hw/timing.py",
      "return rows * cols - insn.y_size * insn.x_size if rows else 0", "return 0",
      ("tests/sim/test_timing.py", "tests/sim/test_golden.py"), "LOAD padding costs no cycles"),
    M("sim_alu_one_cycle_per_uop", "simulator", "vdla_hw/timing.py",
      "config.ALU_CYCLES_PER_UOP * n + config.ALU_PIPELINE_DEPTH", "n + config.ALU_PIPELINE_DEPTH",
      ("tests/sim/test_timing.py", "tests/sim/test_golden.py"), "ALU uops issue every cycle"),
    # --- compiler -----------------------------------------------------------------------------
    M("comp_pack_drops_channel_pad", "compiler", "compiler/layout.py",
      "padded = np.zeros((blocks(n, batch) * batch, blocks(c, block) * block, h, w), dtype=dtype)",
      "padded = np.ones((blocks(n, batch) * batch, blocks(c, block) * block, h, w), dtype=dtype)",
      ("tests/compiler/test_layout.py",), "activation padding is filled with ones"),
    M("comp_unpack_transposed", "compiler", "compiler/layout.py",
      "full = packed.transpose(0, 4, 1, 5, 2, 3)", "full = packed.transpose(0, 4, 1, 5, 3, 2)",
      ("tests/compiler/test_layout.py",), "unpack swaps H and W"),
    M("comp_bias_not_broadcast", "compiler", "compiler/layout.py",
      "padded[:o] = bias\n", "padded[:o] = bias[::-1]\n",
      ("tests/compiler/test_layout.py", "tests/compiler/test_layers.py"), "bias channels reversed"),
    M("comp_acc_fit_ignores_shift_rows", "compiler", "compiler/tensorize/search.py",
      "(2 if layer.per_channel_shift else 1) + max(th * tw, HAZARD_DISTINCT)", "1 + max(th * tw, HAZARD_DISTINCT)",
      ("tests/compiler/tensorize/test_quick_fit.py",), "the accumulator fit forgets the per-channel shift row"),
    # --- quantizer ----------------------------------------------------------------------------
    M("q_no_per_channel_scales", "quantizer", "compiler/quantize/rules.py",
      "fw = weight_fracs(w, ctx.per_channel)", "fw = weight_fracs(w, False)",
      ("tests/compiler/quantize/test_scales.py",), "per-channel weight scales off (issue 26)"),
    M("q_no_bias_correction", "quantizer", "compiler/quantize/rules.py",
      "if ctx.bias_correction:", "if False:",
      ("tests/compiler/quantize/test_scales.py",), "bias correction off (issue 26)"),
    M("q_requant_no_half", "quantizer", "compiler/quantize/rules.py",
      "half = np.where(shift > 0, np.left_shift(1, np.maximum(shift - 1, 0)), 0)", "half = 0 * shift",
      ("tests/compiler/quantize/test_calibrate.py",), "requantization floors instead of rounding"),
    M("q_zero_point_share_dropped", "quantizer", "compiler/quantize/rules.py",
      "+ np.left_shift(zy, shift) - zero_share", "+ np.left_shift(zy, shift)",
      ("tests/compiler/quantize/test_calibrate.py",), "the input zero point's share of the bias is dropped"),
    M("q_round_shift_floors", "quantizer", "compiler/quantize/reference.py",
      "return (x + (1 << (shift - 1))) >> shift if shift > 0 else x", "return x >> shift if shift > 0 else x",
      ("tests/compiler/quantize/test_scales.py",), "round_shift floors"),
    M("q_quantize_floors", "quantizer", "compiler/quantize/reference.py",
      "return np.clip(np.rint(scaled, out=scaled), -128, 127, out=scaled).astype(np.int8)",
      "return np.clip(np.floor(scaled, out=scaled), -128, 127, out=scaled).astype(np.int8)",
      ("tests/compiler/quantize/test_scales.py",), "float -> int8 floors"),
    # --- CPU cost model -----------------------------------------------------------------------
    M("cost_no_writeback_bytes", "cost model", "compiler/cpu_fallback/cost/model.py",
      "dram_bytes = cpu.line_bytes * dram_lines + -(-written // cpu.line_bytes) * cpu.line_bytes",
      "dram_bytes = cpu.line_bytes * dram_lines",
      (COST + "test_model.py", COST + "test_memory.py", COST + "test_terms.py"), "dirty lines are not written back"),
    M("cost_no_branch_term", "cost model", "compiler/cpu_fallback/cost/model.py",
      "branch = mispredicts * cpu.mispredict_cycles", "branch = 0.0",
      (COST + "test_model.py", COST + "test_terms.py"), "loop exits cost nothing"),
    M("cost_no_fork_join", "cost model", "compiler/cpu_fallback/cost/model.py",
      "fork_join = cpu.fork_join_s * cpu.clock_hz if cores > 1 else 0.0", "fork_join = 0.0",
      (COST + "test_threads.py", COST + "test_terms.py"), "a two-thread kernel pays no fork/join"),
    M("cost_l2_counts_dram_lines", "cost model", "compiler/cpu_fallback/cost/model.py",
      "else whole.l1_misses - whole.l2_misses", "else whole.l1_misses",
      (COST + "test_model.py", COST + "test_terms.py"), "L2-hit lines also count the DRAM fills"),
    M("cost_hidden_not_capped", "cost model", "compiler/cpu_fallback/cost/memory.py",
      "hidden = min(reach, compute)", "hidden = reach",
      (COST + "test_memory.py", COST + "test_terms.py"), "more memory hidden than there is compute"),
    M("cost_full_overlap", "cost model", "compiler/cpu_fallback/cost/memory.py",
      "reach = sum(cycles if window is None else min(cycles, lines * window) for cycles, lines in levels)",
      "reach = sum(cycles for cycles, lines in levels)",
      (COST + "test_memory.py", COST + "test_terms.py"), "the miss window no longer limits the overlap"),
    M("cost_no_dram_latency", "cost model", "compiler/cpu_fallback/cost/memory.py",
      "dram = max(dram, traffic.dram_read_lines * latency / fill)", "dram = dram",
      (COST + "test_memory.py", COST + "test_terms.py"), "DRAM time is bandwidth only"),
    M("cost_no_shared_dram_ceiling", "cost model", "compiler/cpu_fallback/cost/memory.py",
      "bandwidth = min(bandwidth, cpu.shared_dram_bytes_per_s)", "bandwidth = bandwidth",
      (COST + "test_memory.py", COST + "test_terms.py"), "two cores get twice the DRAM bandwidth"),
    M("cost_flush_no_dirty_writeback", "cost model", "compiler/cpu_fallback/cost/model.py",
      "flush = self._maintenance(flushed) + dirty / cpu.dram_bytes_per_s", "flush = self._maintenance(flushed)",
      (COST + "test_offload.py", COST + "test_model.py", COST + "test_terms.py"), "flushing writes nothing back"),
    M("cost_poll_no_slack", "cost model", "compiler/cpu_fallback/cost/model.py",
      "now += pause + runtime.sleep_slack_s + read_s", "now += pause + read_s",
      (COST + "test_model.py", COST + "test_terms.py"), "poll sleeps are not stretched by the timer slack"),
    # --- RTL (MyHDL block tests, no Verilog build) --------------------------------------------
    M("rtl_mul_operand_unsigned", "rtl", "vdla_hw/rtl/gemm.py",
      "prod.next = a1.signed() * b81.signed()", "prod.next = a1.signed() * b81",
      ("tests/rtl/test_blocks.py", "-m", "rtl", "-k", "alu_core"), "the RTL's MUL takes its byte unsigned"),
    M("rtl_shr_logical", "rtl", "vdla_hw/rtl/gemm.py",
      "shr.next = a1.signed() >> amt", "shr.next = a1 >> amt",
      ("tests/rtl/test_blocks.py", "-m", "rtl", "-k", "alu_core"), "the RTL's SHR is logical"),
    M("rtl_min_picks_larger", "rtl", "vdla_hw/rtl/gemm.py",
      "            if lt:\n                res.next = a1", "            if not lt:\n                res.next = a1",
      ("tests/rtl/test_blocks.py", "-m", "rtl", "-k", "alu_core"), "the RTL's MIN picks the larger"),
    M("rtl_imm_zero_extended", "rtl", "vdla_hw/rtl/decode.py",
      "HIGH = ((1 << len(out)) - 1) ^ ((1 << len(raw)) - 1)", "HIGH = 0",
      ("tests/rtl/test_blocks.py", "-m", "rtl", "-k", "decode"), "imm is zero-extended"),
    # --- held against the board, transformers (version 3) ---------------------------------------
    M("bus_rows_serial_ignored", "simulator", "vdla_hw/membus.py",
      "                                    e[k - 1] + 1 if waits[k] else 0)",
      "                                    0)",
      ("tests/hw/test_membus.py",), "rows one at a time: a row's first read is addressed before the last row ends"),
    M("bus_rows_serial_no_saved_cycle", "simulator", "vdla_hw/membus.py",
      "return sum(read_cycles(config, row) for row in rows) - (len(rows) - 1)",
      "return sum(read_cycles(config, row) for row in rows)",
      ("tests/hw/test_membus.py",), "rows one at a time: a grant between rows"),
    M("tokens_reshape_not_sunk_past_affine", "compiler", "compiler/frontend/simplify.py",
      'SINKS_PAST_TOKENS = ("relu", "clip", "affine")', 'SINKS_PAST_TOKENS = ("relu", "clip")',
      ("tests/compiler/frontend/test_exporter_graphs.py", "-k", "tokens"), "a Linear's bias after a dense over tokens stays an op"),
    M("tokens_dense_is_a_classifier", "compiler", "compiler/network/partition.py",
      "    classifier = rows <= images", "    classifier = True",
      ("tests/compiler/frontend/test_exporter_graphs.py", "-k", "tokens"), "a dense over tokens stays on the CPU"),
)


def by_name(names) -> list[Mutant]:
    known = {m.name: m for m in MUTANTS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown mutant(s): {', '.join(unknown)} (see --list)")
    return [known[n] for n in names]


def copy_tree(dest: Path) -> None:
    """The repository's files as they are now (tracked and new, not ignored) under ``dest``."""
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, names):
        src = ROOT / name
        if src.is_file() and not src.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def mutate(text: str, m: Mutant) -> str:
    count = text.count(m.original)
    if count != 1:
        raise LookupError(f"{m.name}: snippet {'not found' if count == 0 else f'found {count} times'} in {m.file}")
    return text.replace(m.original, m.replacement)


def run_one(tree: Path, m: Mutant, python: str = sys.executable, timeout: float = TIMEOUT_S) -> dict:
    """Apply ``m`` in ``tree`` (a copy), run its selection, restore the file; the result row."""
    path = tree / m.file
    original = path.read_text() if m.file else ""
    start = time.monotonic()
    cpu0 = os.times()
    try:
        if m.file:
            path.write_text(mutate(original, m))
    except LookupError as err:
        return {"name": m.name, "area": m.area, "status": "error", "detail": str(err), "wall_s": 0.0, "cpu_s": 0.0}
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *m.tests]
    try:
        proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout)
        code, tail = proc.returncode, (proc.stdout.strip().splitlines() or [""])[-1]
    except subprocess.TimeoutExpired:
        code, tail = -1, f"timeout after {timeout:.0f} s"
    finally:
        if m.file:
            path.write_text(original)
    cpu1 = os.times()
    status = {0: "survived", 1: "killed", -1: "killed"}.get(code, "error")  # 2-5: interrupted, usage, no tests
    return {"name": m.name, "area": m.area, "status": status, "detail": tail,
            "wall_s": round(time.monotonic() - start, 1),
            "cpu_s": round(cpu1.children_user + cpu1.children_system - cpu0.children_user - cpu0.children_system, 1)}


def baseline(tree: Path, mutants, python: str = sys.executable, progress=None) -> list[str]:
    """The selections of ``mutants`` that fail on the unmutated copy (a kill there would mean nothing)."""
    failing = []
    for tests in dict.fromkeys(m.tests for m in mutants):
        row = run_one(tree, Mutant("baseline", "", "", "", "", tests), python)  # no file: nothing mutated
        if row["status"] != "survived":
            failing.append(" ".join(tests))
        if progress:
            progress(f"baseline {' '.join(tests)}: {'passes' if row['status'] == 'survived' else 'FAILS'} "
                     f"({row['wall_s']} s) {row['detail']}")
    return failing


def run(mutants, python: str = sys.executable, progress=None, check_baseline: bool = False) -> list[dict]:
    """Each of ``mutants`` applied alone to one temporary copy of the repository; result rows.
    ``check_baseline``: first run each selection unmutated; one that fails raises RuntimeError."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="vdla-mutants-") as tmp:
        tree = Path(tmp)
        copy_tree(tree)
        failing = baseline(tree, mutants, python, progress) if check_baseline else []
        if failing:
            raise RuntimeError(f"selections failing without a mutant: {'; '.join(failing)}")
        for k, m in enumerate(mutants, 1):
            row = run_one(tree, m, python)
            rows.append(row)
            if progress:
                progress(f"[{k}/{len(mutants)}] {m.name}: {row['status']} ({row['wall_s']} s) {row['detail']}")
    return rows


def score(rows) -> float:
    return sum(r["status"] == "killed" for r in rows) / len(rows) if rows else 0.0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", action="store_true", help="print the mutants and exit")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="run only these mutants")
    ap.add_argument("--json", action="store_true", help="print the result rows as JSON")
    ap.add_argument("--python", default=sys.executable, help="the interpreter that runs pytest")
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip running each selection unmutated first (it must pass for a kill to count)")
    ap.add_argument("--record", action="store_true",
                    help="write the score and times to benchmarks/results/mutants.json (a whole run only)")
    args = ap.parse_args(argv)
    if args.record and (args.only or args.no_baseline or args.list):
        ap.error("--record records a whole run: not with --only, --no-baseline or --list")
    mutants = by_name(args.only) if args.only else list(MUTANTS)
    if args.list:
        for m in mutants:
            print(f"{m.name:38} {m.area:11} {m.file:40} {' '.join(m.tests)}")
        return 0
    start, loads, cpu0 = time.monotonic(), [round(x, 2) for x in os.getloadavg()], os.times()
    load = loads[0]
    try:
        rows = run(mutants, args.python, progress=lambda line: print(line, file=sys.stderr, flush=True),
                   check_baseline=not args.no_baseline)
    except RuntimeError as err:
        print(f"mutants: {err}", file=sys.stderr)
        return 2
    wall, value, cpu1 = time.monotonic() - start, score(rows), os.times()
    cpu = cpu1.children_user + cpu1.children_system - cpu0.children_user - cpu0.children_system
    killed = sum(r["status"] == "killed" for r in rows)
    if args.json:
        print(json.dumps({"version": VERSION, "score": value, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
                          "load": load, "rows": rows}, indent=1))
    else:
        for r in rows:
            print(f"{r['name']:38} {r['area']:11} {r['status']:9} {r['wall_s']:6.1f} s  {r['cpu_s']:6.1f} cpu-s")
        errors = [r["name"] for r in rows if r["status"] == "error"]
        print(f"mutants v{VERSION}: {killed}/{len(rows)} killed, score {value:.1%} (target {TARGET:.0%}); "
              f"{wall:.0f} s wall, {cpu:.0f} cpu-s (baseline included), load {load:.2f} at start"
              + (f"; errors: {', '.join(errors)}" if errors else ""))
    if args.record:
        sys.path.insert(0, str(ROOT))
        from benchmarks import record

        record.write("mutants", FIGURES, {"killed": killed, "listed": len(rows), "score": round(value, 4),
                                          "wall_s": round(wall, 1), "cpu_s": round(cpu, 1)}, loads,
                     {"score": (">=", TARGET), "wall_s": ("<", MAX_WALL_S)}, script="scripts/mutants.py")
    return 0 if value >= TARGET and not any(r["status"] == "error" for r in rows) else 1  # 2: baseline fails


EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a killed ``cat`` gives (as ``vdla``)


def _main_quiet_on_closed_pipe() -> int:
    """:func:`main`, ending quietly when the reader of stdout went away (``--list | head``):
    stdout is pointed at /dev/null so the final flush cannot fail again, nothing is printed on
    stderr and the exit status is :data:`EXIT_BROKEN_PIPE`."""
    try:
        code = main()
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_BROKEN_PIPE


if __name__ == "__main__":
    sys.exit(_main_quiet_on_closed_pipe())
