"""A small TCP server for ``vdla serve``: one request per connection, served one at a time (the
device runs one program at a time), each answered with one response frame (:mod:`driver.protocol`).

Handlers map an ``op`` to ``handler(header, blobs) -> (result dict, response blobs)``. A request
that fails to arrive (dropped connection, corrupt or oversized transfer), a handler that raises a
user-facing error (wrong configuration, device timeout, corrupt package) or even a bug ends that
request only: the client gets ``ok: false`` with one line when it is still listening, the
server logs it and keeps serving. The accept loop wakes every ``poll_s`` to honour ``stop``.
"""

from __future__ import annotations

import platform
import socket
import sys
import threading
import time
import traceback
from typing import Callable

from driver.protocol import DEFAULT_MAX_BYTES, ProtocolError, receive, send
from vdla_hw.errors import VdlaError

Handler = Callable[[dict, dict], tuple]


def host_info() -> dict:
    import numpy as np

    info = {"python": platform.python_version(), "machine": platform.machine(), "numpy": np.__version__}
    try:
        import pynq

        info["pynq"] = pynq.__version__
    except ImportError:
        info["pynq"] = None
    return info


class Server:
    def __init__(self, handlers: dict[str, Handler], host: str = "127.0.0.1", port: int = 9091, *,
                 io_timeout_s: float = 120.0, max_bytes: int = DEFAULT_MAX_BYTES, poll_s: float = 0.2,
                 log: Callable[[str], None] | None = None):
        self.handlers = dict(handlers)
        self.io_timeout_s, self.max_bytes, self.poll_s = io_timeout_s, max_bytes, poll_s
        self.log = log or (lambda message: print(message, file=sys.stderr, flush=True))
        self.stats = {"requests": 0, "errors": 0}
        self.sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind((host, port))
        except OSError as err:
            self.sock.close()
            raise VdlaError(f"cannot listen on {host}:{port} ({err.strerror or err}); pick another --port") from None
        self.sock.listen(4)
        self.sock.settimeout(poll_s)
        self.address = self.sock.getsockname()[:2]

    def serve(self, stop: threading.Event | None = None, max_requests: int | None = None) -> None:
        """Answer requests until ``stop`` is set or ``max_requests`` have been handled."""
        stop = stop or threading.Event()
        try:
            while not stop.is_set() and (max_requests is None or self.stats["requests"] < max_requests):
                try:
                    conn, peer = self.sock.accept()
                except socket.timeout:
                    continue
                with conn:
                    self.handle(conn, f"{peer[0]}:{peer[1]}")
        finally:
            self.sock.close()

    def handle(self, conn: socket.socket, peer: str) -> None:
        self.stats["requests"] += 1
        conn.settimeout(self.io_timeout_s)
        start = time.perf_counter()
        try:
            header, blobs = receive(conn, self.max_bytes)
        except ProtocolError as err:
            return self._fail(conn, peer, "request", f"bad request: {err}")
        op = str(header.get("op"))
        handler = self.handlers.get(op)
        if handler is None:
            return self._fail(conn, peer, op, f"unknown op {op!r} (this server knows: {', '.join(self.handlers)})")
        try:
            result, out = handler(header, blobs)
        except VdlaError as err:
            return self._fail(conn, peer, op, str(err))
        except Exception as err:  # noqa: BLE001 - a bug in one request must not stop the server
            self.log(traceback.format_exc())
            return self._fail(conn, peer, op, f"internal error ({type(err).__name__}: {err}); see the server log")
        try:
            send(conn, {"ok": True, "result": result}, out)
        except OSError as err:
            self.stats["errors"] += 1
            self.log(f"{peer} {op}: the client went away before the response was sent ({err})")
            return None
        self.log(f"{peer} {op}: ok ({time.perf_counter() - start:.2f} s)")
        return None

    def _fail(self, conn: socket.socket, peer: str, op: str, message: str) -> None:
        self.stats["errors"] += 1
        self.log(f"{peer} {op}: error: {message}")
        try:
            send(conn, {"ok": False, "error": message})
        except OSError:
            pass  # the client is gone; nothing more to tell it
