"""The TCP server of ``vdla serve``: concurrent connections, authenticated requests, one device.

Each connection gets its own thread and carries one exchange (:mod:`driver.protocol`): hello
with a fresh challenge, one request, one response. A request must prove it holds the key (its
MAC) before the server reads any of its blobs. Operations are either *immediate* (``ping``,
``status``: answered on the connection's thread, never waiting for another client) or *device*
operations (``run``): handed to the single device thread through a bounded queue, so device runs
are serialised while uploads, pings and status requests of other clients go on.

Bounds (:class:`ServerLimits`): open connections (more are refused with an error frame at once),
per-read idle timeout, a deadline for the header (before authentication, short) and for the
whole request, the frame size, the bytes of all uploads held at once, and queued runs. Every
malformed, unauthenticated or oversized request, and every error of a handler, ends that
request only: the client gets ``ok: false`` with one line when it still listens, the server
logs one line per request (client, op, result, time, bytes) and keeps serving.
"""

from __future__ import annotations

import platform
import queue
import socket
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Callable

from driver import auth
from driver.protocol import DEFAULT_MAX_BYTES, Header, Limits, ProtocolError, hello, receive_blobs, receive_header, send
from vdla_hw.errors import VdlaError

Handler = Callable[[dict, dict], tuple]


@dataclass(frozen=True)
class ServerLimits:
    max_connections: int = 64          # open connections; more are refused at once
    idle_timeout_s: float = 10.0       # a read waiting longer than this for a byte ends the request
    header_deadline_s: float = 10.0    # prefix + header (before authentication) within this of connecting
    request_deadline_s: float = 600.0  # the whole request within this of connecting
    max_frame_bytes: int = DEFAULT_MAX_BYTES  # blobs of one request (default: one device image, 128 MiB)
    max_pending_bytes: int = DEFAULT_MAX_BYTES  # blobs of all requests held at once (uploading or queued)
    max_queued_runs: int = 4           # device operations waiting for the device


def host_info() -> dict:
    import numpy as np

    info = {"python": platform.python_version(), "machine": platform.machine(), "numpy": np.__version__}
    try:
        import pynq

        info["pynq"] = pynq.__version__
    except ImportError:
        info["pynq"] = None
    return info


def share_malloc_arenas(arenas: int = 2) -> bool:
    """Cap glibc's malloc arenas (``mallopt(M_ARENA_MAX)``) before connection threads start.
    glibc gives each new thread its own arena; an upload received on one connection's thread
    and freed there stays in that arena, so with many threads resident memory grows by about a
    package per arena (measured: +95 MiB over ten ResNet-18 deploys with 20 idle connections
    open; flat with 2 arenas, benchmarks/serve_under_load.py). No effect elsewhere."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        return bool(libc.mallopt(-8, arenas))  # M_ARENA_MAX in glibc's malloc.h
    except (OSError, AttributeError):
        return False


def memory_info() -> dict:
    """Resident and peak resident bytes of this process (Linux /proc; peak from getrusage)."""
    out = {"rss_bytes": None, "peak_rss_bytes": None}
    try:
        import resource

        out["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        with open("/proc/self/statm") as fh:
            out["rss_bytes"] = int(fh.read().split()[1]) * resource.getpagesize()
    except (ImportError, OSError, ValueError, IndexError):
        pass
    return out


class _Refused(Exception):
    """A request the server answers with an error (one line) without calling a handler."""


class Server:
    def __init__(self, handlers: dict[str, Handler], host: str = "127.0.0.1", port: int = 9091, *, key: bytes,
                 device_ops: tuple[str, ...] = ("run",), limits: ServerLimits = ServerLimits(),
                 poll_s: float = 0.2, log: Callable[[str], None] | None = None):
        self.handlers = {"status": self._status, **handlers}
        self.device_ops = set(device_ops)
        self.key, self.limits, self.poll_s = key, limits, poll_s
        self.log = log or (lambda message: print(message, file=sys.stderr, flush=True))
        self.stats = {"requests": 0, "errors": 0, "refused_connections": 0}
        self.started = time.monotonic()
        self.lock = threading.Lock()
        self.open = 0
        self.pending = 0
        self.jobs: queue.Queue = queue.Queue(maxsize=limits.max_queued_runs)
        self.running: str | None = None
        share_malloc_arenas()
        self.sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind((host, port))
        except (OSError, OverflowError) as err:
            self.sock.close()
            raise VdlaError(f"cannot listen on {host}:{port} ({getattr(err, 'strerror', None) or err}); "
                            "pick another --port") from None
        self.sock.listen(128)
        self.sock.settimeout(poll_s)
        self.address = self.sock.getsockname()[:2]

    # --- the accept loop and the device thread -------------------------------------------
    def serve(self, stop: threading.Event | None = None, max_requests: int | None = None) -> None:
        """Answer requests until ``stop`` is set or ``max_requests`` have been handled."""
        stop = stop or threading.Event()
        device = threading.Thread(target=self._device_loop, args=(stop,), name="vdla-device", daemon=True)
        device.start()
        try:
            while not stop.is_set() and (max_requests is None or self.stats["requests"] < max_requests):
                try:
                    conn, peer = self.sock.accept()
                except socket.timeout:
                    continue
                except OSError as err:  # e.g. out of file descriptors: wait, keep serving
                    self.log(f"- accept: error: {err}")
                    time.sleep(self.poll_s)
                    continue
                name = f"{peer[0]}:{peer[1]}"
                with self.lock:
                    admit = self.open < self.limits.max_connections
                    self.open += admit
                if admit:
                    try:
                        threading.Thread(target=self._connection, args=(conn, name), daemon=True).start()
                        continue
                    except RuntimeError:  # no more threads: turn the client away like over the cap
                        with self.lock:
                            self.open -= 1
                self.stats["refused_connections"] += 1
                self._turn_away(conn, name)
        finally:
            stop.set()
            self.sock.close()
            device.join(5)

    def _turn_away(self, conn: socket.socket, peer: str) -> None:
        message = f"server busy: {self.limits.max_connections} connections open; retry later"
        self.log(f"{peer} - error: {message}")
        try:
            conn.settimeout(1.0)
            send(conn, {"ok": False, "error": message})
        except OSError:
            pass
        finally:
            conn.close()

    def _device_loop(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                job = self.jobs.get(timeout=self.poll_s)
            except queue.Empty:
                continue
            self.running = job["op"]
            try:
                job["result"] = _call(self.handlers[job["op"]], job["header"], job["blobs"])
            except VdlaError as err:  # handed back to the connection's thread
                job["error"] = err
            finally:
                self.running = None
                job["blobs"] = None
                job["done"].set()

    # --- one connection --------------------------------------------------------------------
    def _connection(self, conn: socket.socket, peer: str) -> None:
        start = time.monotonic()
        op, result, reserved, sizes = "-", "", 0, [0, 0]
        client_nonce = b""
        try:
            with conn:
                challenge = auth.nonce() + auth.nonce()
                conn.settimeout(self.limits.idle_timeout_s)
                send(conn, hello(challenge, self.key, self.limits.max_frame_bytes))
                limits = Limits(self.limits.max_frame_bytes, self.limits.idle_timeout_s,
                                start + self.limits.header_deadline_s)
                try:
                    header = receive_header(conn, limits, key=self.key, label=auth.REQUEST, nonce=challenge)
                    client_nonce = _nonce(header)
                    op = " ".join(str(header.fields.get("op", "-")).split())[:40] or "-"
                    if not header.authentic:
                        raise _Refused("authentication failed: the request is not signed with this server's key "
                                       f"(id {auth.key_id(self.key)}); use its key file with --key-file")
                    reserved = self._reserve(header)
                    limits.deadline = start + self.limits.request_deadline_s
                    blobs = receive_blobs(conn, header, limits)
                    sizes[0] = header.size
                    reply, out = self._dispatch(op, header.fields, blobs)
                    del blobs
                    sizes[1] = sum(len(d) for d in out.values())
                    result = "ok"
                    send(conn, {"ok": True, "result": reply}, out, key=self.key, label=auth.RESPONSE,
                         nonce=client_nonce)
                except (ProtocolError, _Refused, VdlaError) as err:
                    result = f"error: {err}"
                    self._answer_error(conn, str(err), client_nonce)
        except OSError as err:
            result = f"error: the client went away ({err})" if result in ("", "ok") else result
        except Exception as err:  # noqa: BLE001 - a bug in one request must not stop the server
            frame = traceback.extract_tb(err.__traceback__)[-1]
            result = f"internal error ({type(err).__name__}: {err} at {frame.filename}:{frame.lineno})"
        finally:
            with self.lock:
                self.open -= 1
                self.pending -= reserved
                self.stats["requests"] += 1
                self.stats["errors"] += result != "ok"
            self.log(f"{peer} {op} {' '.join(result.split()) or 'error: no request'} "
                     f"{time.monotonic() - start:.2f} s in {sizes[0]} B out {sizes[1]} B")

    def _reserve(self, header: Header) -> int:
        """Hold ``header.size`` bytes of the upload budget, or refuse the request."""
        size = header.size
        with self.lock:
            if self.pending + size > self.limits.max_pending_bytes:
                raise _Refused(f"server busy: {self.pending} bytes of other uploads held, the limit is "
                               f"{self.limits.max_pending_bytes}; retry later")
            self.pending += size
        return size

    def _dispatch(self, op: str, header: dict, blobs: dict) -> tuple[dict, dict]:
        handler = self.handlers.get(op)
        if handler is None:
            raise _Refused(f"unknown op {op!r} (this server knows: {', '.join(sorted(self.handlers))})")
        if op not in self.device_ops:
            return _call(handler, header, blobs)
        job = {"op": op, "header": header, "blobs": blobs, "done": threading.Event()}
        try:
            self.jobs.put_nowait(job)
        except queue.Full:
            raise _Refused(f"server busy: {self.limits.max_queued_runs} runs wait for the device; retry later") from None
        job["done"].wait()
        if "error" in job:
            raise job["error"]
        return job["result"]

    def _answer_error(self, conn: socket.socket, message: str, client_nonce: bytes) -> None:
        try:
            send(conn, {"ok": False, "error": " ".join(message.split())}, key=self.key, label=auth.RESPONSE,
                 nonce=client_nonce)
        except OSError:
            pass  # the client is gone; nothing more to tell it

    def _status(self, header: dict, blobs: dict) -> tuple[dict, dict]:
        with self.lock:
            state = {"connections": self.open, "pending_bytes": self.pending}
        return {**state, "queued_runs": self.jobs.qsize(), "running": self.running, **self.stats,
                "uptime_s": time.monotonic() - self.started, **memory_info(),
                "limits": self.limits.__dict__}, {}


def _call(handler: Handler, header: dict, blobs: dict) -> tuple[dict, dict]:
    """``handler``'s answer; a bug in it becomes a one-line error naming where it happened."""
    try:
        return handler(header, blobs)
    except VdlaError:
        raise
    except Exception as err:  # noqa: BLE001 - a bug in one request must not stop the server
        frame = traceback.extract_tb(err.__traceback__)[-1]
        raise VdlaError(f"internal error ({type(err).__name__}: {err} at {frame.filename}:{frame.lineno})") from None


def _nonce(header: Header) -> bytes:
    try:
        value = bytes.fromhex(header.fields.get("nonce", ""))
    except (TypeError, ValueError):
        return b""
    return value if len(value) == auth.NONCE_BYTES else b""
