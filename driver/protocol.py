"""The wire protocol of ``vdla serve`` / ``vdla deploy``: length-prefixed frames over TCP.

One frame::

    magic   4 bytes   b"VDLA"
    version u16 LE    PROTOCOL_VERSION
    hlen    u32 LE    bytes of the header
    header  hlen      UTF-8 JSON object; its "blobs" lists {"name", "size", "sha256"} in order
    blobs             the blobs' bytes, back to back, exactly as listed

A request's header has ``op`` (``ping`` or ``run``) and the op's fields; a response's header has
``ok`` (true, with ``result``; false, with ``error``: one line for people). The receiver checks
the magic, the version, the header size (at most MAX_HEADER), every blob's size against the
frame's budget (``max_bytes``) before reading it and its SHA-256 after: a dropped connection, a
truncated or corrupt transfer ends in a ProtocolError that says which blob and how far it got.
Every socket operation has a timeout. Standard library and numpy only (board-side code).
"""

from __future__ import annotations

import hashlib
import io
import json
import socket
import struct

import numpy as np

from driver.device import DeviceError

MAGIC = b"VDLA"
PROTOCOL_VERSION = 1
PREFIX = struct.Struct("<4sHI")
MAX_HEADER = 4 << 20
DEFAULT_MAX_BYTES = 512 << 20   # the board has 512 MB of DDR3: a package must be far smaller
CHUNK = 1 << 20


class ProtocolError(DeviceError):
    """A frame could not be received or did not check out (connection, size, hash)."""


def send(sock: socket.socket, header: dict, blobs: dict[str, bytes] | None = None) -> int:
    """Send one frame; returns the bytes sent."""
    blobs = blobs or {}
    listed = [{"name": name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
              for name, data in blobs.items()]
    text = json.dumps({**header, "blobs": listed}).encode()
    if len(text) > MAX_HEADER:
        raise ProtocolError(f"frame header of {len(text)} bytes exceeds {MAX_HEADER}")
    sock.sendall(PREFIX.pack(MAGIC, PROTOCOL_VERSION, len(text)) + text)
    for data in blobs.values():
        view = memoryview(data)
        for start in range(0, len(view), CHUNK):
            sock.sendall(view[start:start + CHUNK])
    return PREFIX.size + len(text) + sum(len(d) for d in blobs.values())


def _exactly(sock: socket.socket, n: int, what: str) -> bytes:
    out = bytearray()
    while len(out) < n:
        try:
            chunk = sock.recv(min(CHUNK, n - len(out)))
        except socket.timeout:
            raise ProtocolError(f"timed out receiving {what} ({len(out)} of {n} bytes)") from None
        except OSError as err:
            raise ProtocolError(f"connection lost receiving {what} ({len(out)} of {n} bytes: {err})") from None
        if not chunk:
            raise ProtocolError(f"connection closed after {len(out)} of {n} bytes of {what}")
        out += chunk
    return bytes(out)


def receive(sock: socket.socket, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[dict, dict[str, bytes]]:
    """One frame: (header, {blob name: bytes}), every size and hash checked."""
    magic, version, hlen = PREFIX.unpack(_exactly(sock, PREFIX.size, "the frame prefix"))
    if magic != MAGIC:
        raise ProtocolError(f"not a vdla frame (magic {magic!r}); is the other side `vdla serve`?")
    if version != PROTOCOL_VERSION:
        raise ProtocolError(f"protocol version {version}, expected {PROTOCOL_VERSION}; update vdla on both sides")
    if hlen > MAX_HEADER:
        raise ProtocolError(f"frame header of {hlen} bytes exceeds {MAX_HEADER}")
    try:
        header = json.loads(_exactly(sock, hlen, "the frame header"))
        listed = header.pop("blobs")
        sizes = [int(b["size"]) for b in listed]
        if min(sizes, default=0) < 0:
            raise ValueError("negative blob size")
        total = sum(sizes)
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise ProtocolError(f"malformed frame header ({err})") from None
    if total > max_bytes:
        raise ProtocolError(f"frame announces {total} bytes of blobs, more than the {max_bytes}-byte limit")
    blobs = {}
    for b in listed:
        data = _exactly(sock, int(b["size"]), f"blob {b['name']!r}")
        if hashlib.sha256(data).hexdigest() != b["sha256"]:
            raise ProtocolError(f"blob {b['name']!r}: SHA-256 mismatch, the transfer is corrupt")
        blobs[str(b["name"])] = data
    return header, blobs


def array_bytes(array: np.ndarray) -> bytes:
    """A numpy array as .npy bytes (no pickles)."""
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
    return buf.getvalue()


def bytes_array(data: bytes, what: str) -> np.ndarray:
    try:
        return np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        raise ProtocolError(f"{what} is not a readable .npy array ({err})") from None


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` -> (host, port), with a clear error."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise DeviceError(f"--board {text!r}: expected HOST:PORT, e.g. pynq:9091 or 127.0.0.1:9091")
    return host.strip("[]"), int(port)


def request(address: str | tuple[str, int], header: dict, blobs: dict[str, bytes] | None = None, *,
            timeout_s: float = 600.0, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[dict, dict[str, bytes], dict]:
    """Send one request and wait for its response: (result, blobs, transfer statistics).
    A response with ``ok`` false raises DeviceError with the server's message."""
    import time

    host, port = parse_address(address) if isinstance(address, str) else address
    start = time.perf_counter()
    try:
        sock = socket.create_connection((host, port), timeout=min(timeout_s, 30.0))
    except OSError as err:
        raise ProtocolError(f"cannot connect to {host}:{port} ({err.strerror or err}); is `vdla serve` running "
                            "there?") from None
    with sock:
        sock.settimeout(timeout_s)
        try:
            sent = send(sock, header, blobs)
        except OSError as err:
            raise ProtocolError(f"connection to {host}:{port} lost while sending ({err})") from None
        sent_at = time.perf_counter()
        reply, out = receive(sock, max_bytes)
    stats = {"bytes_sent": sent, "send_seconds": sent_at - start, "total_seconds": time.perf_counter() - start}
    if not reply.get("ok"):
        raise DeviceError(f"{host}:{port}: {reply.get('error', 'the server gave no reason')}")
    return reply.get("result", {}), out, stats
