"""The encoder-block study (issue 28, item 5): a BERT-base-sized block run, then swept over GEMM arrays and buffers.

    python -m experiments.transformer_study [--out results] [--d-model 768] [--heads 12] [--ffn 3072]
                                            [--seq 128] [--activation gelu|relu] [--config osdi18]
                                            [--space examples/sweep_encoder.json] [--no-sweep]

1. Builds the encoder block of :mod:`experiments.encoder_block` (torch's post-norm
   ``nn.TransformerEncoderLayer`` as exported, seeded random weights) and writes it to
   ``OUT/encoder_block.onnx``.
2. Runs it as ``vdla run`` does (:func:`vdla.network.run_network`, cost placement, the CPU model
   cortex-a9) on ``--config`` and writes that run's files to ``OUT/run/`` (layers.csv with the
   cycles per layer, summary.json, the figures); prints the per-layer table, the offloaded share
   of the MACs, the Amdahl bound and the CPU-resident ops that bound it, largest first.
3. Sweeps the space file (default ``examples/sweep_encoder.json``: LOG_BLOCK 3, 4, 5 x two weight
   and two input buffer sizes) over the block through :mod:`dse` in this process
   (``--executor local``) into ``OUT/sweep/``, and tabulates latency, GEMM utilisation and part
   use per point (``OUT/transformer_study.csv``, figure ``OUT/transformer_study.png``/``.pdf``);
   every model parameter behind the numbers with its source in ``OUT/transformer_study_parameters.csv``.
   The shape is compared with SCALE-Sim 3's ViT result (larger arrays faster, smaller ones more
   efficient): the verdict is computed from the points, per array size at its best buffers.

Accelerator times are simulated cycles at the configuration's clock; CPU and host times come
from the code-level CPU model (docs/cpu-model.md). Nothing is fitted.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from experiments import study
from vdla_hw.errors import VdlaError

NAME = "transformer_study"
SPACE = Path(__file__).resolve().parent.parent / "examples" / "sweep_encoder.json"
BUFFERS = ("LOG_WGT_BUFF_SIZE", "LOG_INP_BUFF_SIZE", "LOG_ACC_BUFF_SIZE")
SWEEP_FIELDS = ("LOG_BLOCK", *BUFFERS, "status", "latency_s", "accelerator_cycles",
                "gemm_utilization", "gops", "part_use", "speedup", "amdahl_bound", "fits_xc7z020", "error")
RESIDENT_TOP = 5  # CPU-resident op kinds listed
COMPARED = r"scale-?sim"  # a parameter source citing the compared study is flagged (study.parameters)


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def parser() -> argparse.ArgumentParser:
    from vdla.argtypes import ArgumentParser, output_dir

    from experiments.encoder_block import ACTIVATIONS, BlockShape

    d = BlockShape()
    p = ArgumentParser(prog="python -m experiments.transformer_study", description=__doc__.splitlines()[0])
    p.add_argument("--out", type=output_dir, default="results", help="output folder (default results)")
    p.add_argument("--d-model", type=positive, default=d.d_model, help=f"channels (default {d.d_model}, BERT-base)")
    p.add_argument("--heads", type=positive, default=d.heads, help=f"attention heads (default {d.heads})")
    p.add_argument("--ffn", type=positive, default=d.ffn, help=f"feed-forward channels (default {d.ffn})")
    p.add_argument("--seq", type=positive, default=d.seq, help=f"tokens (default {d.seq})")
    p.add_argument("--activation", choices=ACTIVATIONS, default=d.activation,
                   help=f"feed-forward activation (default {d.activation}, BERT's)")
    p.add_argument("--config", default="osdi18", help="configuration of the run (default osdi18)")
    p.add_argument("--space", default=str(SPACE), help="sweep space (default examples/sweep_encoder.json; its "
                   "models are replaced by the block)")
    p.add_argument("--no-sweep", action="store_true", help="the run only")
    return p


class ShapeError(VdlaError):
    """The block's sizes do not go together (heads not dividing d_model)."""


def block_shape(args):
    from experiments.encoder_block import BlockShape

    try:
        return BlockShape(d_model=args.d_model, heads=args.heads, ffn=args.ffn, seq=args.seq,
                          activation=args.activation)
    except ValueError as err:
        raise ShapeError(f"encoder block: {err}") from None


def resident_ops(records, top: int = RESIDENT_TOP) -> list[dict]:
    """The CPU-resident time of a run by op kind (CPU ops, and the host's work around the
    offloads), largest first: what bounds the Amdahl bound."""
    kinds: dict[str, dict] = {}
    for r in records:
        if r.placement == "cpu" and r.seconds:
            entry = kinds.setdefault(r.op, {"op": r.op, "count": 0, "seconds": 0.0})
            entry["count"] += 1
            entry["seconds"] += r.seconds
    host = sum(r.host_seconds for r in records if r.placement == "vdla")
    if host:
        kinds["host"] = {"op": "host around offloads", "count": sum(r.placement == "vdla" for r in records),
                         "seconds": host}
    rows = sorted(kinds.values(), key=lambda e: -e["seconds"])
    total = sum(e["seconds"] for e in rows)
    return [{**e, "share": e["seconds"] / total if total else 0.0} for e in rows[:top]]


def sweep_rows(out: Path, model_hash: str) -> list[dict]:
    """The sweep's points (``points.csv``) of the model ``model_hash`` (an earlier study in the same
    folder may have left another block's) with the study's columns, by array and buffer sizes."""
    from dse.store import read_rows

    _, rows = read_rows(out / "points.csv")  # cells parsed (numbers as numbers, empty as None)
    rows = [row for row in rows if row.get("model_hash") == model_hash]
    table = [{key: row.get(key) for key in SWEEP_FIELDS} for row in rows]
    for entry, row in zip(table, rows):  # a buffer the space does not sweep: the point's own size
        config = json.loads(row["config_json"]) if row.get("config_json") else {}
        for key in BUFFERS:
            if entry[key] is None:
                entry[key] = config.get(key)
    return sorted(table, key=lambda e: tuple(e[k] or 0 for k in ("LOG_BLOCK", *BUFFERS)))


def best_per_block(rows: list[dict]) -> list[dict]:
    """Per array size (LOG_BLOCK), its fastest valid point."""
    best: dict[int, dict] = {}
    for row in rows:
        block = row["LOG_BLOCK"]
        if row["status"] == "ok" and (block not in best or row["latency_s"] < best[block]["latency_s"]):
            best[block] = row
    return [best[k] for k in sorted(best)]


def shape_verdict(best: list[dict]) -> str:
    """Does the sweep show SCALE-Sim 3's ViT shape: larger arrays faster, smaller ones more
    efficient (higher utilisation)? Computed from each array size's fastest point."""
    if len(best) < 2:
        return "fewer than two array sizes ran: no shape to compare"
    faster = all(b["latency_s"] < a["latency_s"] for a, b in zip(best, best[1:]))
    efficient = all(b["gemm_utilization"] < a["gemm_utilization"] for a, b in zip(best, best[1:]))
    sizes = ", ".join(f"{2 ** b['LOG_BLOCK']}x{2 ** b['LOG_BLOCK']}: {b['latency_s'] * 1e3:.1f} ms, "
                      f"{b['gemm_utilization'] * 100:.0f} % GEMM utilisation" for b in best)
    return (f"larger arrays faster: {'yes' if faster else 'no'}; smaller arrays more efficient: "
            f"{'yes' if efficient else 'no'} ({sizes}; each array at its fastest buffers)")


def kib(log2: int | None) -> str:
    return "-" if log2 is None else f"{2 ** log2 // 1024}"


def buffer_label(sizes) -> str:
    wgt, inp, acc = sizes
    return f"weights {kib(wgt)} kB, inputs {kib(inp)} kB, acc {kib(acc)} kB"


def figure(rows: list[dict], shape):
    """Latency (left) and GEMM utilisation (right) per array size, one line per buffer sizes."""
    plt = study.pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for sizes in sorted({tuple(r[k] for k in BUFFERS) for r in rows if r["status"] == "ok"}):
        points = [r for r in rows if tuple(r[k] for k in BUFFERS) == sizes and r["status"] == "ok"]
        label = buffer_label(sizes)
        xs = [2 ** r["LOG_BLOCK"] for r in points]
        left.plot(xs, [r["latency_s"] * 1e3 for r in points], marker="o", label=label)
        right.plot(xs, [r["gemm_utilization"] * 100 for r in points], marker="o", label=label)
    blocks = sorted({2 ** r["LOG_BLOCK"] for r in rows if r["status"] == "ok"})
    for ax, what in ((left, "latency per inference, accelerator + CPU (ms)"), (right, "GEMM utilisation (%)")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(blocks, [f"{b}x{b}" for b in blocks])
        ax.set_xlabel("GEMM array (BLOCK x BLOCK)")
        ax.set_ylabel(what)
        ax.grid(alpha=0.3)
    right.legend(fontsize=7)
    fig.suptitle(f"encoder block ({shape.describe()}): latency and GEMM utilisation per array and buffer size",
                 fontsize=9)
    fig.tight_layout()
    return fig


def format_sweep(rows: list[dict]) -> str:
    lines = [f"{'array':>7} {'wgt kB':>6} {'inp kB':>6} {'acc kB':>6} {'status':>8} {'latency ms':>10} "
             f"{'acc cycles':>11} "
             f"{'GEMM util':>9} {'part use':>8} {'speedup':>8}"]
    for r in rows:
        block = 2 ** r["LOG_BLOCK"]
        head = f"{f'{block}x{block}':>7} " + " ".join(f"{kib(r[k]):>6}" for k in BUFFERS)
        if r["status"] != "ok":
            lines.append(f"{head} {r['status']:>8}  {r['error'] or ''}")
            continue
        lines.append(f"{head} {'ok':>8} {r['latency_s'] * 1e3:10.2f} {r['accelerator_cycles']:11,d} "
                     f"{r['gemm_utilization'] * 100:8.1f}% {r['part_use'] * 100:7.1f}% {r['speedup']:7.1f}x")
    return "\n".join(lines)


def run_block(model: Path, config: str, out: Path, say):
    """``vdla run`` of the block (cost placement): the report, its files staged in ``OUT/run``."""
    from vdla.cmd_run import write_outputs
    from vdla.network import run_network
    from vdla.outputs import Outputs

    report = run_network(str(model), config=config, progress=say)
    with Outputs() as outputs:
        written = write_outputs(report, out / "run", outputs, progress=say)
        outputs.commit()
    return report, written


def sweep(space_path: str, model: Path, out: Path) -> list[dict]:
    """The space over the block, in this process (``vdla sweep SPACE --models BLOCK --executor local``)."""
    from dataclasses import replace

    from dse.runner import SweepOptions, run_sweep
    from dse.space import knob_values, load_space
    from vdla.cmd_sweep import prepare_models

    space = load_space(space_path)
    models = prepare_models([str(model)], space.resolution, int8_logits=True in knob_values(space, "fc_on_vdla"))
    run_sweep(replace(space, models=(str(model),)), out / "sweep", models, SweepOptions(executor="local"))
    return sweep_rows(out / "sweep", models[0].hash)


def run(args) -> int:
    from compiler.network.report import table
    from experiments.encoder_block import encoder_block
    from vdla.cmd_run import csv_text
    from vdla.outputs import Outputs, check_writable
    from vdla_hw.config import load_config

    shape = block_shape(args)
    load_config(args.config)  # a bad configuration is refused before any work
    out = Path(args.out)
    model = out / "encoder_block.onnx"
    tables = [out / f"{NAME}.csv", out / f"{NAME}_resident.csv", out / f"{NAME}_parameters.csv",
              *(out / f"{NAME}.{e}" for e in study.FORMATS)]
    check_writable([model, *tables])
    if not args.no_sweep:
        from dse.space import load_space

        load_space(args.space)  # a bad space file is refused before any work
    say = lambda m: print(m, file=sys.stderr)  # noqa: E731
    out.mkdir(parents=True, exist_ok=True)
    with Outputs() as outputs:
        outputs.write(model, encoder_block(shape).SerializeToString())
        outputs.commit()
    report, _ = run_block(model, args.config, out, say)
    t = report.totals
    resident = resident_ops(report.records)
    print(f"encoder block ({shape.describe()}; {shape.macs / 1e6:.1f} M MACs) on {report.config_name}, "
          f"as vdla run runs it (cost placement):\n")
    print(table(report.records, t))
    print(f"\nbit exact vs the quantized numpy reference: {report.bit_exact}")
    print(f"\nCPU-resident time {t['cpu_resident_s'] * 1e3:.1f} ms bounds the speedup at {t['amdahl_bound']:.1f}x; "
          "by op kind, largest first:")
    for e in resident:
        print(f"  {e['op']:<22} {e['count']:>3} op(s) {e['seconds'] * 1e3:9.2f} ms  {e['share'] * 100:5.1f} %")
    rows = [] if args.no_sweep else sweep(args.space, model, out)
    with Outputs() as outputs:
        outputs.supersede(tables)  # --no-sweep leaves no earlier sweep's table and figure behind
        outputs.write(tables[2], csv_text(study.network_parameters(args.config, report, COMPARED),
                                          list(study.PARAMETER_FIELDS)))
        outputs.write(tables[1], csv_text([{**e, "seconds": round(e["seconds"], 6), "share": round(e["share"], 4)}
                                           for e in resident], ["op", "count", "seconds", "share"]))
        if rows:
            outputs.write(tables[0], csv_text(rows, list(SWEEP_FIELDS)))
            fig = figure(rows, shape)
            try:
                for ext, path in zip(study.FORMATS, tables[3:]):
                    outputs.write(path, lambda fh, ext=ext: fig.savefig(fh, format=ext, dpi=150, bbox_inches="tight"))
                written = outputs.commit()
            finally:
                study.pyplot().close(fig)
        else:
            written = outputs.commit()
    if rows:
        print(f"\nsweep of {args.space} over the block ({len(rows)} points, {out / 'sweep'}):\n")
        print(format_sweep(rows))
        print("\nSCALE-Sim 3's ViT shape: " + shape_verdict(best_per_block(rows)))
    print(f"\ntime basis: {t['time_basis']}")
    print(f"model parameters and their sources (the configuration's, the CPU model's, the board runtime's): "
          f"{tables[2]}")
    print("\n".join(f"wrote {path}" for path in [model, out / "run", *written]))
    return 0


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    return study.guarded(NAME, lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
