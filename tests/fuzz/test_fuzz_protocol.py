"""Fuzzing the wire protocol and a running `vdla serve`: damaged, truncated and random frames
to the receiver; random unauthenticated bytes, authenticated requests with random headers, ops
and blobs, and authenticated runs of damaged packages to a live server. The receiver ends in a
ProtocolError or exactly the frame that was sent; the server answers each with an error frame
(or an answer) and still answers a ping afterwards."""

import hashlib
import json
import socket
import threading
import time

import numpy as np
import pytest
from hypothesis import event, given, strategies as st

from compiler.network.package import npy_array
from driver.package import seal
from driver.protocol import (MAGIC, MAX_HEADER, NO_MAC, PROTOCOL_VERSION, START, Limits, ProtocolError, receive_blobs,
                             receive_header, request, send)
from tests.driver.serving import KEY, answer, answer_frame, greet, ping, serving, signed_head
from tests.fuzz.harness import FUZZ, outcome, time_limit
from vdla_sim.progen import random_program

JSON = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-(1 << 70), 1 << 70), st.text(max_size=8)),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                    max_leaves=8)
HEAD = MAGIC + PROTOCOL_VERSION.to_bytes(2, "little")  # a frame's magic and version
BLOBS = st.dictionaries(st.text(min_size=1, max_size=12), st.binary(max_size=300), max_size=3)


def frame_bytes(header: dict, blobs: dict) -> bytes:
    a, b = socket.socketpair()
    with a, b:
        b.settimeout(5)
        chunks = []
        sender = threading.Thread(target=lambda: (send(a, header, blobs), a.shutdown(socket.SHUT_WR)))
        sender.start()
        while data := b.recv(1 << 16):
            chunks.append(data)
        sender.join(5)
    return b"".join(chunks)


def receive_all(data: bytes):
    a, b = socket.socketpair()
    with a, b:
        a.sendall(data)
        a.shutdown(socket.SHUT_WR)
        limits = Limits(1 << 16, idle_s=1.0, deadline=time.monotonic() + 5)
        header = receive_header(b, limits)
        return header.fields, receive_blobs(b, header, limits)


@FUZZ
@given(header=st.dictionaries(st.text(max_size=6).filter(lambda k: k != "blobs"), JSON, max_size=4), blobs=BLOBS,
       edits=st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), max_size=6),
       cut=st.integers(0, 1 << 16))
def test_frames_to_the_receiver(header, blobs, edits, cut):
    data = bytearray(frame_bytes(header, blobs))
    for pos, value in edits:
        data[pos % len(data)] = value
    data = bytes(data[: len(data) - (cut % len(data) if cut % 3 == 0 else 0)])
    kind, value = outcome(receive_all, data, errors=(ProtocolError,))
    event(f"receive: {kind}")
    if kind == "ok" and data == frame_bytes(header, blobs):
        assert value == (json.loads(json.dumps(header)), blobs)


@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes_to_the_receiver(data):
    outcome(receive_all, data, errors=(ProtocolError,))


# --- a running server -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def server():
    with serving("tiny") as (srv, address):
        yield srv, address


def network_model() -> bytes:
    """A small network whose two 4-channel convolutions run on the accelerator (tiny)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    inits = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
             for name, shape in (("w1", (8, 4, 3, 3)), ("w2", (8, 8, 3, 3)), ("fc", (4, 8)))]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
             helper.make_node("GlobalAveragePool", ["c2"], ["p"], name="pool"),
             helper.make_node("Flatten", ["p"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "fc"], ["y"], name="fc", transB=1)]
    graph = helper.make_graph(nodes, "net", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    from vdla.deploy import build_package
    from vdla.network import prepare

    path = tmp_path_factory.mktemp("model") / "small.onnx"
    path.write_bytes(network_model())
    files = build_package(prepare(str(path), config="tiny"), model="net", arm_library=False,
                          progress=lambda m: None)
    assert sum(name.startswith("bundles/") for name in files) == 2
    return Files(files)


def still_serving(address):
    with time_limit(30):
        assert ping(address, timeout_s=20)["backend"] == "sim"


def exchange(srv, data: bytes) -> dict | None:
    """Send ``data`` after the hello; the server's answer header, or None when it closed."""
    with socket.create_connection(("127.0.0.1", srv.address[1]), timeout=20) as sock:
        challenge = greet(sock)
        try:
            sock.sendall(data(challenge) if callable(data) else data)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server answered early (a bad prefix) and closed: read what it said
        try:
            return answer(sock)
        except ProtocolError:
            return None


@FUZZ
@given(data=st.one_of(st.binary(max_size=120), st.builds(lambda h, t: HEAD + h + t,
                                                        st.binary(min_size=4, max_size=4), st.binary(max_size=80))))
def test_unauthenticated_bytes_to_a_server(server, data):
    srv, address = server
    reply = exchange(srv, data)
    event(f"answer: {None if reply is None else reply.get('ok')}")
    assert reply is None or reply["ok"] is False
    still_serving(address)


@FUZZ
@given(hlen=st.integers(0, MAX_HEADER), tag=st.binary(min_size=32, max_size=32), body=st.binary(max_size=300),
       header=st.one_of(st.none(), JSON))
def test_unsigned_requests_get_nothing_signed(server, hlen, tag, body, header):
    """A keyless client with a well-formed prefix (any header length up to the cap, any MAC)
    and any header bytes after it: the answer is an unsigned refusal, never MACed."""
    srv, address = server
    text = body if header is None else json.dumps({"op": "ping", "nonce": "ab" * 16, "x": header, "blobs": []}).encode()
    prefix = START.pack(MAGIC, PROTOCOL_VERSION, hlen, hashlib.sha256(text).digest()) + tag

    with socket.create_connection(("127.0.0.1", srv.address[1]), timeout=20) as sock:
        greet(sock)
        try:
            sock.sendall(prefix + text)
        except OSError:
            pass
        got, reply = answer_frame(sock)
    assert got.tag == NO_MAC and reply.fields["ok"] is False and "authentication failed" in reply.fields["error"]
    still_serving(address)


@FUZZ
@given(op=st.one_of(st.sampled_from(["ping", "status", "run", "nope"]), JSON),
       fields=st.dictionaries(st.text(max_size=6).filter(lambda k: k not in ("blobs", "op")), JSON, max_size=3),
       blobs=BLOBS, lie=st.integers(0, 4))
def test_authenticated_requests_with_random_headers(server, op, fields, blobs, lie):
    """Signed requests whose header, op and blob list are anything; ``lie`` makes the list
    disagree with the bytes that follow (size, hash, missing blob)."""
    srv, address = server
    listed = [{"name": n, "size": len(d), "sha256": hashlib.sha256(d).hexdigest()} for n, d in blobs.items()]
    payload = b"".join(blobs.values())
    if listed and lie == 1:
        listed[0]["size"] += 1
    elif listed and lie == 2:
        listed[0]["sha256"] = "0" * 64
    elif lie == 3:
        payload = payload[: len(payload) // 2]
    header = {"op": op, "nonce": "ab" * 16, **fields, "blobs": listed}
    reply = exchange(srv, lambda challenge: signed_head(header, challenge) + payload)
    event(f"answer: {None if reply is None else reply.get('ok')}")
    still_serving(address)


class Files(dict):
    """A package's files (short in hypothesis' reports)."""

    def __repr__(self) -> str:
        return f"<package: {', '.join(sorted(self))}>"


def reseal(files: dict) -> dict:
    """The files with a manifest whose sizes and hashes fit again (when there is one to keep)."""
    try:
        manifest = json.loads(files["manifest.json"])
        keep = {k: v for k, v in manifest.items() if k not in ("format", "version", "files")}
    except (KeyError, ValueError, AttributeError):
        return files
    return seal({n: d for n, d in files.items() if n != "manifest.json"}, **keep)


@st.composite
def damaged_package(draw, files):
    files = dict(files)
    names = sorted(files)
    kind = draw(st.sampled_from(["drop", "bytes", "json", "bundle", "manifest", "none"]))
    name = draw(st.sampled_from(names))
    if kind == "drop":
        files.pop(name)
    elif kind == "bytes":
        data = bytearray(files[name])
        for pos, value in draw(st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)), min_size=1,
                                        max_size=6)):
            if data:
                data[pos % len(data)] = value
        files[name] = bytes(data)
    elif kind == "json":
        target = draw(st.sampled_from(["graph.json", "placements.json", "manifest.json"]))
        text = files[target].decode()
        numbers = [k for k, ch in enumerate(text) if ch.isdigit()]
        for pos in draw(st.lists(st.sampled_from(numbers), min_size=1, max_size=3)):
            text = text[:pos] + draw(st.sampled_from(["0", "9", "99999", "-1", '"x"', "null"])) + text[pos + 1:]
        files[target] = text.encode()
    elif kind == "bundle":
        target = draw(st.sampled_from([n for n in names if n.startswith("bundles/")]))
        files[target] = random_program(draw(st.integers(0, 20)), "tiny").to_bytes()
    elif kind == "manifest":
        files["manifest.json"] = draw(st.sampled_from([b"{}", b"[]", b'{"files": 3}', b"\xff",
                                                       b'{"format": "vdla-package", "version": 1, "files": {}}']))
    event(f"damage: {kind}")
    return files if kind == "manifest" or draw(st.booleans()) else reseal(files)


@FUZZ
@given(data=st.data())
def test_authenticated_runs_of_damaged_packages(server, package, data):
    srv, address = server
    files = data.draw(damaged_package(package))
    try:
        result, blobs, _ = request(address, {"op": "run"}, files, key=KEY, timeout_s=60)
        event("run: ok")
        output = npy_array(blobs["output.npy"], "output.npy")
        assert result["output_sha256"] == hashlib.sha256(np.ascontiguousarray(output).tobytes()).hexdigest()
    except ProtocolError:
        raise
    except Exception as err:  # noqa: BLE001 - the server's one-line refusal comes back as a DeviceError
        from driver import DeviceError

        assert isinstance(err, DeviceError) and "\n" not in str(err), err
        assert "internal error" not in str(err), err
        event("run: refused")
    still_serving(address)


def test_the_undamaged_package_gives_the_local_output(server, package, tmp_path):
    """The fuzzed package, undamaged: the same output_sha256 as `vdla run` of the same model."""
    from vdla.network import run_network

    path = tmp_path / "small.onnx"
    path.write_bytes(network_model())
    _, address = server
    result, _, _ = request(address, {"op": "run"}, package, key=KEY, timeout_s=60)
    assert result["output_sha256"] == run_network(str(path), config="tiny").output_sha256
