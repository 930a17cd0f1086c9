"""CPU-kernel analyses shared between the workers of a sweep instead of made twice.

A point's run prices every CPU kernel it meets (``CpuModel``: compile, profile and llvm-mca, a
few tenths of a second each); the analyses land in the disk cache (``vdla_hw.cache``, kind
``cpu-cost``), so each is made once per machine, but the first points of a sweep all start on an
empty cache at once and would each make all of them. :func:`analyse_shared` goes through a point's
uncached kernels first and *claims* each before analysing it (a lock file under ``DIR/cache/
cpu-claims`` created with O_EXCL); a kernel another worker has claimed is left to it, and once
its own are done the worker waits for those (or, if the claim's process is gone or the wait
passes :data:`WAIT_S`, analyses it itself). The analyses are the same whoever makes them (they
are keyed by the kernel, the CPU data and the code); only who spends the time changes.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

WAIT_S = 300.0      # longest wait for another worker's claimed kernel before analysing it here
POLL_S = 0.05


def _claim(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as fh:
        fh.write(f"{socket.gethostname()} {os.getpid()}")
    return True


def _holder_alive(path: Path) -> bool:
    """False when the claim's process is known to be gone (same host, no such pid)."""
    try:
        host, pid = path.read_text().split()
    except (OSError, ValueError):  # gone (the loop sees it) or still being written
        return True
    if host != socket.gethostname():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError):
        return True
    return True


def analyse_shared(specs, cpu_model, claims_dir: str | Path | None) -> dict:
    """Analyse the uncached kernels pricing ``specs`` (kernel specs the run will ask
    ``cpu_model`` for), sharing them with other workers through ``claims_dir``; None: nothing
    done (the run analyses them as it goes). Returns counts: analysed here, left to others."""
    from compiler.cpu_fallback.cost.analysis import analyse, cache_key, is_cached

    counts = {"analysed": 0, "waited": 0}
    if claims_dir is None:
        return counts
    cpu = cpu_model.cpu
    wanted = [k for s in dict.fromkeys(specs) for k in cpu_model.analysed_specs(s)]
    todo = [s for s in dict.fromkeys(wanted) if not is_cached(s, cpu)]
    if not todo:
        return counts
    folder = Path(claims_dir)
    folder.mkdir(parents=True, exist_ok=True)
    others = []
    for spec in todo:
        path = folder / f"{cache_key(spec, cpu)[:32]}.claim"
        if is_cached(spec, cpu):
            continue
        if _claim(path):
            try:
                analyse(spec, cpu)
                counts["analysed"] += 1
            finally:
                path.unlink(missing_ok=True)
        else:
            others.append((spec, path))
    for spec, path in others:  # made by another worker meanwhile, or made here after all
        deadline = time.monotonic() + WAIT_S
        while path.exists() and not is_cached(spec, cpu) and time.monotonic() < deadline and _holder_alive(path):
            time.sleep(POLL_S)
        counts["waited"] += 1
    return counts
