"""The wire protocol: frames round-trip with their MAC; dropped, truncated, corrupt, stalled,
malformed and oversized transfers end in one clear ProtocolError."""

import hashlib
import json
import socket
import struct
import threading
import time

import numpy as np
import pytest

from compiler.network.package import npy_array, npy_bytes
from driver import DeviceError, auth
from driver.protocol import (MAGIC, NO_MAC, PROTOCOL_VERSION, START, Limits, ProtocolError, parse_address, receive,
                             receive_blobs, receive_header, receive_prefix, send)

KEY = bytes(range(32))


def _pair():
    a, b = socket.socketpair()
    a.settimeout(5)
    b.settimeout(5)
    return a, b


def test_frames_round_trip_with_blobs_and_mac():
    a, b = _pair()
    with a, b:
        blobs = {"x.npy": npy_bytes(np.arange(12, dtype=np.int8).reshape(3, 4)), "empty": b""}
        nonce = auth.nonce()
        threading.Thread(target=send, args=(a, {"op": "run", "n": 1}, blobs),
                         kwargs={"key": KEY, "label": auth.REQUEST, "context": nonce}).start()
        prefix = receive_prefix(b, Limits())
        assert prefix.verify(KEY, auth.REQUEST, nonce)
        header = receive_header(b, Limits(), prefix)
        got = receive_blobs(b, header, Limits())
    assert header.fields == {"op": "run", "n": 1}
    assert all(type(v) is bytes for v in got.values())  # received in place, handed out as bytes
    assert got.keys() == blobs.keys()
    np.testing.assert_array_equal(npy_array(got["x.npy"], "x"), np.arange(12, dtype=np.int8).reshape(3, 4))


@pytest.mark.parametrize("change", ["key", "label", "context"])
def test_the_mac_binds_key_direction_and_context(change):
    nonce = auth.nonce()
    a, b = _pair()
    with a, b:
        send(a, {"op": "ping"}, key=KEY, label=auth.REQUEST, context=nonce)
        other = {"key": KEY, "label": auth.REQUEST, "context": nonce}
        other[change] = {"key": bytes(32), "label": auth.RESPONSE, "context": auth.nonce()}[change]
        prefix = receive_prefix(b, Limits())
        assert prefix.verify(KEY, auth.REQUEST, nonce) and not prefix.verify(**other)


def test_the_mac_covers_the_header_through_its_hash():
    """The MAC is over the prefix only, which holds the header's SHA-256: a header changed in
    transit (its MAC still verifying) is caught by that hash."""
    a, b = _pair()
    with a, b:
        text = json.dumps({"op": "ping", "blobs": []}).encode()
        start = START.pack(MAGIC, PROTOCOL_VERSION, len(text), hashlib.sha256(text).digest())
        a.sendall(start + auth.mac(KEY, auth.REQUEST, b"c", start) + text.replace(b"ping", b"pong"))
        prefix = receive_prefix(b, Limits())
        assert prefix.verify(KEY, auth.REQUEST, b"c")
        with pytest.raises(ProtocolError, match="SHA-256 differs from the one in its prefix"):
            receive_header(b, Limits(), prefix)


def test_the_prefix_is_read_alone():
    """receive_prefix reads exactly the 74-byte prefix: the header stays unread in the socket
    (a server decides on the MAC before it reads a byte of it)."""
    a, b = _pair()
    with a, b:
        send(a, {"op": "ping", "x": "y" * 5000})
        prefix = receive_prefix(b, Limits())
        assert prefix.hlen > 5000 and not prefix.signed
        b.setblocking(False)
        assert len(b.recv(1 << 16)) == prefix.hlen  # all of the header is still there


def raw_frame(header, payload: bytes = b"", version: int = PROTOCOL_VERSION) -> bytes:
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return START.pack(MAGIC, version, len(text), hashlib.sha256(text).digest()) + NO_MAC + text + payload


def test_connection_dropped_mid_blob():
    a, b = _pair()
    with b:
        data = b"x" * 1000
        a.sendall(raw_frame({"op": "run", "blobs": [{"name": "big", "size": 1000,
                                                       "sha256": hashlib.sha256(data).hexdigest()}]}, data[:10]))
        a.close()
        with pytest.raises(ProtocolError, match="connection closed after 10 of 1000 bytes of blob 'big'"):
            receive(b)


def test_corrupt_blob_is_caught_by_its_hash():
    a, b = _pair()
    with a, b:
        a.sendall(raw_frame({"blobs": [{"name": "f", "size": 3, "sha256": hashlib.sha256(b"abc").hexdigest()}]},
                            b"abd"))
        with pytest.raises(ProtocolError, match="blob 'f': SHA-256 mismatch"):
            receive(b)


def test_oversized_frame_is_refused_before_reading():
    a, b = _pair()
    with a, b:
        a.sendall(raw_frame({"blobs": [{"name": "f", "size": 10 ** 9, "sha256": "0" * 64}]}))
        with pytest.raises(ProtocolError, match="more than the 1000-byte limit"):
            receive(b, Limits(max_bytes=1000))


def test_not_a_vdla_peer_old_version_and_timeouts():
    a, b = _pair()
    with a, b:
        a.sendall(b"GET / HTTP/1.1\r\n\r\n" + bytes(80))
        with pytest.raises(ProtocolError, match="not a vdla frame"):
            receive(b)
    a, b = _pair()
    with a, b:
        a.sendall(raw_frame({"blobs": []}, version=2))
        with pytest.raises(ProtocolError, match="protocol version 2, expected 3"):
            receive(b)
    a, b = _pair()
    with a, b:
        with pytest.raises(ProtocolError, match="stalled: nothing for 0.2 s"):
            receive(b, Limits(idle_s=0.2))


def test_a_dribbling_sender_meets_the_deadline():
    """One byte every 0.1 s never trips a 1 s idle timeout; the deadline still ends it."""
    a, b = _pair()
    frame = raw_frame({"op": "ping", "blobs": []})
    stop = threading.Event()

    def dribble():
        for byte in frame:
            if stop.wait(0.1):
                return
            a.send(bytes([byte]))

    threading.Thread(target=dribble, daemon=True).start()
    start = time.monotonic()
    with a, b:
        with pytest.raises(ProtocolError, match="did not arrive in time"):
            receive(b, Limits(idle_s=1.0, deadline=time.monotonic() + 0.8))
        stop.set()
    assert time.monotonic() - start < 3


def test_board_address():
    assert parse_address("127.0.0.1:9091") == ("127.0.0.1", 9091)
    assert parse_address("[::1]:80") == ("::1", 80)
    for bad in ("pynq", "pynq:", "pynq:99999", ":80"):
        with pytest.raises(DeviceError, match="expected HOST:PORT"):
            parse_address(bad)


@pytest.mark.parametrize("header, words", [
    ([1, 2], "a JSON list, not an object"),
    ({"no": "blobs"}, "no 'blobs' list"),
    ({"blobs": [{"name": "x", "size": -1, "sha256": "0" * 64}]}, "no non-negative integer 'size'"),
    ({"blobs": [{"size": 3, "sha256": "x"}]}, "blob 0 has no 'name'"),        # the 80-byte request of issue 11
    ({"blobs": [{"name": "x", "size": 3}]}, "blob 'x' has no 'sha256'"),
    ({"blobs": [{"name": "x", "size": "3", "sha256": "0" * 64}]}, "no non-negative integer 'size'"),
    ({"blobs": [{"name": "x", "size": 0, "sha256": "0" * 64}, {"name": "x", "size": 0, "sha256": "0" * 64}]},
     "repeated"),
    ({"blobs": ["x"]}, "blob 0 is not an object"),
    (b"\xff\xfe not json", "not JSON"),
    (b"[" * 60000, "not JSON"),  # nested too deeply, within the header cap
])
def test_malformed_headers(header, words):
    a, b = _pair()
    with a, b:
        a.sendall(raw_frame(header))
        with pytest.raises(ProtocolError, match="malformed frame header") as err:
            receive(b)
    assert words in str(err.value)


def _rss() -> int:
    import resource

    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize()


class _Source:
    """A socket stand-in that serves ``n`` zero bytes and records, at every recv_into, the
    process's resident memory and the address it writes to."""

    def __init__(self, n: int):
        self.n, self.pos, self.calls, self.zeros = n, 0, [], bytes(1 << 20)

    def settimeout(self, timeout):
        pass

    def recv_into(self, view, nbytes):
        self.calls.append((_rss(), np.frombuffer(view, np.uint8).ctypes.data))
        k = min(nbytes, len(view), self.n - self.pos, len(self.zeros))
        view[:k] = self.zeros[:k]
        self.pos += k
        return k


def test_a_blob_is_received_in_place_as_it_arrives():
    """Issue 22: a declared 127 MiB blob was allocated and zeroed before a byte arrived, then
    copied once more. Now memory grows as bytes arrive, and the bytes handed out are the buffer
    that was received into."""
    from driver.protocol import Header

    n = 192 << 20
    digest = hashlib.sha256()
    for _ in range(n >> 20):
        digest.update(bytes(1 << 20))
    source = _Source(n)
    header = Header({}, [{"name": "big", "size": n, "sha256": digest.hexdigest()}], b"")
    before = _rss()
    got = receive_blobs(source, header, Limits(max_bytes=n))["big"]
    first_rss, first_address = source.calls[0]
    assert first_rss - before < 32 << 20  # nothing was touched before the first byte arrived
    assert type(got) is bytes and len(got) == n
    assert np.frombuffer(got, np.uint8).ctypes.data == first_address  # no copy
