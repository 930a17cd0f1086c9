"""The generated figures of docs/onnx.md: the int8 accuracy table against onnxruntime, rendered
from the record that ``python benchmarks/onnx_int8.py --models DIR --record`` writes
(``benchmarks/results/onnx_int8.json``, benchmarks/record.py):

    python scripts/figures/onnx_int8.py int8   # where the record comes from, the table, what it shows

Nothing is measured here: re-run the benchmark with ``--record`` and paste this output into
docs/onnx.md (tests/test_doc_figures.py checks that the doc holds exactly what it prints).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import record as recording  # noqa: E402

COLUMNS = ("model", "input", "float vs onnxruntime (max abs)", "logit RMS", "vdla int8", "onnxruntime int8",
           "ratio", "top-1 kept, vdla / onnxruntime")


def provenance(record: dict) -> str:
    """The sentence saying what was measured, how, when and where."""
    figures = record["figures"]
    folder, models = figures["models_folder"], figures["models"]
    producers = ", ".join(sorted({row["producer"] for row in models.values()}))
    if folder is None:
        measured = "the built-in ResNet-18 (`vdla model resnet18`; the `--models` folder held no exports)"
    else:
        measured = f"the {len(models)} models in `{folder}` (ONNX files produced by {producers})"
    return (f"Recorded by {recording.provenance(record)}: {measured}, "
            f"{figures['calibration']} calibration and {figures['tests']} test inputs ({figures['images']}). Each int8 "
            "column is the RMS error of that network's logits against its own float model's; top-1 kept: the test "
            "inputs whose int8 top-1 class is the float model's.")


def top1(r: dict) -> str:
    """The top-1 cell: both networks' agreement, or a dash for a model whose output is not a classifier's."""
    return "-" if r.get("vdla_top1") is None else f"{r['vdla_top1']:.0%} / {r['ort_top1']:.0%}"


def row(model: str, r: dict) -> str:
    cells = [model, r["input"], f"{r['float_vs_ort']:.2e}", f"{r['logit_rms']:.4f}", f"{r['vdla_rms']:.5f}",
             f"{r['ort_rms']:.5f}", f"{r['ratio']:.2f}", top1(r)]
    return "| " + " | ".join(cells) + " |"


def summary(models: dict[str, dict]) -> str:
    """What the table shows, in words: the float gap and on how many models vdla's int8 is closer."""
    closer = [m for m, r in models.items() if r["ratio"] < 1]
    ratios = [r["ratio"] for r in models.values()]
    on = f"all {len(models)}" if len(closer) == len(models) else f"{len(closer)} of the {len(models)}"
    farther = sorted(set(models) - set(closer))
    exceptions = f" (not on {', '.join(f'`{m}`' for m in farther)})" if farther else ""
    worst = max(r["float_vs_ort"] for r in models.values())
    return (f"Our float model is within {worst:.1e} of onnxruntime's on all {len(models)}. Our int8 logits are "
            f"closer to the float model than onnxruntime's static per-tensor QDQ int8 on {on}{exceptions}: the "
            f"ratio (ours over onnxruntime's) is {min(ratios):.2f} to {max(ratios):.2f}.")


def int8() -> str:
    record = recording.read_all()["onnx_int8"]
    models = record["figures"]["models"]
    lines = [provenance(record), "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += [row(model, r) for model, r in models.items()]
    lines += ["", summary(models)]
    return "\n".join(lines)


BLOCKS = {"int8": int8}

if __name__ == "__main__":
    from block_cli import main

    sys.exit(main(BLOCKS))
