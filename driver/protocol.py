"""The wire protocol of ``vdla serve`` / ``vdla deploy``: authenticated, length-prefixed frames
over TCP (docs/driver.md has the tables).

One frame::

    magic   4 bytes   b"VDLA"
    version u16 LE    PROTOCOL_VERSION
    hlen    u32 LE    bytes of the header (at most MAX_HEADER)
    hsha    32 bytes  SHA-256 of the header
    mac     32 bytes  HMAC-SHA256 (driver.auth) of a label, a context and magic..hsha; zeros in
                      the server's hello and in its refusals of unauthenticated requests
    header  hlen      UTF-8 JSON object; its "blobs" lists {"name", "size", "sha256"} in order
    blobs             the blobs' bytes, back to back, exactly as listed

The first 74 bytes (the *prefix*) have a fixed size and carry the header's hash, so the MAC is
checked before a byte of the header is read: a request that does not prove the key costs the
server those 74 bytes and nothing else (its header is never read, let alone parsed).

A connection carries one exchange: the server sends a *hello* (``{"hello": "vdla serve",
"protocol", "challenge", "key_id", "max_frame_bytes"}``, a fresh 32-byte challenge; or, at the
connection cap, ``{"hello": "vdla serve", "busy": "one line"}``); the client sends one request
(``op``, its own ``nonce``, the op's fields), MACed over the challenge; the server answers
(``ok`` true with ``result``, or false with ``error``: one line for people, and ``busy`` with
``retry_after_s`` when it is busy), MACed over the challenge, the request's nonce and the
request's digest (SHA-256 of its prefix and header, which list every blob's SHA-256). So an
answer verifies only for the request it answers, on its connection. The server never MACs
anything for a client that has not proved the key: its refusal of an unauthenticated request
is unsigned, and the client reports such an answer as unconfirmed, never as the server's word.

The receiver checks magic, version and header size, the MAC (where one is expected) before it
reads the header, the header's hash, the blob list's types and sizes against its limit before
reading any blob, and every blob's SHA-256 (computed as the bytes arrive). A blob is received in
place into the ``bytes`` object that is handed out (no copy; its pages are faulted in as bytes
arrive, not allocated up front). Every read has an idle timeout and a deadline. Standard library
only (board-side code).
"""

from __future__ import annotations

import hashlib
import io
import math
import re
import socket
import struct
import time
from dataclasses import dataclass

from driver import auth
from driver.device import DeviceError
from vdla_hw.errors import VdlaError
from vdla_hw.files import json_loads, json_text, printable
from vdla_hw.limits import MAX_DRAM_BYTES

MAGIC = b"VDLA"
PROTOCOL_VERSION = 3  # 3: header hash in the prefix (MAC before the header), answers bound to the request
START = struct.Struct("<4sHI32s")  # magic, version, header length, header SHA-256: what the MAC covers
PREFIX_BYTES = START.size + auth.MAC_BYTES  # 74: all a server reads before the MAC verifies
MAX_HEADER = 64 << 10  # a header: op, nonce and the blob list of a package of several hundred files
DEFAULT_MAX_BYTES = MAX_DRAM_BYTES  # a package is at most one device image's worth of bytes
CHUNK = 1 << 20
NO_MAC = bytes(auth.MAC_BYTES)
MAX_MESSAGE = 2000  # characters of an error line in a frame
_SHA256 = re.compile(r"[0-9a-f]{64}")


class ProtocolError(DeviceError):
    """A frame could not be received or did not check out (connection, size, hash, format)."""


class ServerBusy(DeviceError):
    """The server turned the request away for now (connections, uploads held or queued runs);
    ``retry_after_s`` is its estimate of the wait (None: unknown)."""

    def __init__(self, message: str, retry_after_s: float | None = None):
        super().__init__(message)
        self.retry_after_s = retry_after_s


@dataclass
class Limits:
    """How long and how much one receive may take: ``idle_s`` without a byte, everything by
    ``deadline`` (a ``time.monotonic()`` value), at most ``max_bytes`` of blobs."""

    max_bytes: int = DEFAULT_MAX_BYTES
    idle_s: float | None = None
    deadline: float | None = None


@dataclass(frozen=True)
class Prefix:
    """The fixed-size start of a frame: ``start`` (magic..header SHA-256, what the MAC covers),
    the header's length and SHA-256, and the MAC ``tag``."""

    start: bytes
    hlen: int
    header_sha256: bytes
    tag: bytes

    def verify(self, key: bytes, label: bytes, context: bytes) -> bool:
        """Whether the MAC was made with ``key`` for ``label`` and ``context``."""
        return auth.verify(key, label, context, self.start, self.tag)

    @property
    def signed(self) -> bool:
        return self.tag != NO_MAC


@dataclass
class Header:
    """A received frame header: the JSON object, its blob list, and its ``digest`` (SHA-256 of
    the frame's prefix and header: what an answer to this frame is bound to)."""

    fields: dict
    blobs: list[dict]
    digest: bytes

    @property
    def size(self) -> int:
        return sum(b["size"] for b in self.blobs)


@dataclass(frozen=True)
class Sent:
    """A sent frame: its bytes on the wire and its digest (see :class:`Header`)."""

    nbytes: int
    digest: bytes


def frame_head(header: dict, blobs: dict[str, bytes] | None = None, *, key: bytes | None = None,
               label: bytes = b"", context: bytes = b"") -> bytes:
    """The prefix and header of a frame listing ``blobs``, MACed with ``key`` over ``label`` and
    ``context`` (unsigned without a key). The header is strict JSON (NaN, infinities: null)."""
    listed = [{"name": name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
              for name, data in (blobs or {}).items()]
    text = json_text({**header, "blobs": listed}).encode()
    if len(text) > MAX_HEADER:
        raise ProtocolError(f"frame header of {len(text)} bytes exceeds {MAX_HEADER}")
    start = START.pack(MAGIC, PROTOCOL_VERSION, len(text), hashlib.sha256(text).digest())
    tag = auth.mac(key, label, context, start) if key is not None else NO_MAC
    return start + tag + text


def send_blobs(sock: socket.socket, blobs: dict[str, bytes] | None) -> None:
    for data in (blobs or {}).values():
        view = memoryview(data)
        for offset in range(0, len(view), CHUNK):
            sock.sendall(view[offset:offset + CHUNK])


def send(sock: socket.socket, header: dict, blobs: dict[str, bytes] | None = None, *, key: bytes | None = None,
         label: bytes = b"", context: bytes = b"") -> Sent:
    """Send one frame (see :func:`frame_head`); its size and digest."""
    head = frame_head(header, blobs, key=key, label=label, context=context)
    sock.sendall(head)
    send_blobs(sock, blobs)
    return Sent(len(head) + sum(len(d) for d in (blobs or {}).values()), hashlib.sha256(head).digest())


def _fill(sock: socket.socket, view: memoryview, what: str, limits: Limits, hasher=None) -> None:
    """Fill ``view`` from the socket, each recv bounded by the idle timeout and the deadline;
    ``hasher`` (a hashlib object) sees the bytes as they arrive."""
    n, got = len(view), 0
    while got < n:
        wait = limits.idle_s if limits.idle_s is not None else math.inf
        if limits.deadline is not None:
            left = limits.deadline - time.monotonic()
            if left <= 0:
                raise ProtocolError(f"{what} did not arrive in time ({got} of {n} bytes)")
            wait = min(wait, left)
        sock.settimeout(None if wait == math.inf else wait)
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
        if hasher is not None:
            hasher.update(view[got:got + k])
        got += k


def _receive_bytes(sock: socket.socket, n: int, what: str, limits: Limits, hasher=None) -> bytes:
    """``n`` bytes from the socket as one ``bytes`` object, received in place: ``bytes(n)`` is
    calloc'd (its pages are the kernel's zero pages until written, so memory grows as bytes
    arrive, not when the size is announced), ``BytesIO`` takes it without a copy while nobody
    else refers to it, its ``getbuffer()`` is written by ``recv_into``, and ``getvalue()`` hands
    the same object back (CPython shares the buffer when no view is left)."""
    if n == 0:
        return b""
    buffer = io.BytesIO(bytes(n))
    with buffer.getbuffer() as view:
        _fill(sock, view, what, limits, hasher)
    return buffer.getvalue()


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


def check_start(raw: bytes) -> None:
    """The first 6 bytes of a frame: its magic and version (an old peer's frame may be shorter
    than a prefix, so these are checked as soon as they are there)."""
    magic, version = struct.unpack_from("<4sH", raw)
    if magic != MAGIC:
        raise ProtocolError(f"not a vdla frame (magic {magic!r}); is the other side `vdla serve`?")
    if version != PROTOCOL_VERSION:
        raise ProtocolError(f"protocol version {version}, expected {PROTOCOL_VERSION}; update vdla on both sides")


def parse_prefix(raw: bytes) -> Prefix:
    """The prefix in the PREFIX_BYTES bytes ``raw``, checked (magic, version, header length)."""
    check_start(raw)
    _, _, hlen, sha = START.unpack_from(raw)
    if hlen > MAX_HEADER:
        raise ProtocolError(f"frame header of {hlen} bytes exceeds {MAX_HEADER}")
    return Prefix(bytes(raw[:START.size]), hlen, sha, bytes(raw[START.size:PREFIX_BYTES]))


def receive_prefix(sock: socket.socket, limits: Limits) -> Prefix:
    """The fixed-size prefix of one frame (74 bytes), its magic, version and header length
    checked. Nothing of the header is read: check the MAC (:meth:`Prefix.verify`) first."""
    raw = bytearray(PREFIX_BYTES)
    with memoryview(raw) as view:
        _fill(sock, view[:6], "the frame prefix", limits)
        check_start(raw)
        _fill(sock, view[6:], "the frame prefix", limits)
    return parse_prefix(raw)


def receive_header(sock: socket.socket, limits: Limits, prefix: Prefix | None = None) -> Header:
    """The header of one frame (after ``prefix``, or reading the prefix first without any MAC
    check): its SHA-256 checked against the prefix, parsed, its blob list checked."""
    prefix = prefix or receive_prefix(sock, limits)
    text = _receive_bytes(sock, prefix.hlen, "the frame header", limits)
    if hashlib.sha256(text).digest() != prefix.header_sha256:
        raise ProtocolError("frame header: its SHA-256 differs from the one in its prefix; the transfer is corrupt")
    try:
        fields = json_loads(text, "frame header")
    except VdlaError as err:
        raise ProtocolError(f"malformed frame header: not JSON ({err})") from None
    return Header(fields, _blob_list(fields, limits.max_bytes),
                  hashlib.sha256(prefix.start + prefix.tag + text).digest())


def receive_blobs(sock: socket.socket, header: Header, limits: Limits) -> dict[str, bytes]:
    blobs = {}
    for b in header.blobs:
        hasher = hashlib.sha256()
        data = _receive_bytes(sock, b["size"], f"blob {b['name']!r}", limits, hasher)
        if hasher.hexdigest() != b["sha256"]:
            raise ProtocolError(f"blob {b['name']!r}: SHA-256 mismatch, the transfer is corrupt")
        blobs[b["name"]] = data
    return blobs


def receive(sock: socket.socket, limits: Limits | None = None) -> tuple[dict, dict[str, bytes]]:
    """One frame without authentication: (header, {blob name: bytes}), every size and hash checked."""
    limits = limits or Limits()
    header = receive_header(sock, limits)
    return header.fields, receive_blobs(sock, header, limits)


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` -> (host, port), with a clear error."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise DeviceError(f"--board {printable(text, 200)!r}: expected HOST:PORT, e.g. pynq:9091 or 127.0.0.1:9091")
    return host.strip("[]"), int(port)


def hello(challenge: bytes, key: bytes, max_frame_bytes: int, key_id: str | None = None) -> dict:
    """The header of the server's first frame (``key_id``: ``auth.key_id(key)``, if known)."""
    return {"hello": "vdla serve", "protocol": PROTOCOL_VERSION, "challenge": challenge.hex(),
            "key_id": key_id or auth.key_id(key), "max_frame_bytes": max_frame_bytes}


def busy_hello(message: str) -> dict:
    """The server's first and only frame when it turns a connection away (connection cap)."""
    return {"hello": "vdla serve", "protocol": PROTOCOL_VERSION, "busy": message}


def _challenge(fields: dict, where: str, key: bytes) -> tuple[bytes, int]:
    if not isinstance(fields, dict) or fields.get("hello") != "vdla serve":
        raise ProtocolError(f"{where} did not greet like `vdla serve` (is it one, of this version?)")
    if "busy" in fields:
        raise ServerBusy(f"{where}: server busy: {printable(fields['busy'], 300)} (retry later)")
    try:
        challenge = bytes.fromhex(fields["challenge"])
        limit = int(fields["max_frame_bytes"])
        if len(challenge) != 2 * auth.NONCE_BYTES:
            raise ValueError("challenge size")
    except (KeyError, TypeError, ValueError):
        raise ProtocolError(f"{where} sent a malformed hello") from None
    if fields.get("key_id") != auth.key_id(key):
        raise auth.AuthError(f"{where} holds another key (id {printable(fields.get('key_id'), 40)}) than this "
                             f"--key-file (id {auth.key_id(key)}); copy the server's key file to this machine")
    return challenge, limit


def response_context(challenge: bytes, nonce: bytes, request_digest: bytes) -> bytes:
    """What a response's MAC is made over besides its own prefix: the connection's challenge,
    the request's nonce and the request's digest (all fixed-size, so the joint is unambiguous)."""
    return challenge + nonce + request_digest


def _unconfirmed(sock: socket.socket, prefix: Prefix, where: str, deadline: float) -> auth.AuthError:
    """The error for an answer that is not bound to this request. An unsigned one is read (a
    small header, no blobs) only to quote it: it is anybody's word, not the server's."""
    if prefix.signed:
        return auth.AuthError(f"{where} answered with a response not bound to this request (its MAC does not "
                              "verify for this key, connection and request): rejected; the request's outcome is "
                              "unknown")
    said = "nothing readable"
    try:
        fields = receive_header(sock, Limits(0, idle_s=5.0, deadline=deadline), prefix).fields
        said = repr(printable(fields.get("error", "an unsigned answer"), 300))
    except ProtocolError:
        pass
    return auth.AuthError(f"{where} answered without this key's authentication (it said {said}); that is not "
                          "the server's word and the request is not confirmed: check --key-file, and the "
                          "network between here and the server")


def request(address: str | tuple[str, int], header: dict, blobs: dict[str, bytes] | None = None, *, key: bytes,
            timeout_s: float = 600.0, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[dict, dict[str, bytes], dict]:
    """Send one authenticated request and wait (at most ``timeout_s``) for the response bound to
    it: (result, blobs, transfer statistics). A refusal raises DeviceError with the server's
    message (ServerBusy when it is busy); an answer not bound to this request raises AuthError."""
    host, port = parse_address(address) if isinstance(address, str) else address
    where = printable(f"{host}:{port}", 300)
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
        head = frame_head({**header, "nonce": mine.hex()}, blobs, key=key, label=auth.REQUEST, context=challenge)
        lost = None
        try:
            sock.sendall(head)
            send_blobs(sock, blobs)
        except OSError as err:  # the server may have refused before reading it all: read why, below
            lost = err
        sent_at = time.perf_counter()
        limits = Limits(max_bytes, deadline=deadline if lost is None else min(deadline, time.monotonic() + 5.0))
        try:
            prefix = receive_prefix(sock, limits)
        except ProtocolError:
            if lost is None:
                raise
            raise ProtocolError(f"connection to {where} lost while sending ({lost})") from None
        context = response_context(challenge, mine, hashlib.sha256(head).digest())
        if not prefix.verify(key, auth.RESPONSE, context):
            raise _unconfirmed(sock, prefix, where, deadline)
        reply = receive_header(sock, limits, prefix)
        out = receive_blobs(sock, reply, limits)
    stats = {"bytes_sent": len(head) + size, "send_seconds": sent_at - start, "total_seconds": time.perf_counter() - start}
    if not reply.fields.get("ok"):
        message = f"{where}: {printable(reply.fields.get('error', 'the server gave no reason'), MAX_MESSAGE)}"
        busy = reply.fields.get("busy")
        if isinstance(busy, dict):
            wait = busy.get("retry_after_s")
            raise ServerBusy(message, float(wait) if isinstance(wait, (int, float)) and not isinstance(wait, bool)
                             else None)
        raise DeviceError(message)
    return reply.fields.get("result", {}), out, stats
