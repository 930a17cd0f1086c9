"""The wire protocol of ``vdla serve`` / ``vdla deploy``: authenticated, length-prefixed frames
over TCP (docs/driver.md has the tables).

One frame::

    magic   4 bytes   b"VDLA"
    version u16 LE    PROTOCOL_VERSION
    hlen    u32 LE    bytes of the header (at most MAX_HEADER)
    mac     32 bytes  HMAC-SHA256 (driver.auth) of a label, the peer's nonce, magic..hlen and the
                      header; zeros in the server's hello, which is not authenticated
    header  hlen      UTF-8 JSON object; its "blobs" lists {"name", "size", "sha256"} in order
    blobs             the blobs' bytes, back to back, exactly as listed

A connection carries one exchange: the server sends a *hello* (``{"hello": "vdla serve",
"protocol", "challenge", "key_id", "max_frame_bytes"}``, a fresh 32-byte challenge); the client
sends one request (``op``, its own ``nonce``, the op's fields), MACed over the challenge; the
server answers (``ok`` true with ``result``, or false with ``error``: one line for people),
MACed over the client's nonce. The receiver checks magic, version and header size, the MAC
before it trusts the header, the blob list's types and sizes against its limit before reading
any blob, and every blob's SHA-256 after. Every read has an idle timeout and a deadline.
Standard library only (board-side code).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import socket
import struct
import time
from dataclasses import dataclass

from driver import auth
from driver.device import DeviceError
from vdla_hw.limits import MAX_DRAM_BYTES

MAGIC = b"VDLA"
PROTOCOL_VERSION = 2
PREFIX = struct.Struct("<4sHI32s")
MAX_HEADER = 1 << 20
DEFAULT_MAX_BYTES = MAX_DRAM_BYTES  # a package is at most one device image's worth of bytes
CHUNK = 1 << 20
NO_MAC = bytes(auth.MAC_BYTES)
_SHA256 = re.compile(r"[0-9a-f]{64}")


class ProtocolError(DeviceError):
    """A frame could not be received or did not check out (connection, size, hash, format)."""


@dataclass
class Limits:
    """How long and how much one receive may take: ``idle_s`` without a byte, everything by
    ``deadline`` (a ``time.monotonic()`` value), at most ``max_bytes`` of blobs."""

    max_bytes: int = DEFAULT_MAX_BYTES
    idle_s: float | None = None
    deadline: float | None = None


@dataclass
class Header:
    """A received frame header: the JSON object, its blob list, and whether its MAC verified."""

    fields: dict
    blobs: list[dict]
    authentic: bool

    @property
    def size(self) -> int:
        return sum(b["size"] for b in self.blobs)


def send(sock: socket.socket, header: dict, blobs: dict[str, bytes] | None = None, *, key: bytes | None = None,
         label: bytes = b"", nonce: bytes = b"") -> int:
    """Send one frame (MACed with ``key`` over ``label`` and the peer's ``nonce``); returns its bytes."""
    blobs = blobs or {}
    listed = [{"name": name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
              for name, data in blobs.items()]
    text = json.dumps({**header, "blobs": listed}).encode()
    if len(text) > MAX_HEADER:
        raise ProtocolError(f"frame header of {len(text)} bytes exceeds {MAX_HEADER}")
    start = struct.pack("<4sHI", MAGIC, PROTOCOL_VERSION, len(text))
    tag = auth.mac(key, label, nonce, start + text) if key is not None else NO_MAC
    sock.sendall(start + tag + text)
    for data in blobs.values():
        view = memoryview(data)
        for offset in range(0, len(view), CHUNK):
            sock.sendall(view[offset:offset + CHUNK])
    return PREFIX.size + len(text) + sum(len(d) for d in blobs.values())


def _exactly(sock: socket.socket, n: int, what: str, limits: Limits) -> bytes:
    """``n`` bytes, each recv bounded by the idle timeout and the deadline."""
    out = bytearray(n)
    view, got = memoryview(out), 0
    while got < n:
        wait = limits.idle_s if limits.idle_s is not None else math.inf
        if limits.deadline is not None:
            left = limits.deadline - time.monotonic()
            if left <= 0:
                raise ProtocolError(f"{what} did not arrive in time ({got} of {n} bytes)")
            wait = min(wait, left)
        if wait != math.inf:
            sock.settimeout(wait)
        try:
            k = sock.recv_into(view[got:], min(CHUNK, n - got))
        except socket.timeout:
            late = limits.deadline is not None and time.monotonic() >= limits.deadline
            why = "did not arrive in time" if late else f"stalled: nothing for {wait:g} s"
            raise ProtocolError(f"timed out receiving {what}: {why} ({got} of {n} bytes)") from None
        except OSError as err:
            raise ProtocolError(f"connection lost receiving {what} ({got} of {n} bytes: {err})") from None
        if not k:
            raise ProtocolError(f"connection closed after {got} of {n} bytes of {what}")
        got += k
    return bytes(out)


def _blob_list(header, max_bytes: int) -> list[dict]:
    """The checked blob list of a parsed header (names unique, sizes within ``max_bytes``)."""
    if not isinstance(header, dict):
        raise ProtocolError(f"malformed frame header: a JSON {type(header).__name__}, not an object")
    listed = header.pop("blobs", None)
    if not isinstance(listed, list):
        raise ProtocolError("malformed frame header: no 'blobs' list")
    names, total = set(), 0
    for k, b in enumerate(listed):
        if not isinstance(b, dict):
            raise ProtocolError(f"malformed frame header: blob {k} is not an object")
        name, size, sha = b.get("name"), b.get("size"), b.get("sha256")
        if not isinstance(name, str) or not 0 < len(name) <= 200 or name in names:
            raise ProtocolError(f"malformed frame header: blob {k} has no 'name', a bad one or a repeated one")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ProtocolError(f"malformed frame header: blob {name!r} has no non-negative integer 'size'")
        if not isinstance(sha, str) or not _SHA256.fullmatch(sha):
            raise ProtocolError(f"malformed frame header: blob {name!r} has no 'sha256' (64 hex digits)")
        names.add(name)
        total += size
    if total > max_bytes:
        raise ProtocolError(f"frame announces {total} bytes of blobs, more than the {max_bytes}-byte limit")
    return listed


def receive_header(sock: socket.socket, limits: Limits, *, key: bytes | None = None, label: bytes = b"",
                   nonce: bytes = b"") -> Header:
    """The prefix and header of one frame; ``authentic`` says whether its MAC verified with
    ``key`` (always False without a key). The caller decides before any blob is read."""
    magic, version, hlen, tag = PREFIX.unpack(_exactly(sock, PREFIX.size, "the frame prefix", limits))
    if magic != MAGIC:
        raise ProtocolError(f"not a vdla frame (magic {magic!r}); is the other side `vdla serve`?")
    if version != PROTOCOL_VERSION:
        raise ProtocolError(f"protocol version {version}, expected {PROTOCOL_VERSION}; update vdla on both sides")
    if hlen > MAX_HEADER:
        raise ProtocolError(f"frame header of {hlen} bytes exceeds {MAX_HEADER}")
    text = _exactly(sock, hlen, "the frame header", limits)
    authentic = key is not None and auth.verify(key, label, nonce, struct.pack("<4sHI", magic, version, hlen) + text,
                                                tag)
    try:
        fields = json.loads(text)
    except (ValueError, RecursionError) as err:
        raise ProtocolError(f"malformed frame header: not JSON ({err})") from None
    return Header(fields, _blob_list(fields, limits.max_bytes), authentic)


def receive_blobs(sock: socket.socket, header: Header, limits: Limits) -> dict[str, bytes]:
    blobs = {}
    for b in header.blobs:
        data = _exactly(sock, b["size"], f"blob {b['name']!r}", limits)
        if hashlib.sha256(data).hexdigest() != b["sha256"]:
            raise ProtocolError(f"blob {b['name']!r}: SHA-256 mismatch, the transfer is corrupt")
        blobs[b["name"]] = data
    return blobs


def receive(sock: socket.socket, limits: Limits | None = None, **mac) -> tuple[dict, dict[str, bytes]]:
    """One frame without authentication: (header, {blob name: bytes}), every size and hash checked."""
    limits = limits or Limits()
    header = receive_header(sock, limits, **mac)
    return header.fields, receive_blobs(sock, header, limits)


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` -> (host, port), with a clear error."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise DeviceError(f"--board {text!r}: expected HOST:PORT, e.g. pynq:9091 or 127.0.0.1:9091")
    return host.strip("[]"), int(port)


def hello(challenge: bytes, key: bytes, max_frame_bytes: int) -> dict:
    """The header of the server's first frame."""
    return {"hello": "vdla serve", "protocol": PROTOCOL_VERSION, "challenge": challenge.hex(),
            "key_id": auth.key_id(key), "max_frame_bytes": max_frame_bytes}


def _challenge(fields: dict, where: str, key: bytes) -> tuple[bytes, int]:
    if fields.get("hello") != "vdla serve":
        raise ProtocolError(f"{where} did not greet like `vdla serve` (is it one, of this version?)")
    try:
        challenge = bytes.fromhex(fields["challenge"])
        limit = int(fields["max_frame_bytes"])
    except (KeyError, TypeError, ValueError):
        raise ProtocolError(f"{where} sent a malformed hello") from None
    if fields.get("key_id") != auth.key_id(key):
        raise auth.AuthError(f"{where} holds another key (id {fields.get('key_id')}) than this --key-file "
                             f"(id {auth.key_id(key)}); copy the server's key file to this machine")
    return challenge, limit


def request(address: str | tuple[str, int], header: dict, blobs: dict[str, bytes] | None = None, *, key: bytes,
            timeout_s: float = 600.0, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[dict, dict[str, bytes], dict]:
    """Send one authenticated request and wait (at most ``timeout_s``) for its authenticated
    response: (result, blobs, transfer statistics). A refusal raises DeviceError with the
    server's message."""
    host, port = parse_address(address) if isinstance(address, str) else address
    where = f"{host}:{port}"
    start = time.perf_counter()
    deadline = time.monotonic() + timeout_s
    try:
        sock = socket.create_connection((host, port), timeout=min(timeout_s, 30.0))
    except OSError as err:
        raise ProtocolError(f"cannot connect to {where} ({err.strerror or err}); is `vdla serve` running "
                            "there?") from None
    with sock:
        greeting = receive_header(sock, Limits(0, idle_s=min(timeout_s, 30.0), deadline=deadline))
        challenge, limit = _challenge(greeting.fields, where, key)
        size = sum(len(d) for d in (blobs or {}).values())
        if size > limit:
            raise ProtocolError(f"the request holds {size} bytes, more than {where} accepts ({limit}); "
                                "start it with a larger --max-frame-mib")
        mine = auth.nonce()
        try:
            sent = send(sock, {**header, "nonce": mine.hex()}, blobs, key=key, label=auth.REQUEST, nonce=challenge)
        except OSError as err:
            raise ProtocolError(f"connection to {where} lost while sending ({err})") from None
        sent_at = time.perf_counter()
        limits = Limits(max_bytes, deadline=deadline)
        reply = receive_header(sock, limits, key=key, label=auth.RESPONSE, nonce=mine)
        if not reply.authentic:
            said = reply.fields.get("error", "no reason given") if isinstance(reply.fields, dict) else ""
            raise auth.AuthError(f"{where} answered without this key's authentication ({said})")
        out = receive_blobs(sock, reply, limits)
    stats = {"bytes_sent": sent, "send_seconds": sent_at - start, "total_seconds": time.perf_counter() - start}
    if not reply.fields.get("ok"):
        raise DeviceError(f"{where}: {reply.fields.get('error', 'the server gave no reason')}")
    return reply.fields.get("result", {}), out, stats
