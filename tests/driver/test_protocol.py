"""The wire protocol: frames round-trip; dropped, truncated, corrupt and oversized transfers
end in one clear ProtocolError."""

import hashlib
import json
import socket
import threading

import numpy as np
import pytest

from driver import DeviceError
from driver.protocol import (MAGIC, PREFIX, PROTOCOL_VERSION, ProtocolError, array_bytes, bytes_array,
                             parse_address, receive, send)


def _pair():
    a, b = socket.socketpair()
    a.settimeout(5)
    b.settimeout(5)
    return a, b


def test_frames_round_trip_with_blobs():
    a, b = _pair()
    with a, b:
        blobs = {"x.npy": array_bytes(np.arange(12, dtype=np.int8).reshape(3, 4)), "empty": b""}
        threading.Thread(target=send, args=(a, {"op": "run", "n": 1}, blobs)).start()
        header, got = receive(b)
    assert header == {"op": "run", "n": 1}
    assert got.keys() == blobs.keys()
    np.testing.assert_array_equal(bytes_array(got["x.npy"], "x"), np.arange(12, dtype=np.int8).reshape(3, 4))


def _raw_frame(header: dict, payload: bytes) -> bytes:
    text = json.dumps(header).encode()
    return PREFIX.pack(MAGIC, PROTOCOL_VERSION, len(text)) + text + payload


def test_connection_dropped_mid_blob():
    a, b = _pair()
    with b:
        data = b"x" * 1000
        a.sendall(_raw_frame({"op": "run", "blobs": [{"name": "big", "size": 1000,
                                                        "sha256": hashlib.sha256(data).hexdigest()}]}, data[:10]))
        a.close()
        with pytest.raises(ProtocolError, match="connection closed after 10 of 1000 bytes of blob 'big'"):
            receive(b)


def test_corrupt_blob_is_caught_by_its_hash():
    a, b = _pair()
    with a, b:
        a.sendall(_raw_frame({"blobs": [{"name": "f", "size": 3, "sha256": hashlib.sha256(b"abc").hexdigest()}]},
                             b"abd"))
        with pytest.raises(ProtocolError, match="blob 'f': SHA-256 mismatch"):
            receive(b)


def test_oversized_frame_is_refused_before_reading():
    a, b = _pair()
    with a, b:
        a.sendall(_raw_frame({"blobs": [{"name": "f", "size": 10 ** 9, "sha256": "0"}]}, b""))
        with pytest.raises(ProtocolError, match="more than the 1000-byte limit"):
            receive(b, max_bytes=1000)


def test_not_a_vdla_peer_and_timeouts():
    a, b = _pair()
    with a, b:
        a.sendall(b"GET / HTTP/1.1\r\n\r\n")
        with pytest.raises(ProtocolError, match="not a vdla frame"):
            receive(b)
    a, b = _pair()
    with a, b:
        b.settimeout(0.2)
        with pytest.raises(ProtocolError, match="timed out receiving the frame prefix"):
            receive(b)


def test_board_address():
    assert parse_address("127.0.0.1:9091") == ("127.0.0.1", 9091)
    assert parse_address("[::1]:80") == ("::1", 80)
    for bad in ("pynq", "pynq:", "pynq:99999", ":80"):
        with pytest.raises(DeviceError, match="expected HOST:PORT"):
            parse_address(bad)


@pytest.mark.parametrize("header", [[1, 2], {"no": "blobs"}, {"blobs": [{"name": "x", "size": -1, "sha256": ""}]}])
def test_malformed_headers(header):
    a, b = _pair()
    with a, b:
        a.sendall(_raw_frame(header, b""))
        with pytest.raises(ProtocolError, match="malformed frame header"):
            receive(b)
