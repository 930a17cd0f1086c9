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
from driver.protocol import (MAGIC, NO_MAC, PROTOCOL_VERSION, Limits, ProtocolError, parse_address, receive,
                             receive_header, send)

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
                         kwargs={"key": KEY, "label": auth.REQUEST, "nonce": nonce}).start()
        header = receive_header(b, Limits(), key=KEY, label=auth.REQUEST, nonce=nonce)
        from driver.protocol import receive_blobs
        got = receive_blobs(b, header, Limits())
    assert header.fields == {"op": "run", "n": 1} and header.authentic
    assert got.keys() == blobs.keys()
    np.testing.assert_array_equal(npy_array(got["x.npy"], "x"), np.arange(12, dtype=np.int8).reshape(3, 4))


@pytest.mark.parametrize("change", ["key", "label", "nonce"])
def test_the_mac_binds_key_direction_and_nonce(change):
    nonce = auth.nonce()
    a, b = _pair()
    with a, b:
        send(a, {"op": "ping"}, key=KEY, label=auth.REQUEST, nonce=nonce)
        other = {"key": KEY, "label": auth.REQUEST, "nonce": nonce}
        other[change] = {"key": bytes(32), "label": auth.RESPONSE, "nonce": auth.nonce()}[change]
        assert not receive_header(b, Limits(), **other).authentic


def raw_frame(header, payload: bytes = b"", version: int = PROTOCOL_VERSION) -> bytes:
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<4sHI", MAGIC, version, len(text)) + NO_MAC + text + payload


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
        a.sendall(b"GET / HTTP/1.1\r\n\r\n" + bytes(40))
        with pytest.raises(ProtocolError, match="not a vdla frame"):
            receive(b)
    a, b = _pair()
    with a, b:
        a.sendall(raw_frame({"blobs": []}, version=1))
        with pytest.raises(ProtocolError, match="protocol version 1, expected 2"):
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
    (b"[" * 100000, "not JSON"),
])
def test_malformed_headers(header, words):
    a, b = _pair()
    with a, b:
        a.sendall(raw_frame(header))
        with pytest.raises(ProtocolError, match="malformed frame header") as err:
            receive(b)
    assert words in str(err.value)
