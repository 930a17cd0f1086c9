"""Benchmark: what `vdla serve` spends on clients without the key, and on one large upload.

Starts `vdla serve --backend sim` as its own process (a fresh key file) and measures:

1. **64 keyless clients** (issue 22's repro, made harder): each connects, reads the hello and
   sends a frame prefix announcing the largest header the protocol allows (MAX_HEADER) with a
   zero MAC, then that header (``{"op":"ping","nonce":"00","blobs":[],"x":[[],[],...]}``),
   reads the refusal and starts again, for ``--seconds``. Meanwhile an authenticated client
   pings every 0.1 s and the server's VmRSS is sampled every 0.1 s. Printed: the server's RSS
   before, at most and the rise, the pings' median / 95th percentile / max latency, and the
   keyless requests refused. The server runs with ``--max-connections 128`` here, so the 64
   attackers' connections (which the server closes at once) leave room for the pings; at the
   default cap of 64, 64 clients holding connections would turn others away as "server busy"
   by design (docs/board.md, "What it does not protect").
2. **A 127 MiB authenticated upload** to a fresh server (so its peak is not an earlier one): one
   blob of 127 MiB in a `run` request (refused after it is received: it is not a package).
   Printed: the server's peak RSS growth (VmHWM after minus VmRSS before), relative to the
   upload's size.

    .venv/bin/python benchmarks/serve_preauth.py [--clients 64] [--seconds 10] [--upload-mib 127] [--record]

Targets (issue 22): RSS rise under 64 MB and pings under 100 ms with 64 keyless clients; the
upload's peak under 1.2x its size.
"""

import argparse
import multiprocessing
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

import record

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from driver import auth  # noqa: E402
from driver.protocol import MAGIC, MAX_HEADER, NO_MAC, PROTOCOL_VERSION, START, request  # noqa: E402

MIB = 1 << 20
TARGETS = {"rss_rise_mb": ("<", 64.0), "ping_max_ms": ("<", 100.0), "upload_peak_ratio": ("<", 1.2)}  # issue 22
# what --record writes (benchmarks/record.py)
FIGURES = {"rss_rise_mb": "MB: the server's RSS rise under the keyless clients",
           "ping_median_ms": "ms: an authenticated ping under the keyless clients, median",
           "ping_max_ms": "ms: an authenticated ping under the keyless clients, max",
           "upload_peak_ratio": "x: the server's peak memory growth over the upload's size"}


def memory(pid: int) -> dict:
    """VmRSS, VmHWM (peak) and RssAnon (resident memory not backed by files) of ``pid`` in
    bytes, from /proc."""
    text = Path(f"/proc/{pid}/status").read_text()
    return {k: int(re.search(rf"{k}:\s+(\d+) kB", text).group(1)) * 1024 for k in ("VmRSS", "VmHWM", "RssAnon")}


class Server:
    """`vdla serve --backend sim` in a subprocess on a free port, its log drained."""

    def __init__(self, tmp: Path, *extra: str):
        self.key_file = tmp / f"serve-{len(list(tmp.iterdir()))}.key"
        self.proc = subprocess.Popen([sys.executable, "-m", "vdla", "serve", "--backend", "sim", "--port", "0",
                                      "--key-file", str(self.key_file), *extra], cwd=ROOT, stderr=subprocess.PIPE,
                                     text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.lines = 0
        port = None
        while port is None:
            line = self.proc.stderr.readline()
            if not line:
                raise SystemExit("vdla serve did not start")
            found = re.search(r" on 127\.0\.0\.1:(\d+), key id", line)
            port = found and int(found.group(1))
        self.port, self.address = port, f"127.0.0.1:{port}"
        self.key = auth.load_key(self.key_file)
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        for _ in self.proc.stderr:
            self.lines += 1

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)


def keyless_header() -> bytes:
    """The issue's header of empty lists, grown to exactly MAX_HEADER bytes."""
    head, tail = b'{"op":"ping","nonce":"00","blobs":[],"x":[', b"]}"
    count = (MAX_HEADER - len(head) - len(tail) + 1) // 3
    text = head + b",".join([b"[]"] * count) + tail
    return (text + b" " * (MAX_HEADER - len(text)))[:MAX_HEADER] if len(text) <= MAX_HEADER else text[:MAX_HEADER]


def attacker(port: int, stop, counts, header: bytes) -> None:
    """One keyless client: hello, the prefix and header, wait for the server to close; again."""
    frame = START.pack(MAGIC, PROTOCOL_VERSION, len(header), bytes(32)) + NO_MAC + header
    while not stop.is_set():
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        except OSError:
            with counts.get_lock():
                counts[1] += 1
            time.sleep(0.01)
            continue
        with sock:
            try:
                sock.recv(1 << 16)  # the hello
                sock.sendall(frame)
                while sock.recv(1 << 16):
                    pass
            except OSError:
                pass  # refused and reset before the whole header went out
        with counts.get_lock():
            counts[0] += 1


def attackers(port: int, clients: int, stop, counts, header: bytes) -> None:
    """``clients`` keyless clients as threads of this (separate) process, until ``stop``."""
    threads = [threading.Thread(target=attacker, args=(port, stop, counts, header), daemon=True)
               for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def keyless_clients(tmp: Path, clients: int, seconds: float) -> dict[str, float]:
    server = Server(tmp, "--max-connections", str(2 * clients))
    try:
        request(server.address, {"op": "ping"}, key=server.key, timeout_s=30)  # warm
        time.sleep(0.5)
        before = memory(server.proc.pid)["VmRSS"]
        quiet = []
        for _ in range(20):
            start = time.perf_counter()
            request(server.address, {"op": "ping"}, key=server.key, timeout_s=30)
            quiet.append(time.perf_counter() - start)
        # the attackers run in their own process, so this one's pings do not queue behind their threads
        stop, counts, header = multiprocessing.Event(), multiprocessing.Array("l", 2), keyless_header()
        crowd = multiprocessing.Process(target=attackers, args=(server.port, clients, stop, counts, header))
        crowd.start()
        time.sleep(1.0)
        rss, pings, failed = [], [], []
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            rss.append(memory(server.proc.pid)["VmRSS"])
            start = time.perf_counter()
            try:
                request(server.address, {"op": "ping"}, key=server.key, timeout_s=30)
                pings.append(time.perf_counter() - start)
            except Exception as err:  # noqa: BLE001 - counted and shown
                failed.append(str(err))
            time.sleep(0.1)
        stop.set()
        crowd.join(30)
        after = memory(server.proc.pid)
    finally:
        server.stop()
    pings.sort()
    rise = max(rss) - before
    counts = list(counts)
    print(f"{clients} keyless clients, each sending a {len(header)}-byte header (MAX_HEADER) with a zero MAC and "
          f"reconnecting, for {seconds:g} s:")
    print(f"  keyless requests refused: {counts[0]} ({counts[0] / seconds:.0f}/s), connection errors {counts[1]}")
    print(f"  server RSS before {before / MIB:.1f} MiB, at most {max(rss) / MIB:.1f} MiB (rise {rise / MIB:.1f} MiB), "
          f"after {after['VmRSS'] / MIB:.1f} MiB; {len(rss)} samples")
    print(f"  authenticated ping quiet: median {statistics.median(quiet) * 1e3:.1f} ms; under attack: median "
          f"{statistics.median(pings) * 1e3:.1f} ms, p95 {pings[int(0.95 * (len(pings) - 1))] * 1e3:.1f} ms, max "
          f"{pings[-1] * 1e3:.1f} ms over {len(pings)} pings, {len(failed)} failed{': ' + failed[0] if failed else ''}")
    ok = rise / 1e6 < TARGETS["rss_rise_mb"][1] and pings[-1] * 1e3 < TARGETS["ping_max_ms"][1] and not failed
    print(f"  targets (RSS rise < 64 MB, every ping < 100 ms): {'met' if ok else 'NOT met'}")
    return {"rss_rise_mb": round(rise / 1e6, 1), "ping_median_ms": round(statistics.median(pings) * 1e3, 1),
            "ping_max_ms": round(pings[-1] * 1e3, 1)}


def large_upload(tmp: Path, mib: int) -> dict[str, float]:
    server = Server(tmp)
    try:
        request(server.address, {"op": "ping"}, key=server.key, timeout_s=30)
        time.sleep(0.5)
        before = memory(server.proc.pid)
        data = os.urandom(mib * MIB)
        samples, done = [], threading.Event()

        def sample():  # anonymous memory every 5 ms: the peak that library pages evicted meanwhile cannot hide
            while not done.wait(0.005):
                samples.append(memory(server.proc.pid)["RssAnon"])

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        start = time.perf_counter()
        try:
            request(server.address, {"op": "run"}, {"big.bin": data}, key=server.key, timeout_s=600)
            said = "accepted"
        except Exception as err:  # noqa: BLE001 - the expected refusal: not a package
            said = " ".join(str(err).split())[:100]
        seconds = time.perf_counter() - start
        time.sleep(0.3)
        done.set()
        sampler.join(5)
        after = memory(server.proc.pid)
    finally:
        server.stop()
    growth = after["VmHWM"] - before["VmRSS"]
    anon = max(samples) - before["RssAnon"]
    print(f"one authenticated upload of {mib} MiB ({seconds:.2f} s; answer: {said}):")
    print(f"  server RSS before {before['VmRSS'] / MIB:.1f} MiB (peak so far {before['VmHWM'] / MIB:.1f} MiB), peak "
          f"after {after['VmHWM'] / MIB:.1f} MiB: growth {growth / MIB:.1f} MiB = {growth / (mib * MIB):.3f}x the "
          f"upload; RSS after {after['VmRSS'] / MIB:.1f} MiB")
    print(f"  anonymous memory (RssAnon, sampled every 5 ms): before {before['RssAnon'] / MIB:.1f} MiB, at most "
          f"{max(samples) / MIB:.1f} MiB: growth {anon / MIB:.1f} MiB = {anon / (mib * MIB):.3f}x the upload")
    worst = max(growth, anon)
    ratio = TARGETS["upload_peak_ratio"][1]
    print(f"  target (peak < {ratio:g}x the upload): {'met' if worst < ratio * mib * MIB else 'NOT met'} "
          f"({worst / (mib * MIB):.3f}x)")
    return {"upload_peak_ratio": round(worst / (mib * MIB), 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--upload-mib", type=int, default=127)
    record.add_option(ap)
    args = ap.parse_args()
    load_before = record.load_average()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} CPUs; protocol "
          f"{PROTOCOL_VERSION}, MAX_HEADER {MAX_HEADER} bytes")
    with tempfile.TemporaryDirectory(prefix="vdla-bench-") as tmp:
        figures = keyless_clients(Path(tmp), args.clients, args.seconds)
        figures |= large_upload(Path(tmp), args.upload_mib)
    print(f"load average at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.record:
        record.write("serve_preauth", FIGURES, figures, load_before, TARGETS)


if __name__ == "__main__":
    main()
