"""`vdla serve` in a thread on an ephemeral loopback port, for the driver and fuzz tests."""

import contextlib
import threading

from driver.protocol import request

KEY = bytes(range(1, 33))  # the tests' shared key


@contextlib.contextmanager
def serving(config=None, *, backend: str = "sim", limits=None, device_options=None):
    """Yields (server, "127.0.0.1:PORT"); ``server.logs`` holds its log lines. Stops it after."""
    from vdla.deploy import serve

    stop, ready, box, logs = threading.Event(), threading.Event(), {}, []

    def on_ready(server):
        box["server"] = server
        ready.set()

    def run():
        try:
            serve(backend, config, "127.0.0.1", 0, key=KEY, stop=stop, ready=on_ready, log=logs.append,
                  limits=limits, device_options=device_options)
        finally:
            ready.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(60) and "server" in box, f"server did not start: {logs}"
    server = box["server"]
    server.logs = logs
    try:
        yield server, f"127.0.0.1:{server.address[1]}"
    finally:
        stop.set()
        thread.join(15)
        assert not thread.is_alive(), "server did not stop"


def ping(address, key=KEY, timeout_s=30):
    result, _, _ = request(address, {"op": "ping"}, key=key, timeout_s=timeout_s)
    return result


def greet(sock):
    """Read the server's hello on a fresh connection; returns its challenge."""
    from driver.protocol import Limits, receive_header

    hello = receive_header(sock, Limits(0, idle_s=10))
    return bytes.fromhex(hello.fields["challenge"])


def signed_head(header: dict, challenge: bytes, key: bytes = KEY, *, version: int | None = None,
                text: bytes | None = None) -> bytes:
    """Prefix and header of a request frame (``header`` with its own ``blobs`` list, or the raw
    header ``text``), MACed for ``challenge``: what a client sends before its blobs."""
    import hashlib
    import json

    from driver import auth
    from driver.protocol import MAGIC, PROTOCOL_VERSION, START

    text = json.dumps(header).encode() if text is None else text
    start = START.pack(MAGIC, PROTOCOL_VERSION if version is None else version, len(text),
                       hashlib.sha256(text).digest())
    return start + auth.mac(key, auth.REQUEST, challenge, start) + text


def answer(sock) -> dict:
    """The header of the server's response (not checked for authenticity)."""
    return answer_frame(sock)[1].fields


def answer_frame(sock):
    """(prefix, header) of the server's response, not checked for authenticity."""
    from driver.protocol import Limits, receive_header, receive_prefix

    limits = Limits(1 << 20, idle_s=30)
    prefix = receive_prefix(sock, limits)
    return prefix, receive_header(sock, limits, prefix)
