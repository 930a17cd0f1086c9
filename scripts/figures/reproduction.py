"""The generated figures of docs/reproduction.md: each study's comparison at the papers' 224x224,
computed by the study's own code (experiments/), printed as the doc's markdown.

    python scripts/figures/reproduction.py fig21 | fig10 | fig8 MODEL | board

fig21 and fig8 run the study's network (``run_network`` with the study's options), fig10 compiles
and simulates each layer both ways, board replays every board record (experiments.board_validation);
nothing is read from earlier results.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository's root

from compiler import paper  # noqa: E402
from experiments import board_validation, study, tvm_fig10, tvm_fig21, vta_fig8  # noqa: E402

RESOLUTION = paper.PAPER_RESOLUTION


def quantity(value: float | None, unit: str, digits: str = ".3g") -> str:
    """``value`` with its unit; ours to three figures, the paper's (digits ``g``) as published."""
    if value is None:
        return ""
    text = f"{value:.0f}" if abs(value) >= 1000 else f"{value:{digits}}"
    return f"{text}x" if unit == "x" else f"{text} {unit}"


def error(row: dict) -> str:
    return "" if row["error"] is None else f"{row['error']:+.1%}"


def band(row: dict) -> str:
    if row["band"] is None:
        return "(no band)" if row["paper"] is not None else ""
    verdict = "within" if row["within"] == "yes" else "**misses**"
    return f"{verdict} (+-{row['band']:.0%})"


def bar_table(rows: list[dict]) -> str:
    """One markdown row per study row: the bar, ours and the paper's with their unit, the error and the band."""
    lines = ["| bar | ours | paper | error | band |", "|---|---|---|---|---|"]
    lines += [f"| {row['bar'].strip()} | {quantity(row['ours'], row['unit'])} | "
              f"{quantity(row['paper'], row['unit'], '.4g')} | {error(row)} | {band(row)} |" for row in rows]
    return "\n".join(lines)


def network_report(module, model: str, host_runtime: str | None = None):
    """``model`` run with the study ``module``'s options, at the papers' resolution (a study that
    runs several host runtimes: ``host_runtime``, one of them)."""
    from vdla.network import run_network

    kwargs, _ = study.run_kwargs(module.OPTIONS)
    if host_runtime is not None:
        kwargs["host_runtime"] = host_runtime
    return run_network(model, resolution=RESOLUTION, progress=lambda message: None, **kwargs)


def fig21() -> str:
    rows = tvm_fig21.bars(network_report(tvm_fig21, tvm_fig21.MODEL))
    return study.verdict(rows, True) + "\n\n" + bar_table(rows)


def fig8(model: str) -> str:
    if model not in vta_fig8.MODELS:
        raise SystemExit(f"fig8: the model is one of {', '.join(vta_fig8.MODELS)}, not {model!r}")
    ours, vta = (network_report(vta_fig8, model, runtime) for runtime in vta_fig8.HOST_RUNTIMES)
    rows = vta_fig8.bars(model, ours, vta)
    return study.verdict(rows, True) + "\n\n" + bar_table(rows)


def layer_name(row: dict) -> str:
    stride = f" s{row['stride']}" if int(row["stride"]) > 1 else ""
    return f"{row['label']} {row['H']}x{row['W']} {row['IC']}->{row['OC']} k{row['K']}{stride}"


def fig10() -> str:
    """One line per layer: GOPS with and without latency hiding and ops per byte, ours, the
    paper's and the error of each; then the peak utilisations."""
    from vdla_hw.config import load_config

    config = load_config(tvm_fig10.OPTIONS[0].value)
    rows = {row["bar"]: row for row in tvm_fig10.comparison(tvm_fig10.measure(config, RESOLUTION), config)}
    lines = ["| layer | ours LH (GOPS) | paper LH | error | ours no LH | paper no LH | error | ours ops/B "
             "| paper ops/B | error |", "|---|---|---|---|---|---|---|---|---|---|"]
    for layer in paper.fig10():
        cells = [rows[f"{layer['label']} {what}"] for what in ("GOPS, latency hiding", "GOPS, no latency hiding",
                                                               "ops per byte")]
        lines.append(f"| {layer_name(layer)} | " + " | ".join(f"{c['ours']:.3g} | {c['paper']:g} | {error(c)}"
                                                           for c in cells) + " |")
    lh, no_lh = rows["peak utilisation, latency hiding"], rows["peak utilisation, no latency hiding"]
    lines.append(f"| peak utilisation | {lh['ours']:.3g} % | {lh['paper']:g} % | {error(lh)} | {no_lh['ours']:.3g} % "
                 f"| {no_lh['paper']:g} % | {error(no_lh)} | | | |")
    return "\n".join(lines)


def board() -> str:
    """The verdict, then one line per board record: layer, shape, the log and line, measured,
    predicted and the error with its band (a calibration record: none), and for the accelerator
    the same program's error on vta-pynq (the VDLA DMA, the ports' estimates); then each target's
    median and worst |error|."""
    from vdla_hw.config import load_config

    rows = board_validation.measure(paper.board_records(), load_config(board_validation.VTA_CONFIG))
    table = board_validation.comparison(rows)
    lines = ["| record | target | layer | shape | log:line | measured | predicted | error | band | on vta-pynq |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    banded = {r["bar"]: r for r in table}
    for row in rows:
        cell = banded.get(board_validation.label(row))
        verdict = "not replayed" if cell is None else "calibration" if row["calibration"] else band(cell)
        streamed = "" if row["streamed_rows_error"] is None else f"{row['streamed_rows_error']:+.1%}"
        predicted = "" if row["predicted_ms"] is None else f"{row['predicted_ms']:.3g} ms"
        error_text = "" if row["error"] is None else f"{row['error']:+.1%}"
        lines.append(f"| {row['record']} | {row['target']} {row['dtype']} | {row['layers'].split()[0]} | {row['shape']} "
                     f"| {row['source']} | {row['measured_ms']:.3g} ms | {predicted} | {error_text} | {verdict} "
                     f"| {streamed} |")
    for row in table:
        if row["unit"] == "|err|":
            bar = row["bar"].replace("|", "\\|")  # a markdown cell
            lines.append(f"| | | {bar} | | | | | {row['ours']:.3g} % | {band(row)} | |")
    return board_validation.verdict(rows, table) + "\n\n" + "\n".join(lines)


BLOCKS = {"fig21": fig21, "fig10": fig10, "fig8": fig8, "board": board}


if __name__ == "__main__":
    from block_cli import main

    sys.exit(main(BLOCKS))
