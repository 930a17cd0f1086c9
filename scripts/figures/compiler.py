"""Generated figures of docs/compiler.md: ``python scripts/figures/compiler.py placement`` prints
the "Placement by cost" section's measurement: ResNet-18 at 224 on ``osdi18`` run by
``vdla.network.run_network`` under ``--placement all`` and ``--placement cost`` (simulated and
modelled times: deterministic)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from vdla.network import run_network  # noqa: E402

CONFIG, RESOLUTION = "osdi18", 224


def placement() -> str:
    words = []
    for name in ("all", "cost"):
        report = run_network("resnet18", config=CONFIG, resolution=RESOLUTION, placement=name).as_dict()
        layers = report["layers"]
        offloaded = sum(r["placement"] == "vdla" for r in layers)
        slower = sum(bool((r.get("offload") or {}).get("slower_than_cpu")) for r in layers)
        words.append(f"`--placement {name}` offloads {offloaded} ops ({slower} slower than the CPU) and runs at "
                     f"{report['totals']['speedup']:.2f}x")
    return (f"Measured (`vdla run resnet18 --json`, `totals.speedup`, `{CONFIG}`, today's host model) at "
            f"{RESOLUTION}x{RESOLUTION}:\n" + ";\n".join(words) + ".")


BLOCKS = {"placement": placement}

if __name__ == "__main__":
    from block_cli import main

    sys.exit(main(BLOCKS))
