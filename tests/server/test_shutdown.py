"""SIGTERM while streams are open: each ends with a last chunk and [DONE]
(finish_reason "abort" for those still running), and the process exits 0."""
import json
import re
import signal
import socket
import time

import pytest

from conftest import Server, slow_args

pytestmark = pytest.mark.timeout(120)


def open_stream(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    data = json.dumps({"prompt": "Once upon a time", "max_tokens": 480, "stream": True, "ignore_eos": True,
                       "temperature": 0}).encode()
    s.sendall(f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data)
    return s


def read_all(s):
    out = b""
    while not out.endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n"):
        try:
            part = s.recv(65536)
        except socket.timeout:
            break
        if not part:
            break
        out += part
    return out.decode(errors="replace")


def test_sigterm_ends_open_streams_and_exits_cleanly():
    args, slow = slow_args()
    server = Server(args, ["--max-batch", "2"])
    streams = [open_stream(server.port) for _ in range(4)]  # two run, two wait
    first = streams[0].recv(4096)  # headers: the server has taken it
    assert first.startswith(b"HTTP/1.1 200"), first[:200]
    time.sleep(0.5)
    server.proc.send_signal(signal.SIGTERM)
    started = time.time()
    outputs = [first.decode(errors="replace") + read_all(streams[0])] + [read_all(s) for s in streams[1:]]
    assert server.proc.wait(20) == 0, server.stderr()
    assert time.time() - started < 10
    finishes = []
    for out in outputs:
        assert out.startswith("HTTP/1.1 200"), out[:200]
        assert "data: [DONE]" in out, out[-300:]
        finishes.append(re.findall(r'"finish_reason":"(\w+)"', out))
    assert all(f in (["abort"], ["length"]) for f in finishes), finishes
    if slow:  # still running or waiting when the signal came
        assert all(f == ["abort"] for f in finishes), finishes
    # stories260K (no default model) may finish all four before the signal.
    server.stop()


def test_sigterm_during_a_long_embedding_request():
    """An encoder server: a request still queued after --shutdown-timeout is
    answered 503 (the pass running then completes first) and the process exits 0."""
    import http.client
    from conftest import minilm_dir
    server = Server(["-m", minilm_dir()], ["--shutdown-timeout", "1", "--embed-batch-tokens", "512"])
    body = json.dumps({"input": [f"sentence {i} " + "with many words in it " * 10 for i in range(1000)]})
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    conn.request("POST", "/v1/embeddings", body=body, headers={"Content-Type": "application/json"})
    time.sleep(1)
    server.proc.send_signal(signal.SIGTERM)
    started = time.time()
    r = conn.getresponse()
    payload = json.loads(r.read())
    assert r.status == 503, payload
    assert "shutting down" in payload["error"]["message"]
    assert server.proc.wait(20) == 0, server.stderr()
    assert time.time() - started < 15
    server.stop()
