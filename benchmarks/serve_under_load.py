"""Benchmark: `vdla serve` with hostile idle and byte-dribbling connections open.

Starts `vdla serve --backend sim` as its own process (a fresh key file), builds the ResNet-18
package once, then measures without and with N hostile connections held open (half send
b"VDL" and wait, half send one byte every 2 s; each is re-opened as soon as the server drops
it, so N stay open the whole time):

* ping latency (authenticated ping: connect, hello, request, answer), median and max of 20 per
  round;
* the ResNet-18 deploy's request time (upload + server run + answer), and its output_sha256; the
  rounds alternate a quiet and a loaded deploy and the medians are compared;
* the server's resident memory (VmRSS) before, sampled every 0.2 s during, and its peak (VmHWM).

    .venv/bin/python benchmarks/serve_under_load.py [--resolution 224] [--hostile 20] [--runs 2]

Targets (issue 11): with 20 hostile connections a ping is answered in under 1 s, the deploy
takes the same time as without them, the server's memory stays flat.
"""

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from driver import auth  # noqa: E402
from driver.protocol import request  # noqa: E402
from vdla.deploy import build_package  # noqa: E402
from vdla.network import prepare  # noqa: E402


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far (/proc/PID/stat), which other jobs' load on
    the machine does not inflate the way it inflates wall time."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory(pid: int) -> dict:
    """VmRSS and VmHWM (peak) of ``pid`` in MiB, from /proc."""
    text = Path(f"/proc/{pid}/status").read_text()
    return {k: int(re.search(rf"{k}:\s+(\d+) kB", text).group(1)) / 1024 for k in ("VmRSS", "VmHWM")}


class Hostile:
    """Keeps ``n`` hostile connections open until stopped: idle ones (b"VDL", then nothing) and
    dribblers (one byte every 2 s); each is re-opened when the server drops it."""

    def __init__(self, port: int, n: int):
        self.port, self.stop, self.opened = port, threading.Event(), 0
        self.threads = [threading.Thread(target=self.hold, args=(k % 2 == 1,), daemon=True) for k in range(n)]

    def hold(self, dribble: bool) -> None:
        while not self.stop.is_set():
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=30) as sock:
                    self.opened += 1
                    sock.sendall(b"VDL")
                    while not self.stop.wait(2.0):
                        if dribble:
                            sock.sendall(b"A")
                        elif sock.recv(1 << 16) == b"":  # idle: wait until the server closes
                            break
            except OSError:
                time.sleep(0.05)

    def __enter__(self):
        for t in self.threads:
            t.start()
        time.sleep(1.0)
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(5)


def measure(address: str, key: bytes, files: dict, pid: int, runs: int) -> dict:
    samples, opened, stop = [], [], threading.Event()

    def sample():
        while not stop.wait(0.2):
            samples.append(memory(pid)["VmRSS"])
            if len(samples) % 5 == 0:  # the server's open connections, once a second (this request included)
                opened.append(request(address, {"op": "status"}, key=key, timeout_s=30)[0]["connections"] - 1)

    sampler = threading.Thread(target=sample, daemon=True)
    before = memory(pid)["VmRSS"]
    sampler.start()
    pings = []
    for _ in range(20):
        start = time.perf_counter()
        request(address, {"op": "ping"}, key=key, timeout_s=30)
        pings.append(time.perf_counter() - start)
    deploys, cpu, shas = [], [], set()
    for _ in range(runs):
        start, cpu_start = time.perf_counter(), cpu_seconds(pid)
        result, _, _ = request(address, {"op": "run"}, files, key=key, timeout_s=3600)
        deploys.append(time.perf_counter() - start)
        cpu.append(cpu_seconds(pid) - cpu_start)
        shas.add(result["output_sha256"])
    stop.set()
    sampler.join(5)
    return {"pings": pings, "deploys": deploys, "cpu": cpu, "sha": shas, "rss_before": [before], "rss_max": [max(samples + [before])],
            "rss_after": [memory(pid)["VmRSS"]], "hwm": memory(pid)["VmHWM"], "open": opened}


def merge(rounds: list[dict]) -> dict:
    """One condition over all rounds: pings and deploys pooled, memory from first to last."""
    out = {"pings": [p for r in rounds for p in r["pings"]], "deploys": [d for r in rounds for d in r["deploys"]],
           "cpu": [c for r in rounds for c in r["cpu"]],
           "sha": set().union(*(r["sha"] for r in rounds)), "rss_before": rounds[0]["rss_before"][0],
           "rss_max": max(r["rss_max"][0] for r in rounds), "rss_after": rounds[-1]["rss_after"][0],
           "hwm": rounds[-1]["hwm"], "open": [n for r in rounds for n in r["open"]]}
    out.update(ping_median=statistics.median(out["pings"]), ping_max=max(out["pings"]),
               deploy=statistics.median(out["deploys"]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--resolution", type=int, default=224)
    ap.add_argument("--hostile", type=int, default=20)
    ap.add_argument("--runs", type=int, default=4,
                    help="rounds of one quiet and one loaded deploy (medians are reported)")
    ap.add_argument("--warmup", type=int, default=2, help="deploys before measuring")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="vdla-bench-") as tmp:
        key_file = Path(tmp) / "serve.key"
        proc = subprocess.Popen([sys.executable, "-m", "vdla", "serve", "--backend", "sim", "--port", "0",
                                 "--key-file", str(key_file)], cwd=ROOT, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            port = None
            while port is None:
                line = proc.stderr.readline()
                if not line:
                    raise SystemExit("vdla serve did not start")
                found = re.search(r" on 127\.0\.0\.1:(\d+), key id", line)
                port = found and int(found.group(1))
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()  # drain its log
            key = auth.load_key(key_file)
            address = f"127.0.0.1:{port}"
            start = time.perf_counter()
            files = build_package(prepare("resnet18", resolution=args.resolution), model="resnet18",
                                  progress=lambda m: None)
            size = sum(len(d) for d in files.values())
            print(f"ResNet-18 at {args.resolution}x{args.resolution}: package {size / 1e6:.1f} MB built in "
                  f"{time.perf_counter() - start:.1f} s; server pid {proc.pid}; load {os.getloadavg()[0]:.2f}")
            for k in range(args.warmup):  # imports, JIT-compiled CPU kernels, the allocator's pools
                start = time.perf_counter()
                request(address, {"op": "run"}, files, key=key, timeout_s=3600)
                print(f"warm-up deploy {k + 1}: {time.perf_counter() - start:.2f} s, server RSS "
                      f"{memory(proc.pid)['VmRSS']:.1f} MiB")
            quiet, loaded, opened = [], [], 0
            for _ in range(args.runs):  # interleaved, so drifting machine load hits both alike
                quiet.append(measure(address, key, files, proc.pid, 1))
                with Hostile(port, args.hostile) as hostile:
                    loaded.append(measure(address, key, files, proc.pid, 1))
                    opened += hostile.opened
            quiet, loaded = merge(quiet), merge(loaded)
        finally:
            proc.terminate()
            proc.wait(30)
    print(f"{'':<34} {'ping median':>12} {'ping max':>10} {'deploy':>9} {'RSS before':>11} {'RSS max':>9} "
          f"{'RSS after':>10}")
    for name, m in ((f"no other connections", quiet), (f"{args.hostile} idle/dribbling connections", loaded)):
        print(f"{name:<34} {m['ping_median'] * 1e3:>9.1f} ms {m['ping_max'] * 1e3:>7.1f} ms {m['deploy']:>7.2f} s "
              f"{m['rss_before']:>7.1f} MiB {m['rss_max']:>5.1f} MiB {m['rss_after']:>6.1f} MiB")
    print(f"hostile connections opened in total (re-opened after each drop): {opened}; other connections open "
          f"at the server, sampled each second during the loaded rounds: median {statistics.median(loaded['open'])}, "
          f"max {max(loaded['open'])}")
    print(f"deploy times: quiet {', '.join(f'{t:.2f}' for t in quiet['deploys'])} s; with load "
          f"{', '.join(f'{t:.2f}' for t in loaded['deploys'])} s; ratio {loaded['deploy'] / quiet['deploy']:.3f}")
    print(f"server CPU seconds per deploy (insensitive to other jobs on the machine): quiet median "
          f"{statistics.median(quiet['cpu']):.2f}, with load {statistics.median(loaded['cpu']):.2f}; ratio "
          f"{statistics.median(loaded['cpu']) / statistics.median(quiet['cpu']):.3f}")
    print(f"server peak RSS (VmHWM) {loaded['hwm']:.1f} MiB; output_sha256 identical in every run: "
          f"{len(quiet['sha'] | loaded['sha']) == 1} ({next(iter(quiet['sha']))[:16]}...)")
    ok = loaded["ping_max"] < 1.0 and loaded["deploy"] < 1.2 * quiet["deploy"]
    print(f"targets (ping < 1 s under load, deploy wall time within 20 % of quiet): {'met' if ok else 'NOT met'} "
          f"(machine load average now {os.getloadavg()[0]:.1f}; wall times on a loaded machine vary run to run)")


if __name__ == "__main__":
    main()
