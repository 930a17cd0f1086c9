"""`vdla serve` on a network: the key file, authentication and replay, concurrency (idle and
dribbling clients never block others), the connection cap, frame and upload limits, device runs
serialised by a queue, one error frame per bad request, one log line per request."""

import json
import socket
import stat
import struct
import threading
import time

import pytest

from driver import auth
from driver.protocol import Limits, request
from driver.server import Server, ServerLimits
from tests.driver.serving import KEY, answer, greet, ping, serving, signed_head


# --- the key file --------------------------------------------------------------------------
def test_key_file_is_created_private_and_loaded(tmp_path):
    path = tmp_path / "cfg" / "vdla" / "serve.key"
    key, created = auth.server_key(path)
    assert created and len(key) == auth.KEY_BYTES
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert auth.server_key(path) == (key, False) and auth.load_key(path) == key


def test_unsafe_or_malformed_key_files_are_refused(tmp_path):
    path = tmp_path / "serve.key"
    auth.create_key(path)
    path.chmod(0o644)
    with pytest.raises(auth.AuthError, match="may be read by others .* chmod 600"):
        auth.load_key(path)
    path.chmod(0o600)
    path.write_text("not hex\n")
    with pytest.raises(auth.AuthError, match="does not hold a key"):
        auth.load_key(path)
    with pytest.raises(auth.AuthError, match="no key file .* start `vdla serve` once"):
        auth.load_key(tmp_path / "missing.key")


def test_default_key_file_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert auth.default_key_file() == tmp_path / "vdla" / "serve.key"


# --- a server with test handlers -------------------------------------------------------------
class Recorder:
    """Test handlers: ``run`` sleeps ``seconds`` and records how many runs overlapped."""

    def __init__(self, seconds=0.3):
        self.seconds, self.active, self.most, self.lock = seconds, 0, 0, threading.Lock()

    def run(self, header, blobs):
        with self.lock:
            self.active += 1
            self.most = max(self.most, self.active)
        time.sleep(self.seconds)
        with self.lock:
            self.active -= 1
        return {"sizes": {k: len(v) for k, v in blobs.items()}}, {}

    def ping(self, header, blobs):
        return {"pong": True}, {}

    def bug(self, header, blobs):
        return {}["missing"]


@pytest.fixture
def test_server():
    servers = []

    def start(limits=ServerLimits(), recorder=None):
        rec = recorder or Recorder()
        logs = []
        server = Server({"ping": rec.ping, "run": rec.run, "bug": rec.bug}, "127.0.0.1", 0, key=KEY,
                        limits=limits, log=logs.append, poll_s=0.05)
        stop = threading.Event()
        thread = threading.Thread(target=server.serve, args=(stop,), daemon=True)
        thread.start()
        servers.append((stop, thread))
        server.logs, server.recorder = logs, rec
        return server, f"127.0.0.1:{server.address[1]}"

    yield start
    for stop, thread in servers:
        stop.set()
        thread.join(10)
        assert not thread.is_alive()


def connect(server):
    return socket.create_connection(("127.0.0.1", server.address[1]), timeout=10)


def wait_for_log(server, words, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [line for line in server.logs if words in line]
        if found:
            return found[-1]
        time.sleep(0.02)
    raise AssertionError(f"no log line with {words!r}: {server.logs}")


def test_authenticated_requests_are_answered_and_logged(test_server):
    server, address = test_server()
    assert ping(address) == {"pong": True}
    result, _, _ = request(address, {"op": "run"}, {"a": b"12345"}, key=KEY)
    assert result == {"sizes": {"a": 5}}
    line = wait_for_log(server, " run ok ")
    assert line.startswith("127.0.0.1:") and line.endswith("in 5 B out 0 B") and " s in " in line
    status, _, _ = request(address, {"op": "status"}, key=KEY)
    assert status["requests"] >= 2 and status["rss_bytes"] > 0 and status["limits"]["max_connections"] == 64


def test_a_client_with_another_key_is_refused(test_server):
    _, address = test_server()
    with pytest.raises(auth.AuthError, match="holds another key .* copy the server's key file"):
        request(address, {"op": "ping"}, key=bytes(32))


def test_an_unauthenticated_request_is_refused_before_its_blobs_are_read(test_server):
    server, _ = test_server()
    header = {"op": "run", "nonce": "00" * 16, "blobs": [{"name": "a", "size": 1 << 20, "sha256": "0" * 64}]}
    with connect(server) as sock:
        sock.sendall(signed_head(header, greet(sock), key=bytes(32)))  # the wrong key, and no blobs follow
        reply = answer(sock)
    assert reply["ok"] is False and "authentication failed" in reply["error"]
    assert "in 0 B" in wait_for_log(server, "authentication failed")


def test_a_recorded_request_cannot_be_replayed(test_server):
    server, address = test_server()
    with connect(server) as sock:
        frame = signed_head({"op": "ping", "nonce": "11" * 16, "blobs": []}, greet(sock))
        sock.sendall(frame)
        assert answer(sock)["ok"] is True
    with connect(server) as sock:
        greet(sock)  # a fresh challenge
        sock.sendall(frame)
        reply = answer(sock)
    assert reply["ok"] is False and "authentication failed" in reply["error"]
    assert ping(address) == {"pong": True}


def test_a_forged_answer_is_refused_by_the_client():
    """A man in the middle (here: a fake server without the key) cannot make `vdla deploy`
    accept an answer: responses are MACed over the client's nonce."""
    from driver.protocol import hello, send

    listener = socket.create_server(("127.0.0.1", 0))

    def fake():
        conn, _ = listener.accept()
        with conn:
            send(conn, hello(bytes(32), KEY, 1000))  # replays the real server's public hello
            conn.recv(1 << 16)
            send(conn, {"ok": True, "result": {"output_sha256": "forged"}})

    threading.Thread(target=fake, daemon=True).start()
    with listener:
        with pytest.raises(auth.AuthError, match="answered without this key's authentication"):
            request(f"127.0.0.1:{listener.getsockname()[1]}", {"op": "ping"}, key=KEY, timeout_s=10)


def test_idle_and_dribbling_clients_do_not_block_others(test_server):
    """The issue's repro: a socket that sent b'VDL' and waits, and one sending a byte every
    0.2 s, while other clients ping; then the server drops both (idle timeout, header deadline)."""
    server, address = test_server(ServerLimits(idle_timeout_s=1.0, header_deadline_s=2.0))
    idle, dribbler = connect(server), connect(server)
    stop = threading.Event()

    def dribble():
        greet(dribbler)
        for byte in b"VDLA\x02\x00":
            if stop.wait(0.2):
                return
            dribbler.send(bytes([byte]))

    idle.sendall(b"VDL")
    threading.Thread(target=dribble, daemon=True).start()
    try:
        for _ in range(3):
            assert ping(address, timeout_s=5) == {"pong": True}
        assert "stalled: nothing for 1 s" in wait_for_log(server, "stalled")
        assert "did not arrive in time" in wait_for_log(server, "did not arrive in time")
    finally:
        stop.set()
        idle.close()
        dribbler.close()


def test_the_connection_cap_turns_clients_away_at_once(test_server):
    server, address = test_server(ServerLimits(max_connections=3, idle_timeout_s=1.0, header_deadline_s=1.0))
    held = [connect(server) for _ in range(3)]
    try:
        time.sleep(0.2)
        with connect(server) as sock:
            reply = answer(sock)
        assert reply["ok"] is False and "server busy: 3 connections open" in reply["error"]
        wait_for_log(server, "timed out receiving the frame prefix")  # the held sockets time out ...
        assert ping(address) == {"pong": True}  # ... and the server is free again
    finally:
        for sock in held:
            sock.close()


def test_frames_beyond_the_limit_are_refused_before_reading(test_server):
    server, address = test_server(ServerLimits(max_frame_bytes=1000, max_pending_bytes=1000))
    with pytest.raises(Exception, match="more than 127.0.0.1:.* accepts \\(1000\\)"):
        request(address, {"op": "run"}, {"a": bytes(2000)}, key=KEY)
    header = {"op": "run", "nonce": "00" * 16, "blobs": [{"name": "a", "size": 500 << 20, "sha256": "0" * 64}]}
    with connect(server) as sock:  # a client that ignores the advertised limit: a 500 MiB ping frame
        sock.sendall(signed_head(header, greet(sock)))
        reply = answer(sock)
    assert reply["ok"] is False and "more than the 1000-byte limit" in reply["error"]
    assert ping(address) == {"pong": True}


def test_uploads_held_at_once_are_bounded(test_server):
    server, address = test_server(ServerLimits(max_frame_bytes=1000, max_pending_bytes=1500))
    header = {"op": "run", "nonce": "00" * 16, "blobs": [{"name": "a", "size": 1000, "sha256": "0" * 64}]}
    with connect(server) as first:
        first.sendall(signed_head(header, greet(first)) + bytes(10))  # holds 1000 bytes, still uploading
        time.sleep(0.2)
        with pytest.raises(Exception, match="server busy: 1000 bytes of other uploads held"):
            request(address, {"op": "run"}, {"b": bytes(800)}, key=KEY)
        assert ping(address) == {"pong": True}
    result, _, _ = request(address, {"op": "run"}, {"b": bytes(800)}, key=KEY)
    assert result == {"sizes": {"b": 800}}


def test_device_runs_are_serialised_and_queued_runs_bounded(test_server):
    server, address = test_server(ServerLimits(max_queued_runs=2), Recorder(seconds=0.4))
    results = []

    def run():
        try:
            results.append(request(address, {"op": "run"}, {"x": b"1"}, key=KEY, timeout_s=30)[0])
        except Exception as err:  # noqa: BLE001 - the refusal is what some of them get
            results.append(str(err))

    threads = [threading.Thread(target=run) for _ in range(5)]
    for t in threads:
        t.start()
        time.sleep(0.05)
    started = time.monotonic()
    assert ping(address, timeout_s=5) == {"pong": True}  # answered while the device is busy
    ping_seconds = time.monotonic() - started
    for t in threads:
        t.join(30)
    assert server.recorder.most == 1
    done = [r for r in results if isinstance(r, dict)]
    busy = [r for r in results if isinstance(r, str) and "runs wait for the device" in r]
    assert len(done) >= 3 and len(done) + len(busy) == 5, results
    assert ping_seconds < 0.4  # a ping does not wait for the device's 0.4 s runs


@pytest.mark.parametrize("raw, words", [
    # the 80-byte request of issue 11 (protocol 1, a blob without "name"): KeyError killed the server
    (lambda: (lambda h: struct.pack("<4sHI", b"VDLA", 1, len(h)) + h + b"abc")(
        json.dumps({"op": "run", "blobs": [{"size": 3, "sha256": "x"}]}).encode()), "protocol version 1, expected 2"),
    (lambda: struct.pack("<4sHI32s", b"VDLA", 2, 9, bytes(32)) + b'{"op": 1}', "no 'blobs' list"),
    (lambda: struct.pack("<4sHI32s", b"VDLA", 2, 1 << 30, bytes(32)), "exceeds"),
    (lambda: b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + bytes(40), "not a vdla frame"),
])
def test_malformed_frames_get_an_error_frame_and_the_server_keeps_serving(test_server, raw, words):
    server, address = test_server()
    with connect(server) as sock:
        greet(sock)
        sock.sendall(raw())
        reply = answer(sock)
    assert reply["ok"] is False and words in reply["error"]
    assert ping(address) == {"pong": True}


def test_unknown_ops_missing_ops_and_handler_bugs_are_errors(test_server):
    server, address = test_server()
    for header, words in (({"op": "format"}, "unknown op 'format'"), ({}, "unknown op '-'"),
                          ({"op": "bug"}, "internal error (KeyError: 'missing' at")):
        with pytest.raises(Exception, match=words.replace("(", "\\(")):
            request(address, header, key=KEY)
    assert ping(address) == {"pong": True}
    assert "at " in wait_for_log(server, " bug error: internal error (KeyError")
    assert len([line for line in server.logs if " error: " in line]) == 3


def test_the_sim_server_survives_the_80_byte_request():
    """The same repro against the real `vdla serve` (sim device)."""
    with serving() as (server, address):
        header = json.dumps({"op": "run", "blobs": [{"size": 3, "sha256": "x"}]}).encode()
        with socket.create_connection(("127.0.0.1", server.address[1]), timeout=10) as sock:
            greet(sock)
            sock.sendall(struct.pack("<4sHI32s", b"VDLA", 2, len(header), bytes(32)) + header + b"abc")
            reply = answer(sock)
        assert reply["ok"] is False and "blob 0 has no 'name'" in reply["error"]
        assert ping(address)["backend"] == "sim"
