"""SIGTERM while streams are open: each ends with finish_reason "abort" and
[DONE], new requests are refused, and the process exits 0."""
import json
import signal
import socket
import time

import pytest

from conftest import Server, stories_args

pytestmark = pytest.mark.timeout(60)


def open_stream(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    data = json.dumps({"prompt": "Once", "max_tokens": 480, "stream": True, "ignore_eos": True,
                       "temperature": 0}).encode()
    s.sendall(f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data)
    return s


def read_all(s):
    out = b""
    while True:
        try:
            part = s.recv(65536)
        except socket.timeout:
            break
        if not part:
            break
        out += part
        if out.endswith(b"data: [DONE]\n\n") or b"0\r\n\r\n" in out[-16:]:
            break
    return out.decode(errors="replace")


def test_sigterm_ends_open_streams_and_exits_cleanly():
    server = Server(stories_args(), ["--ctx", "512", "--max-batch", "4"])
    streams = [open_stream(server.port) for _ in range(4)]
    time.sleep(1.0)  # all four are generating
    server.proc.send_signal(signal.SIGTERM)
    started = time.time()
    outputs = [read_all(s) for s in streams]
    assert server.proc.wait(20) == 0, server.stderr()
    assert time.time() - started < 10
    for out in outputs:
        assert out.startswith("HTTP/1.1 200"), out[:200]
        assert '"finish_reason":"abort"' in out, out[-500:]
        assert "data: [DONE]" in out
    server.stop()
