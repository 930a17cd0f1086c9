"""`vdla serve` on a network: the key file, authentication and replay, concurrency (idle and
dribbling clients never block others), the connection cap, frame and upload limits, device runs
serialised by a queue, one error frame per bad request, one log line per request."""

import gc
import json
import os
import socket
import stat
import struct
import threading
import time

import pytest

from driver import DeviceError, auth
from driver.protocol import MAX_HEADER, NO_MAC, PROTOCOL_VERSION, START, ServerBusy, request
from driver.server import Server, ServerLimits
from tests.driver.serving import KEY, answer, answer_frame, greet, ping, serving, signed_head


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
    """Test handlers: ``run`` takes ``seconds`` in steps of 20 ms, checking its RunControl
    between steps like the executor between ops, and records how many runs overlapped and how
    many started."""

    def __init__(self, seconds=0.3):
        self.seconds, self.active, self.most, self.started, self.lock = seconds, 0, 0, 0, threading.Lock()

    def run(self, header, blobs, control):
        with self.lock:
            self.active += 1
            self.started += 1
            self.most = max(self.most, self.active)
        try:
            end = time.monotonic() + self.seconds
            while time.monotonic() < end:
                control.check("in the test handler")
                time.sleep(0.02)
        finally:
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
        prefix, reply = answer_frame(sock)
    assert reply.fields["ok"] is False and "authentication failed" in reply.fields["error"]
    assert prefix.tag == NO_MAC  # nothing is signed for a client that has not proved the key
    assert "in 0 B" in wait_for_log(server, "authentication failed")


def test_an_unauthenticated_header_is_never_read(test_server):
    """Issue 22's repro: keyless clients sent 1 MiB headers of empty lists with a zero MAC,
    which the server read and parsed (40 MB -> 858 MB with 64 of them). Now the 74-byte
    prefix is checked first: a zero MAC is refused before a byte of the header is read (the
    header is not even all sent here), and a header over the cap is refused by its length."""
    server, address = test_server(ServerLimits(idle_timeout_s=5.0, header_deadline_s=5.0))
    text = b'{"op":"ping","nonce":"00","blobs":[],"x":[' + b"[]," * 20000 + b"[]]}"
    for hlen, words in ((len(text), "authentication failed"), (1 << 20, "exceeds")):
        with connect(server) as sock:
            greet(sock)
            sock.sendall(START.pack(b"VDLA", PROTOCOL_VERSION, hlen, bytes(32)) + NO_MAC + text[:1000])
            prefix, reply = answer_frame(sock)  # answered although most of the header never came
        assert reply.fields["ok"] is False and words in reply.fields["error"] and not prefix.signed
    assert len(text) <= MAX_HEADER
    assert ping(address) == {"pong": True}


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
        with pytest.raises(auth.AuthError, match="answered without this key's authentication .* not confirmed"):
            request(f"127.0.0.1:{listener.getsockname()[1]}", {"op": "ping"}, key=KEY, timeout_s=10)


class MiddleMan:
    """A machine in the middle between a client and the real server: it relays the hello and
    the request, lets ``swap(server_answer_bytes, client_request_bytes)`` choose what the
    client gets, and records every answer it saw."""

    def __init__(self, server, swap=lambda answer, request: answer):
        self.server, self.swap, self.answers = server, swap, []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self.relay, daemon=True).start()

    def relay(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with client, connect(self.server) as upstream:
                client.sendall(read_frame(upstream))          # the hello
                request_bytes = read_frame(client, with_blobs=True)
                upstream.sendall(request_bytes)
                real = read_frame(upstream, with_blobs=True)
                self.answers.append(real)
                client.sendall(self.swap(real, request_bytes))

    def close(self):
        self.listener.close()


def read_frame(sock, with_blobs=False) -> bytes:
    """The raw bytes of one frame (prefix, header and, optionally, its blobs)."""
    import json

    from driver.protocol import PREFIX_BYTES

    def exactly(n):
        out = b""
        while len(out) < n:
            out += sock.recv(n - len(out))
        return out

    prefix = exactly(PREFIX_BYTES)
    text = exactly(START.unpack_from(prefix)[2])
    blobs = sum(b["size"] for b in json.loads(text)["blobs"]) if with_blobs else 0
    return prefix + text + exactly(blobs)


def test_a_refusal_signed_for_another_request_is_rejected(test_server):
    """Issue 22: a machine in the middle forwards a real run and hands the client a refusal
    the server signed for another request (here: a key holder's earlier request with an
    unknown op). The run did execute; the client must not report the refusal as the server's."""
    server, _ = test_server()
    recorded = {}

    def swap(answer, request_bytes):
        if "refusal" not in recorded:
            recorded["refusal"] = answer  # the first exchange: a real, signed refusal
            return answer
        return recorded["refusal"]

    mitm = MiddleMan(server, swap)
    try:
        with pytest.raises(DeviceError, match="unknown op 'format'"):
            request(mitm.address, {"op": "format"}, key=KEY, timeout_s=10)
        with pytest.raises(auth.AuthError, match="not bound to this request"):
            request(mitm.address, {"op": "run"}, {"x": b"1"}, key=KEY, timeout_s=10)
    finally:
        mitm.close()
    assert server.recorder.started == 1  # the run did execute at the server
    assert b'"ok": true' in mitm.answers[-1]


def test_a_man_in_the_middle_gets_nothing_signed_to_forge_a_refusal(test_server):
    """The issue's attack: forward the client's run, and meanwhile send the server an
    unauthenticated request carrying the client's nonce, to obtain a server-signed
    "authentication failed" for that nonce. The server signs nothing for it, and the client
    reports the unsigned refusal it is handed as unconfirmed, not as the server's word."""
    import json

    server, _ = test_server()
    seen = {}

    def swap(answer, request_bytes):
        from driver.protocol import PREFIX_BYTES

        text = request_bytes[PREFIX_BYTES:PREFIX_BYTES + START.unpack_from(request_bytes)[2]]
        nonce = json.loads(text)["nonce"]
        with connect(server) as sock:
            challenge = greet(sock)
            sock.sendall(signed_head({"op": "run", "nonce": nonce, "blobs": []}, challenge, key=bytes(32)))
            forged = read_frame(sock)
        seen["forged"] = forged
        return forged

    mitm = MiddleMan(server, swap)
    try:
        with pytest.raises(auth.AuthError, match="answered without this key's authentication .*authentication "
                                                 "failed.* not the server's word and the request is not confirmed"):
            request(mitm.address, {"op": "run"}, {"x": b"1"}, key=KEY, timeout_s=10)
    finally:
        mitm.close()
    assert seen["forged"][START.size:START.size + 32] == NO_MAC
    assert server.recorder.started == 1


def test_idle_and_dribbling_clients_do_not_block_others(test_server):
    """The issue's repro: a socket that sent b'VDL' and waits, and one sending a byte every
    0.2 s, while other clients ping; then the server drops both (idle timeout, header deadline)."""
    server, address = test_server(ServerLimits(idle_timeout_s=1.0, header_deadline_s=2.0))
    idle, dribbler = connect(server), connect(server)
    stop = threading.Event()

    def dribble():
        greet(dribbler)
        for byte in b"VDLA" + struct.pack("<H", PROTOCOL_VERSION) + bytes(14):
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
        assert reply["hello"] == "vdla serve" and reply["busy"] == "3 connections open"
        with pytest.raises(ServerBusy, match=r"127\.0\.0\.1:\d+: server busy: 3 connections open \(retry later\)"):
            request(address, {"op": "ping"}, key=KEY, timeout_s=5)  # said clearly, not "did not greet"
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
    # the server releases the first upload's bytes when it sees that connection close, on its
    # own thread: wait for that before the next upload (asking at once raced with it)
    deadline = time.monotonic() + 10
    while server.pending and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.pending == 0
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
    (lambda c: (lambda h: struct.pack("<4sHI", b"VDLA", 1, len(h)) + h + b"abc")(
        json.dumps({"op": "run", "blobs": [{"size": 3, "sha256": "x"}]}).encode()), "protocol version 1, expected 3"),
    (lambda c: signed_head({}, c, version=2), "protocol version 2, expected 3"),
    (lambda c: START.pack(b"VDLA", 3, 9, bytes(32)) + NO_MAC + b'{"op": 1}', "authentication failed"),
    (lambda c: START.pack(b"VDLA", 3, 1 << 30, bytes(32)) + NO_MAC, "exceeds"),
    (lambda c: b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + bytes(80), "not a vdla frame"),
    # signed with the key, so the header is read, and then checked:
    (lambda c: signed_head({"op": 1}, c), "no 'blobs' list"),
    (lambda c: signed_head({}, c, text=b"[" * 50000), "not JSON"),
    (lambda c: signed_head({"op": "ping", "blobs": []}, c)[:-3] + b"xx}", "SHA-256 differs from the one in its prefix"),
])
def test_malformed_frames_get_an_error_frame_and_the_server_keeps_serving(test_server, raw, words):
    server, address = test_server()
    with connect(server) as sock:
        sock.sendall(raw(greet(sock)))
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
        header = {"op": "run", "nonce": "00" * 16, "blobs": [{"size": 3, "sha256": "x"}]}
        with socket.create_connection(("127.0.0.1", server.address[1]), timeout=10) as sock:
            sock.sendall(signed_head(header, greet(sock)) + b"abc")  # signed: its blob list is checked
            reply = answer(sock)
        assert reply["ok"] is False and "blob 0 has no 'name'" in reply["error"]
        assert ping(address)["backend"] == "sim"


# --- run deadline, cancel, busy with the expected wait ---------------------------------------
def test_a_run_past_its_deadline_is_stopped_and_reported(test_server):
    server, address = test_server(ServerLimits(run_timeout_s=0.3), Recorder(seconds=30))
    with pytest.raises(DeviceError, match=r"run stopped in the test handler: it passed the server's run deadline "
                                          r"of 0\.3 s \(vdla serve --run-timeout\)$"):
        request(address, {"op": "run"}, {"x": b"1"}, key=KEY, timeout_s=20)
    assert ping(address) == {"pong": True}
    assert server.running is None and server.recorder.active == 0
    assert " run error: run stopped" in wait_for_log(server, "run deadline")


def test_a_run_whose_client_went_away_is_cancelled(test_server):
    server, address = test_server(recorder=Recorder(seconds=30))
    with connect(server) as sock:
        sock.sendall(signed_head({"op": "run", "nonce": "22" * 16, "blobs": []}, greet(sock)))
        deadline = time.monotonic() + 10
        while server.recorder.started == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
    assert "its client went away" in wait_for_log(server, "client went away")
    assert ping(address) == {"pong": True} and server.recorder.active == 0


def test_a_full_queue_answers_busy_with_the_expected_wait(test_server):
    server, address = test_server(ServerLimits(max_queued_runs=1), Recorder(seconds=0.6))
    request(address, {"op": "run"}, key=KEY, timeout_s=20)  # one run done: its time makes the estimate
    threads = [threading.Thread(target=request, args=(address, {"op": "run"}), kwargs={"key": KEY, "timeout_s": 20})
               for _ in range(2)]
    # one runs, then one waits in the queue: started one after the other, so that the second is
    # never turned away while the first still sits in the queue
    for t, ready in zip(threads, (lambda: server.running, lambda: server.running and server.jobs.qsize() == 1)):
        t.start()
        deadline = time.monotonic() + 10
        while not ready() and time.monotonic() < deadline:
            time.sleep(0.01)
    with pytest.raises(ServerBusy, match=r"server busy: 1 runs wait for the device; expected wait \d+ s \(mean of "
                                         r"the last 1 runs\); retry later") as err:
        request(address, {"op": "run"}, key=KEY, timeout_s=20)
    assert 0.0 < err.value.retry_after_s <= 1.2 + 0.6
    for t in threads:
        t.join(20)


def test_six_long_runs_leave_pings_answered(test_server):
    """Issue 22: 6 long runs made everybody else "server busy". Runs queue (or are refused as
    busy, with a wait), pings are answered meanwhile."""
    server, address = test_server(recorder=Recorder(seconds=0.5))
    outcomes = []

    def run():
        try:
            request(address, {"op": "run"}, {"x": bytes(1000)}, key=KEY, timeout_s=30)
            outcomes.append("ok")
        except ServerBusy:
            outcomes.append("busy")

    threads = [threading.Thread(target=run) for _ in range(6)]
    for t in threads:
        t.start()
    for _ in range(10):
        assert ping(address, timeout_s=5) == {"pong": True}
    for t in threads:
        t.join(30)
    assert sorted(outcomes) == ["busy"] * (6 - outcomes.count("ok")) + ["ok"] * outcomes.count("ok")
    assert outcomes.count("ok") >= 5 and server.recorder.most == 1


# --- what the network sends is escaped -------------------------------------------------------
def test_control_characters_from_the_network_are_escaped_in_the_log(test_server):
    server, address = test_server()
    with pytest.raises(DeviceError) as err:
        request(address, {"op": "\x1b[31mred\x07"}, key=KEY)
    assert "\x1b" not in str(err.value) and "\\x1b[31mred\\x07" in str(err.value)
    line = wait_for_log(server, "red")
    assert "\x1b" not in line and "\x07" not in line and "\\x1b[31mred" in line


def test_control_characters_in_a_servers_answer_are_escaped_by_the_client():
    """A server (here a fake one with the key) whose refusal carries terminal escapes: the
    client's one-line error has them escaped."""
    from driver.protocol import Limits, hello, receive_header, receive_prefix, response_context, send

    listener = socket.create_server(("127.0.0.1", 0))

    def fake():
        conn, _ = listener.accept()
        with conn:
            challenge = auth.nonce() + auth.nonce()
            send(conn, hello(challenge, KEY, 1000))
            limits = Limits(1000, idle_s=10)
            prefix = receive_prefix(conn, limits)
            header = receive_header(conn, limits, prefix)
            context = response_context(challenge, bytes.fromhex(header.fields["nonce"]), header.digest)
            send(conn, {"ok": False, "error": "bad\x1b]0;owned\x07\nline"}, key=KEY, label=auth.RESPONSE,
                 context=context)

    threading.Thread(target=fake, daemon=True).start()
    with listener:
        with pytest.raises(DeviceError) as err:
            request(f"127.0.0.1:{listener.getsockname()[1]}", {"op": "ping"}, key=KEY, timeout_s=10)
    assert str(err.value).endswith(": bad\\x1b]0;owned\\x07\\nline")


# --- the key file's owner, folder and kind ---------------------------------------------------
def test_a_symlinked_key_file_is_refused(tmp_path):
    real = tmp_path / "real.key"
    auth.create_key(real)
    link = tmp_path / "serve.key"
    link.symlink_to(real)
    with pytest.raises(auth.AuthError, match="is a symbolic link; give the file itself"):
        auth.load_key(link)
    with pytest.raises(auth.AuthError, match="is a symbolic link"):
        auth.server_key(link)


def test_a_key_in_a_folder_others_may_write_is_refused(tmp_path):
    folder = tmp_path / "open"
    folder.mkdir()
    auth.create_key(folder / "serve.key")
    folder.chmod(0o777)
    try:
        with pytest.raises(auth.AuthError, match=r"its folder .*open may be written by others \(mode 0777\); run: "
                                                 "chmod go-w"):
            auth.load_key(folder / "serve.key")
        with pytest.raises(auth.AuthError, match="may be written by others"):
            auth.server_key(folder / "new.key")  # nor is a new key created there
        assert not (folder / "new.key").exists()
    finally:
        folder.chmod(0o700)


def test_a_key_file_of_another_user_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "serve.key"
    auth.create_key(path)
    me = os.getuid()
    monkeypatch.setattr(auth.os, "getuid", lambda: me + 1)  # the file (and folder) now belong to "another user"
    with pytest.raises(auth.AuthError, match=rf"belongs to another user \(uid {me}, this is uid {me + 1}\)"):
        auth.load_key(path)


def test_connections_without_the_key_get_no_thread(test_server):
    """Before its prefix proves the key a connection lives in the lobby (the accept thread's
    selector): 20 of them, half-way through their prefix, add no thread to the server."""
    server, address = test_server(ServerLimits(idle_timeout_s=5.0, header_deadline_s=5.0))
    assert ping(address) == {"pong": True}

    def connection_threads():   # the server's per-request threads (target Server._connection)
        return [t for t in threading.enumerate() if t.name.endswith("(_connection)")]
    assert threading.Thread(target=server._connection).name.endswith("(_connection)")  # how Python names them
    deadline = time.monotonic() + 10.0
    while connection_threads() and time.monotonic() < deadline:   # the ping's, ending (slow under load)
        time.sleep(0.01)
    assert not connection_threads()
    held = [connect(server) for _ in range(20)]
    try:
        for sock in held:
            greet(sock)
            sock.sendall(START.pack(b"VDLA", PROTOCOL_VERSION, 100, bytes(32))[:20])
        status, _, _ = request(address, {"op": "status"}, key=KEY)
        assert status["connections"] == 21  # the 20 and this request
        assert len(connection_threads()) <= 1  # at most this request's own thread, not one per connection
    finally:
        for sock in held:
            sock.close()


def _rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_a_refused_runs_blobs_are_freed_at_once(test_server):
    """The exception of a refused run (and of a transfer cut short) kept the frames that held
    its blobs in reference cycles: 127 MiB stayed resident per refused run until the garbage
    collector ran (290 -> 417 MiB after two). Now they are freed when the request ends; the
    collector is off here, so only that can free them."""
    from vdla_hw.errors import VdlaError

    class Refusing(Recorder):
        def run(self, header, blobs, control):
            try:
                {}["manifest.json"]
            except KeyError:
                raise VdlaError("not a package") from None

    server, address = test_server(recorder=Refusing())
    data = os.urandom(64 << 20)
    gc.collect()
    gc.disable()
    try:
        before = _rss()
        for _ in range(2):
            with pytest.raises(DeviceError, match="not a package"):
                request(address, {"op": "run"}, {"big": data}, key=KEY, timeout_s=60)
        header = {"op": "run", "nonce": "33" * 16, "blobs": [{"name": "big", "size": len(data), "sha256": "0" * 64}]}
        with connect(server) as sock:  # cut short after 48 MiB
            sock.sendall(signed_head(header, greet(sock)) + data[:48 << 20])
        wait_for_log(server, "connection closed after")
        deadline = time.monotonic() + 10
        while server.open and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _rss() - before < 32 << 20
    finally:
        gc.enable()


def test_a_client_still_sending_reads_the_refusal(test_server):
    """The server refuses an authenticated upload it has no room for before reading it; the
    client, still sending its 48 MiB, reads that refusal (not "connection lost")."""
    server, address = test_server(ServerLimits(max_frame_bytes=96 << 20, max_pending_bytes=100 << 20))
    header = {"op": "run", "nonce": "00" * 16, "blobs": [{"name": "a", "size": 64 << 20, "sha256": "0" * 64}]}
    with connect(server) as first:
        first.sendall(signed_head(header, greet(first)) + bytes(10))  # holds 64 MiB, still uploading
        time.sleep(0.2)
        with pytest.raises(ServerBusy, match="server busy: 67108864 bytes of other uploads held"):
            request(address, {"op": "run"}, {"b": bytes(48 << 20)}, key=KEY, timeout_s=30)


@pytest.fixture
def high_socketpair():
    """A connected socket pair whose server side has a descriptor number above 1023 (``os.dup2``
    onto a high number, the soft RLIMIT_NOFILE raised to the hard one if needed); both closed after."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    high = 1100
    if hard != resource.RLIM_INFINITY and hard <= high:
        pytest.skip(f"RLIMIT_NOFILE hard limit {hard} leaves no descriptor above 1023")
    if soft != resource.RLIM_INFINITY and soft <= high:
        resource.setrlimit(resource.RLIMIT_NOFILE, (high + 1, hard))
    a, b = socket.socketpair()
    while True:  # a free number above 1023 (another test may hold one)
        try:
            os.fstat(high)
            high += 1
        except OSError:
            break
    os.dup2(a.fileno(), high)
    a.close()
    conn = socket.socket(fileno=high)
    try:
        yield conn, b
    finally:
        conn.close()
        b.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_client_is_not_taken_for_gone_when_its_descriptor_is_above_1023(high_socketpair):
    """Issue 45 finding 5: the server checked for a closed client with ``select.select``, which
    raises ValueError for a descriptor >= 1024, taken as 'client gone': with ~1,100 idle
    connections open, runs were cancelled. ``_gone`` now polls: a live client (idle, or with bytes
    waiting) is not gone; a closed one is."""
    from driver.server import _gone

    conn, peer = high_socketpair
    assert conn.fileno() > 1023
    assert not _gone(conn)
    peer.send(b"x")
    assert not _gone(conn)
    assert conn.recv(1) == b"x"
    peer.close()
    assert _gone(conn)
