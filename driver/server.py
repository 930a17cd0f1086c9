"""The TCP server of ``vdla serve``: concurrent connections, authenticated requests, one device.

Each connection carries one exchange (:mod:`driver.protocol`): hello with a fresh challenge, one
request, one response. Until its request's fixed-size prefix (74 bytes) proves the key (its
MAC), a connection is in the *lobby*: served by the accept thread through a selector, without a
thread of its own, holding only its socket, its challenge and those 74 bytes. A byte of the
header is read only after the MAC verifies; an unauthenticated request is answered with an
unsigned refusal (never anything MACed) and closed. An authenticated request gets its own
thread. Operations are either *immediate* (``ping``, ``status``: answered on the connection's
thread, never waiting for another client) or *device* operations (``run``): handed to the single
device thread through a bounded queue, so device runs are serialised while uploads, pings and
status requests of other clients go on.

Bounds (:class:`ServerLimits`): open connections (more get a "busy" hello at once), per-read
idle timeout, a deadline for the prefix (before authentication, short) and for the whole
request, the frame size, the bytes of all uploads held at once, queued runs (a full queue
answers "busy" with the expected wait, from the mean of recent runs), and each run's wall time
(``run_timeout_s``): a device op's handler gets a :class:`RunControl` and checks it between
steps (the network executor: between ops), so a run past its deadline, or whose client went
away, stops at the next step and is reported in one line. A Python thread cannot be stopped
from outside, so one step (one op) always finishes; its work is bounded by the device's own
bounds (cycles, tensor and image sizes). Every malformed, unauthenticated or oversized request,
and every error of a handler, ends that request only: the client gets ``ok: false`` with one
line when it still listens, the server logs one line per request (client, op, result, time,
bytes; control characters escaped) and keeps serving.
"""

from __future__ import annotations

import collections
import platform
import queue
import secrets
import select
import selectors
import socket
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Callable

from driver import auth
from driver.protocol import (DEFAULT_MAX_BYTES, MAX_MESSAGE, PREFIX_BYTES, Header, Limits, ProtocolError, busy_hello,
                             check_start, frame_head, hello, parse_prefix, receive_blobs, receive_header,
                             response_context, send)
from vdla_hw.errors import VdlaError
from vdla_hw.files import printable

Handler = Callable[..., tuple]  # (header, blobs) -> (result, blobs); a device op's also gets a RunControl


@dataclass(frozen=True)
class ServerLimits:
    max_connections: int = 64          # open connections; more are refused at once
    idle_timeout_s: float = 10.0       # a read waiting longer than this for a byte ends the request
    header_deadline_s: float = 10.0    # prefix + header (before authentication) within this of connecting
    request_deadline_s: float = 600.0  # the whole request within this of connecting
    max_frame_bytes: int = DEFAULT_MAX_BYTES  # blobs of one request (default: one device image, 128 MiB)
    max_pending_bytes: int = DEFAULT_MAX_BYTES  # blobs of all requests held at once (uploading or queued)
    max_queued_runs: int = 4           # device operations waiting for the device
    run_timeout_s: float = 600.0       # one device run's wall time; checked between its steps (ops)


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
    """A request the server answers with an error (one line) without calling a handler;
    ``busy``: the fields of a "busy" answer (``retry_after_s``)."""

    def __init__(self, message: str, busy: dict | None = None):
        super().__init__(message)
        self.busy = busy


class RunStopped(VdlaError):
    """A device run stopped at its deadline or because its client went away."""


class RunControl:
    """Handed to a device op's handler: :meth:`reason` says why the run must stop now (its wall
    time passed ``timeout_s``, or it was cancelled: the client went away), else None. The
    handler checks it between steps; :meth:`check` raises RunStopped."""

    def __init__(self, timeout_s: float):
        self.timeout_s = timeout_s
        self.cancelled = threading.Event()
        self.deadline: float | None = None  # set when the run starts on the device

    def start(self) -> None:
        self.deadline = time.monotonic() + self.timeout_s

    def reason(self) -> str | None:
        if self.cancelled.is_set():
            return "its client went away"
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return f"it passed the server's run deadline of {self.timeout_s:g} s (vdla serve --run-timeout)"
        return None

    def check(self, where: str = "") -> None:
        why = self.reason()
        if why:
            raise RunStopped(f"run stopped{' ' + where if where else ''}: {why}")


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
        self.run_started = 0.0
        self.recent_runs: collections.deque = collections.deque(maxlen=8)  # seconds of the last device runs
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
        self.key_id = auth.key_id(key)
        self.unauthenticated = ("authentication failed: the request is not signed with this server's key "
                                f"(id {self.key_id}); use its key file with --key-file")
        self.refusal = frame_head({"ok": False, "error": self.unauthenticated})  # unsigned, the same for everyone

    # --- the accept loop and the device thread -------------------------------------------
    def serve(self, stop: threading.Event | None = None, max_requests: int | None = None) -> None:
        """Answer requests until ``stop`` is set or ``max_requests`` have been handled."""
        stop = stop or threading.Event()
        device = threading.Thread(target=self._device_loop, args=(stop,), name="vdla-device", daemon=True)
        device.start()
        selector = selectors.DefaultSelector()
        self.sock.setblocking(False)
        selector.register(self.sock, selectors.EVENT_READ, None)
        lobby: dict[socket.socket, _Arrival] = {}
        try:
            while not stop.is_set() and (max_requests is None or self.stats["requests"] < max_requests):
                for event, _ in selector.select(self.poll_s):
                    if event.data is None:
                        self._accept(selector, lobby)
                    else:
                        self._arrive(selector, lobby, event.fileobj, event.data)
                self._expire(selector, lobby)
        finally:
            stop.set()
            for conn, arrival in list(lobby.items()):
                self._leave(selector, lobby, conn, arrival, "error: the server stopped")
            selector.close()
            self.sock.close()
            device.join(5)

    # --- the lobby: connections that have not proved the key yet, all on the accept thread ---
    def _accept(self, selector, lobby: dict) -> None:
        """Admit every pending connection (up to the cap): send its hello with a fresh
        challenge and wait, without a thread, for its prefix."""
        while True:
            try:
                conn, peer = self.sock.accept()
            except (BlockingIOError, socket.timeout):
                return
            except OSError as err:  # e.g. out of file descriptors: wait, keep serving
                self.log(f"- accept: error: {err}")
                time.sleep(self.poll_s)
                return
            name = f"{peer[0]}:{peer[1]}"
            conn.setblocking(False)
            with self.lock:
                admit = self.open < self.limits.max_connections
                self.open += admit
            if not admit:
                self.stats["refused_connections"] += 1
                self._turn_away(conn, name)
                continue
            arrival = _Arrival(name, secrets.token_bytes(2 * auth.NONCE_BYTES))
            lobby[conn] = arrival
            selector.register(conn, selectors.EVENT_READ, arrival)
            if not _send_small(conn, frame_head(hello(arrival.challenge, self.key, self.limits.max_frame_bytes,
                                                      self.key_id))):
                self._leave(selector, lobby, conn, arrival, "error: the client went away before its hello")

    def _arrive(self, selector, lobby: dict, conn: socket.socket, arrival: "_Arrival") -> None:
        """Bytes of a prefix arrived: check the magic and version as soon as they are there,
        the length and the MAC when all 74 are; an authenticated request goes on in a thread
        of its own, anything else is refused unsigned and closed."""
        try:
            with memoryview(arrival.raw) as view:
                k = conn.recv_into(view[arrival.got:])
        except (BlockingIOError, InterruptedError):
            return
        except OSError as err:
            self._leave(selector, lobby, conn, arrival, f"error: connection lost receiving the frame prefix ({err})")
            return
        if not k:
            self._leave(selector, lobby, conn, arrival, f"error: connection closed after {arrival.got} of "
                        f"{PREFIX_BYTES} bytes of the frame prefix")
            return
        arrival.got += k
        arrival.last = time.monotonic()
        try:
            if arrival.got >= 6:
                check_start(arrival.raw)
            if arrival.got < PREFIX_BYTES:
                return
            prefix = parse_prefix(arrival.raw)
            if not prefix.verify(self.key, auth.REQUEST, arrival.challenge):
                self._leave(selector, lobby, conn, arrival, f"error: {self.unauthenticated}", refusal=self.refusal)
                return
        except ProtocolError as err:
            self._leave(selector, lobby, conn, arrival, f"error: {err}", answer=True)
            return
        selector.unregister(conn)
        del lobby[conn]
        conn.setblocking(True)
        try:
            threading.Thread(target=self._connection, args=(conn, arrival, prefix), daemon=True).start()
        except RuntimeError:  # no more threads: refuse like a full server
            self._finish(arrival, "error: server busy: no thread for the request")
            conn.close()

    def _expire(self, selector, lobby: dict) -> None:
        """Close lobby connections idle for longer than the idle timeout, or whose prefix is
        not all there by the header deadline."""
        now = time.monotonic()
        for conn, arrival in list(lobby.items()):
            if now - arrival.last >= self.limits.idle_timeout_s:
                why = f"stalled: nothing for {self.limits.idle_timeout_s:g} s"
            elif now - arrival.start >= self.limits.header_deadline_s:
                why = "did not arrive in time"
            else:
                continue
            self._leave(selector, lobby, conn, arrival, f"error: timed out receiving the frame prefix: {why} "
                        f"({arrival.got} of {PREFIX_BYTES} bytes)", answer=True)

    def _leave(self, selector, lobby: dict, conn: socket.socket, arrival: "_Arrival", result: str,
               answer: bool = False, refusal: bytes | None = None) -> None:
        """End a lobby connection: an unsigned refusal (``refusal``'s frame, or one made of
        ``result`` when ``answer``; best effort, never waiting), close, log."""
        selector.unregister(conn)
        del lobby[conn]
        if answer and refusal is None:
            refusal = frame_head({"ok": False, "error": printable(result.removeprefix("error: "), MAX_MESSAGE)})
        if refusal is not None:
            _send_small(conn, refusal)
        conn.close()
        self._finish(arrival, result)

    def _finish(self, arrival: "_Arrival", result: str, op: str = "-", sizes=(0, 0), reserved: int = 0) -> None:
        """Log an ended connection's one line, then account for it: a request is counted in
        ``stats`` only once its line is logged, so whoever sees the count can read the line."""
        said = printable(" ".join(result.split()) or "error: no request", MAX_MESSAGE)
        try:
            self.log(f"{arrival.peer} {op} {said} {time.monotonic() - arrival.start:.2f} s in {sizes[0]} B out "
                     f"{sizes[1]} B")
        finally:
            with self.lock:
                self.open -= 1
                self.pending -= reserved
                self.stats["requests"] += 1
                self.stats["errors"] += result != "ok"

    def _turn_away(self, conn: socket.socket, peer: str) -> None:
        message = f"{self.limits.max_connections} connections open"
        self.log(f"{peer} - error: server busy: {message}")
        _send_small(conn, frame_head(busy_hello(message)))
        conn.close()

    def _device_loop(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                job = self.jobs.get(timeout=self.poll_s)
            except queue.Empty:
                continue
            control = job["control"]
            if control.cancelled.is_set():  # its client is gone: nobody waits for the answer
                job["error"] = RunStopped("run not started: its client went away")
                job["blobs"] = None
                job["done"].set()
                continue
            self.running, self.run_started = job["op"], time.monotonic()
            control.start()
            try:
                job["result"] = _call(self.handlers[job["op"]], job["header"], job["blobs"], control)
            except VdlaError as err:  # handed back to the connection's thread, without the frames that hold the blobs
                job["error"] = _without_frames(err)
            finally:
                with self.lock:
                    self.recent_runs.append(time.monotonic() - self.run_started)
                self.running = None
                job["blobs"] = None
                job["done"].set()

    def expected_wait(self) -> float | None:
        """Seconds a run queued now would wait for the device: the mean of recent runs for each
        queued one, plus what is left of the current one (None before any run has finished)."""
        with self.lock:
            if not self.recent_runs:
                return None
            mean = sum(self.recent_runs) / len(self.recent_runs)
        left = max(mean - (time.monotonic() - self.run_started), 0.0) if self.running else 0.0
        return self.jobs.qsize() * mean + left

    def _busy(self, what: str) -> _Refused:
        wait = self.expected_wait()
        when = (f"expected wait {wait:.0f} s (mean of the last {len(self.recent_runs)} runs)" if wait is not None
                else f"expected wait unknown: no run has finished yet, each may take up to "
                     f"{self.limits.run_timeout_s:g} s")
        return _Refused(f"server busy: {what}; {when}; retry later", busy={"retry_after_s": wait})

    # --- one authenticated connection, on its own thread ---------------------------------------
    def _connection(self, conn: socket.socket, arrival: "_Arrival", prefix) -> None:
        op, result, reserved, sizes = "-", "", 0, [0, 0]
        bound = response_context(arrival.challenge, b"", b"")  # the prefix proved the key; until the header is read
        try:
            with conn:
                limits = Limits(self.limits.max_frame_bytes, self.limits.idle_timeout_s,
                                arrival.start + self.limits.request_deadline_s)
                try:
                    header = receive_header(conn, limits, prefix)
                    bound = response_context(arrival.challenge, _nonce(header), header.digest)
                    op = printable(" ".join(str(header.fields.get("op", "-")).split()), 40) or "-"
                    reserved = self._reserve(header)
                    blobs = receive_blobs(conn, header, limits)
                    sizes[0] = header.size
                    reply, out = self._dispatch(op, header.fields, blobs, conn)
                    del blobs
                    sizes[1] = sum(len(d) for d in out.values())
                    result = "ok"
                    send(conn, {"ok": True, "result": reply}, out, key=self.key, label=auth.RESPONSE, context=bound)
                except (ProtocolError, _Refused, VdlaError) as err:
                    result = f"error: {err}"
                    _without_frames(err)  # its frames hold the blobs, or the part of one that arrived
                    self._answer_error(conn, err, bound)
        except OSError as err:
            result = f"error: the client went away ({err})" if result in ("", "ok") else result
            _without_frames(err)
        except Exception as err:  # noqa: BLE001 - a bug in one request must not stop the server
            frame = traceback.extract_tb(err.__traceback__)[-1]
            result = f"internal error ({type(err).__name__}: {err} at {frame.filename}:{frame.lineno})"
            _without_frames(err)
        finally:
            self._finish(arrival, result, op, sizes, reserved)

    def _reserve(self, header: Header) -> int:
        """Hold ``header.size`` bytes of the upload budget, or refuse the request."""
        size = header.size
        with self.lock:
            held = self.pending
            if held + size > self.limits.max_pending_bytes:
                size = -1
            else:
                self.pending += size
        if size < 0:
            raise self._busy(f"{held} bytes of other uploads held, the limit is {self.limits.max_pending_bytes}")
        return size

    def _dispatch(self, op: str, header: dict, blobs: dict, conn: socket.socket) -> tuple[dict, dict]:
        handler = self.handlers.get(op)
        if handler is None:
            raise _Refused(f"unknown op '{op}' (this server knows: {', '.join(sorted(self.handlers))})")
        if op not in self.device_ops:
            return _call(handler, header, blobs)
        job = {"op": op, "header": header, "blobs": blobs, "done": threading.Event(),
               "control": RunControl(self.limits.run_timeout_s)}
        try:
            self.jobs.put_nowait(job)
        except queue.Full:
            raise self._busy(f"{self.limits.max_queued_runs} runs wait for the device") from None
        while not job["done"].wait(self.poll_s):
            if _gone(conn):  # the client closed: stop its run at the next step
                job["control"].cancelled.set()
        error = job.pop("error", None)  # popped: a job holding the exception raised here would be a reference cycle
        if error is not None:
            raise error
        return job.pop("result")

    def _answer_error(self, conn: socket.socket, err: Exception, bound: bytes) -> None:
        """The one-line refusal of a request whose prefix proved the key, MACed over ``bound``
        (the lobby refuses the others, unsigned)."""
        fields = {"ok": False, "error": printable(" ".join(str(err).split()), MAX_MESSAGE)}
        if isinstance(err, _Refused) and err.busy is not None:
            fields["busy"] = err.busy
        try:
            send(conn, fields, key=self.key, label=auth.RESPONSE, context=bound)
            _linger(conn)  # so a client still sending reads the answer rather than a reset
        except OSError:
            pass  # the client is gone; nothing more to tell it

    def _status(self, header: dict, blobs: dict) -> tuple[dict, dict]:
        with self.lock:
            state = {"connections": self.open, "pending_bytes": self.pending}
        return {**state, "queued_runs": self.jobs.qsize(), "running": self.running, **self.stats,
                "expected_wait_s": self.expected_wait(), "uptime_s": time.monotonic() - self.started,
                **memory_info(), "limits": self.limits.__dict__}, {}


def _call(handler: Handler, header: dict, blobs: dict, *control) -> tuple[dict, dict]:
    """``handler``'s answer (a device op's handler also gets its RunControl); a bug in it
    becomes a one-line error naming where it happened."""
    try:
        return handler(header, blobs, *control)
    except VdlaError:
        raise
    except Exception as err:  # noqa: BLE001 - a bug in one request must not stop the server
        frame = traceback.extract_tb(err.__traceback__)[-1]
        raise VdlaError(f"internal error ({type(err).__name__}: {err} at {frame.filename}:{frame.lineno})") from None


class _Arrival:
    """A connection in the lobby: who, since when, its challenge, and its prefix so far
    (PREFIX_BYTES bytes: all the memory a client without the key costs, with the socket)."""

    __slots__ = ("peer", "challenge", "start", "last", "raw", "got")

    def __init__(self, peer: str, challenge: bytes):
        self.peer, self.challenge = peer, challenge
        self.start = self.last = time.monotonic()
        self.raw, self.got = bytearray(PREFIX_BYTES), 0


def _without_frames(err: BaseException) -> BaseException:
    """``err`` with the frames of its traceback, and of the exceptions it chains, cleared and
    dropped: they hold the request's blobs (a package of up to 128 MiB), and an exception kept
    with them forms reference cycles that only the garbage collector would break, late."""
    seen, todo = set(), [err]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if e.__traceback__ is not None:
            traceback.clear_frames(e.__traceback__)
            e.__traceback__ = None
        todo += [e.__cause__, e.__context__]
    return err


def _send_small(conn: socket.socket, data: bytes) -> bool:
    """Send a frame of a few hundred bytes on a non-blocking socket (it fits the empty send
    buffer of a fresh connection); False if it could not be sent whole."""
    try:
        return conn.send(data) == len(data)
    except OSError:
        return False


def _gone(conn: socket.socket) -> bool:
    """Whether the client closed its side (it sends nothing after its request, so a readable
    socket with nothing to read is a close). ``poll``, not ``select``: ``select.select`` refuses a
    descriptor numbered 1024 or more (ValueError), which took every run of a server with over a
    thousand connections open for a client that had gone."""
    try:
        poller = select.poll()
        poller.register(conn, select.POLLIN)
        return bool(poller.poll(0)) and conn.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


def _linger(conn: socket.socket, seconds: float = 2.0, most: int = 1 << 20) -> None:
    """After a refusal to a client that proved the key: stop sending, read (and drop) what it
    still sends for a moment, so closing does not reset the connection before it reads the answer."""
    conn.shutdown(socket.SHUT_WR)
    deadline, dropped = time.monotonic() + seconds, 0
    while dropped < most and (left := deadline - time.monotonic()) > 0:
        conn.settimeout(left)
        try:
            data = conn.recv(1 << 16)
        except (socket.timeout, OSError):
            return
        if not data:
            return
        dropped += len(data)


def _nonce(header: Header) -> bytes:
    value = header.fields.get("nonce", "")
    try:
        raw = bytes.fromhex(value) if isinstance(value, str) else b""
    except ValueError:
        return b""
    return raw if len(raw) == auth.NONCE_BYTES else b""
