"""The routing allowance of the clock estimate (xc7z020_timing.toml [routing]) fitted to its
calibration data, and its residuals: ``python -m vdla_hw.rtl.routing_fit`` prints both.

The data are the routed hops of published Vivado reports in ``xc7z020_routing_hops.csv`` (one row
per routed net on a reported setup path: its fanout and its routed delay). The allowance of one hop
is ``base + log2_fanout * log2(fanout)``, and what the timing analysis adds up is its sum over a
path's routed hops, so the two numbers are fitted where they are used: ordinary least squares of
each reported path's routed delay (the sum of its hops) on (number of hops, sum of log2 fanout)
over the calibration report's paths. A path with a single net longer than its own clock
requirement is left out of the fit and reported: that is a placement failure (a block RAM placed
far from its driver), which no per-hop allowance describes. (The earlier line, a Theil-Sen fit
through the single hops, fitted the typical hop and under-predicted the paths' totals.) The
residuals are printed per path."""

from __future__ import annotations

import csv
import math
import sys
from dataclasses import dataclass
from pathlib import Path

HOPS = Path(__file__).with_name("xc7z020_routing_hops.csv")
CALIBRATION = "P"     # the report the allowance is fitted to (see the CSV's header)


@dataclass(frozen=True)
class Fit:
    base: float
    log2_fanout: float
    hops: tuple           # (path, fanout, delay, predicted)
    report: str

    def allowance(self, fanout: int) -> float:
        return self.base + self.log2_fanout * math.log2(fanout)

    def paths(self) -> list[tuple[str, int, float, float]]:
        """(path, hops, routed ns, allowance ns) per reported path."""
        out: dict = {}
        for path, _f, delay, pred in self.hops:
            n, d, p = out.get(path, (0, 0.0, 0.0))
            out[path] = (n + 1, d + delay, p + pred)
        return [(k, n, d, p) for k, (n, d, p) in out.items()]

    def rms_hop(self) -> float:
        return math.sqrt(sum((d - p) ** 2 for _, _, d, p in self.hops) / len(self.hops))


def rows(report: str = CALIBRATION, path: Path = HOPS) -> list[dict]:
    with open(path) as f:
        return [r for r in csv.DictReader(line for line in f if not line.startswith("#")) if r["report"] == report]


def excluded(report: str = CALIBRATION, path: Path = HOPS) -> set[str]:
    """The report's paths with one net longer than the path's clock requirement (left out of the fit)."""
    return {r["path"] for r in rows(report, path) if float(r["delay_ns"]) > float(r["requirement_ns"])}


def fit(report: str = CALIBRATION, path: Path = HOPS) -> Fit:
    """Least squares of each path's routed delay on (hops, sum of log2 fanout), over the report's
    paths but those of :func:`excluded`; ``hops`` keeps every hop (the excluded paths' too)."""
    data = [(r["path"], int(r["fanout"]), float(r["delay_ns"])) for r in rows(report, path)]
    skip = excluded(report, path)
    sums: dict = {}
    for p, f, d in data:
        if p not in skip:
            n, x, y = sums.get(p, (0, 0.0, 0.0))
            sums[p] = (n + 1, x + math.log2(f), y + d)
    # normal equations of y = base * n + slope * x (no intercept: a path of no hops has no routing)
    snn = sum(n * n for n, _, _ in sums.values())
    snx = sum(n * x for n, x, _ in sums.values())
    sxx = sum(x * x for _, x, _ in sums.values())
    sny = sum(n * y for n, _, y in sums.values())
    sxy = sum(x * y for _, x, y in sums.values())
    det = snn * sxx - snx * snx
    base, slope = (sny * sxx - sxy * snx) / det, (snn * sxy - snx * sny) / det
    hops = tuple((p, f, d, base + slope * math.log2(f)) for p, f, d in data)
    return Fit(base, slope, hops, report)


def report_text(f: Fit) -> str:
    skip = excluded(f.report)
    used = [p for p in f.paths() if p[0] not in skip]
    lines = [f"routing allowance: least squares over the routed delay of {len(used)} paths "
             f"({sum(n for _, n, _, _ in used)} routed hops) of report {f.report} ({HOPS.name}): "
             f"{f.base:.3f} ns + {f.log2_fanout:.3f} ns x log2(fanout) per hop",
             "| path | routed hops | routed ns (report) | allowance ns | residual ns | residual % | role |",
             "|---|---|---|---|---|---|---|"]
    for path, n, d, p in f.paths():
        role = "left out (one net longer than the clock period)" if path in skip else "fit"
        lines.append(f"| {path} | {n} | {d:.3f} | {p:.3f} | {d - p:+.3f} | {100 * (d - p) / d:+.1f} % | {role} |")
    lines.append(f"per hop (every hop): RMS residual {f.rms_hop():.3f} ns")
    return "\n".join(lines)


def main() -> int:
    print(report_text(fit()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
