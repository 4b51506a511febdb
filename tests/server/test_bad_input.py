"""Malformed and hostile requests, sent raw (http.client and sockets, so no
client library tidies them): each gets an OpenAI-style error with the right
status, or the connection closes; after every one a valid request still works."""
import http.client
import json
import socket
import time

import pytest

pytestmark = pytest.mark.timeout(180)

OK_BODY = {"prompt": "Once upon a time", "max_tokens": 4, "temperature": 0}


def post(server, path, body, headers=None, method="POST"):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
    conn.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
    r = conn.getresponse()
    payload = r.read()
    conn.close()
    return r.status, payload, dict(r.getheaders())


def assert_error(status, payload, want_status, param=None):
    assert status == want_status, payload[:300]
    err = json.loads(payload)["error"]
    assert err["message"] and err["type"]
    if param is not None:
        assert err["param"] == param, err


def still_serves(server):
    status, payload, _ = post(server, "/v1/completions", OK_BODY)
    assert status == 200, payload
    assert json.loads(payload)["usage"]["completion_tokens"] == 4


C = "/v1/completions"
CHAT = "/v1/chat/completions"
CASES = [
    ("broken JSON", C, b"{", 400, None),
    ("a list", C, b"[]", 400, None),
    ("a string", C, b'"x"', 400, None),
    ("empty body", C, b"", 400, None),
    ("deep nesting", C, b"[" * 100000 + b"]" * 100000, 400, None),
    ("nested objects in content", CHAT, {"messages": [{"role": "user", "content": {"a": {"b": {"c": 1}}}}]}, 400, "content"),
    ("invalid UTF-8", C, b'{"prompt": "\xff\xfe\xfd"}', 400, None),
    ("lone surrogate", C, b'{"prompt": "\\ud800"}', 400, None),
    ("temperature a string", C, {"prompt": "a", "temperature": "hot"}, 400, "temperature"),
    ("negative temperature", C, {"prompt": "a", "temperature": -1}, 400, "temperature"),
    ("huge temperature", C, b'{"prompt": "a", "temperature": 1e309}', 400, None),
    ("top_p 0", C, {"prompt": "a", "top_p": 0}, 400, "top_p"),
    ("negative top_k", C, {"prompt": "a", "top_k": -5}, 400, "top_k"),
    ("a million tokens", C, {"prompt": "a", "max_tokens": 1000000}, 400, "max_tokens"),
    ("negative max_tokens", C, {"prompt": "a", "max_tokens": -1}, 400, "max_tokens"),
    ("fractional max_tokens", C, {"prompt": "a", "max_tokens": 1.5}, 400, "max_tokens"),
    ("seed 2^64", C, b'{"prompt": "a", "seed": 18446744073709551616}', 400, None),
    ("no messages", CHAT, {"messages": []}, 400, "messages"),
    ("unknown role", CHAT, {"messages": [{"role": "wizard", "content": "x"}]}, 400, "role"),
    ("message without content", CHAT, {"messages": [{"role": "user"}]}, 400, "messages"),
    ("empty prompt list", C, {"prompt": []}, 400, "prompt"),
    ("token outside the vocabulary", C, {"prompt": [999999]}, 400, "prompt"),
    ("prompt longer than the context", C, {"prompt": "Once upon a time " * 400}, 400, "prompt"),
    ("n 2", C, {"prompt": "a", "n": 2}, 400, "n"),
    ("presence penalty", C, {"prompt": "a", "presence_penalty": 0.5}, 400, "presence_penalty"),
    ("five stops", C, {"prompt": "a", "stop": ["a", "b", "c", "d", "e"]}, 400, "stop"),
    ("empty stop", C, {"prompt": "a", "stop": ""}, 400, "stop"),
    ("unknown field", C, {"prompt": "a", "frobnicate": 1}, 400, "frobnicate"),
    ("stream a string", C, {"prompt": "a", "stream": "yes"}, 400, "stream"),
    ("unknown model", C, {"prompt": "a", "model": "gpt-9"}, 404, "model"),
]


@pytest.mark.parametrize("name,path,body,status,param", CASES, ids=[c[0] for c in CASES])
def test_bad_request(stories, name, path, body, status, param):
    got, payload, _ = post(stories, path, body)
    assert_error(got, payload, status, param)
    still_serves(stories)


def test_unknown_paths_and_methods(stories):
    status, payload, _ = post(stories, "/v1/nope", None, method="GET")
    assert_error(status, payload, 404)
    status, payload, headers = post(stories, "/v1/completions", None, method="GET")
    assert_error(status, payload, 405)
    assert headers["Allow"] == "POST"
    status, payload, _ = post(stories, "/v1/models", None, method="DELETE")
    assert_error(status, payload, 405)
    still_serves(stories)


def assert_ten_megabytes_refused(server, path):
    """A body announced as 10 MB is answered 413 after its first 64 KB."""
    s = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    size = 10 * 1024 * 1024
    s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              f"Content-Length: {size}\r\n\r\n".encode() + b" " * 65536)
    reply = s.recv(65536).decode(errors="replace")
    s.close()
    assert reply.startswith("HTTP/1.1 413"), reply[:200]


def test_a_ten_megabyte_body_is_refused(stories):
    assert_ten_megabytes_refused(stories, "/v1/completions")
    still_serves(stories)


def raw(server, data, wait=5):
    s = socket.create_connection(("127.0.0.1", server.port), timeout=wait)
    s.sendall(data)
    try:
        reply = s.recv(65536)
    except (socket.timeout, ConnectionResetError):
        reply = b""
    s.close()
    return reply.decode(errors="replace")


def test_garbage_request_lines_and_huge_headers(stories):
    for data in [b"FOO / HTTP/1.1\r\n\r\n", b"\x00\x01\x02garbage\r\n\r\n",
                 b"GET /health HTTP/1.1\r\nX: " + b"a" * 20000 + b"\r\n\r\n"]:
        reply = raw(stories, data)
        assert reply == "" or reply.startswith("HTTP/1.1 4"), reply[:200]
    still_serves(stories)


def test_a_slow_sender_is_dropped_and_others_are_served(stories):
    body = json.dumps(OK_BODY).encode()
    s = socket.create_connection(("127.0.0.1", stories.port), timeout=30)
    s.sendall(f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode()
              + body[: len(body) // 2])
    for _ in range(3):
        still_serves(stories)  # while the half-sent request waits
    s.close()


def test_slowloris_does_not_block_valid_requests(stories):
    s = socket.create_connection(("127.0.0.1", stories.port), timeout=30)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
    for i in range(5):
        s.sendall(b"X-Slow: 1\r\n")
        still_serves(stories)
        time.sleep(0.5)
    s.close()


def stream_request(server, body):
    s = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    data = json.dumps(body).encode()
    s.sendall(f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
    return s


def wait_idle(server, timeout=5):
    import urllib.request
    deadline = time.time() + timeout
    while time.time() < deadline:
        with urllib.request.urlopen(server.base_url + "/metrics") as m:
            text = m.read().decode()
        running = [line for line in text.splitlines() if line.startswith("flashsvd_requests_running ")]
        waiting = [line for line in text.splitlines() if line.startswith("flashsvd_requests_waiting ")]
        if running == ["flashsvd_requests_running 0"] and waiting == ["flashsvd_requests_waiting 0"]:
            return True
        time.sleep(0.1)
    return False


def test_a_client_that_disconnects_mid_stream_frees_its_sequence():
    from conftest import Server, slow_args
    args, slow = slow_args()
    server = Server(args)
    try:
        s = stream_request(server, {"prompt": "Once", "max_tokens": 400, "stream": True, "ignore_eos": True})
        assert s.recv(4096).startswith(b"HTTP/1.1 200")
        s.close()
        assert wait_idle(server, timeout=10 if slow else 5)
        time.sleep(0.3)
        if slow:  # it had hundreds of tokens to go
            assert "finish=cancelled" in server.stderr()
        status, payload, _ = post(server, "/v1/completions", OK_BODY)
        assert status == 200
    finally:
        assert server.stop() == 0


def test_a_client_that_stops_reading_is_cancelled(client_for):
    from conftest import Server, stories_args
    server = Server(stories_args(), ["--write-timeout", "2", "--ctx", "512"])
    try:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", server.port))
        # 128 choices of 400 tokens with 20 alternatives each: far more than socket buffers hold
        data = json.dumps({"prompt": ["Once"] * 128, "max_tokens": 400, "stream": True, "ignore_eos": True,
                           "logprobs": 20}).encode()
        s.sendall(f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data)
        # Never read: the blocked write times out (2 s) and the request is cancelled.
        deadline = time.time() + 60
        while "finish=cancelled" not in server.stderr() and time.time() < deadline:
            time.sleep(0.2)
        assert "finish=cancelled" in server.stderr()
        assert wait_idle(server, timeout=10)
        s.close()
        status, payload, _ = post(server, "/v1/completions", OK_BODY)
        assert status == 200
    finally:
        assert server.stop() == 0


def test_api_key_and_a_full_queue():
    from conftest import Server, stories_args
    import concurrent.futures
    server = Server(stories_args(), ["--api-key", "sekret", "--max-batch", "1", "--max-queue", "1"])
    try:
        status, payload, _ = post(server, "/v1/completions", OK_BODY)
        assert_error(status, payload, 401)
        status, payload, _ = post(server, "/v1/completions", OK_BODY, {"Authorization": "Bearer wrong"})
        assert_error(status, payload, 401)
        status, payload, _ = post(server, "/health", None, method="GET")
        assert status == 200
        auth = {"Authorization": "Bearer sekret"}
        long = {"prompt": "Once", "max_tokens": 400, "ignore_eos": True, "temperature": 0}
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            futures = [pool.submit(post, server, "/v1/completions", long, auth) for _ in range(4)]
            started = time.time()
            statuses = sorted(f.result()[0] for f in futures)
        assert statuses.count(429) >= 1 and statuses.count(200) >= 2, statuses
        assert time.time() - started < 120
        status, _, headers = post(server, "/v1/completions", OK_BODY, auth)
        assert status == 200
    finally:
        assert server.stop() == 0


# The encoder server (/v1/embeddings): the same treatment.
E = "/v1/embeddings"
EMBEDDING_CASES = [
    ("broken JSON", E, b"{", 400, None),
    ("a list", E, b"[]", 400, None),
    ("empty body", E, b"", 400, None),
    ("deep nesting", E, b"[" * 100000 + b"]" * 100000, 400, None),
    ("invalid UTF-8", E, b'{"input": "\xff\xfe\xfd"}', 400, None),
    ("lone surrogate", E, b'{"input": "\\ud800"}', 400, None),
    ("no input", E, {"model": "minilm"}, 400, "input"),
    ("input null", E, {"input": None}, 400, "input"),
    ("empty string", E, {"input": ""}, 400, "input"),
    ("an empty string in a list", E, {"input": ["a", ""]}, 400, "input"),
    ("empty list", E, {"input": []}, 400, "input"),
    ("empty token list", E, {"input": [[101, 102], []]}, 400, "input"),
    ("input an object", E, {"input": {"text": "a"}}, 400, "input"),
    ("input a number", E, {"input": 7}, 400, "input"),
    ("nested lists", E, {"input": [[[101]]]}, 400, "input"),
    ("token outside the vocabulary", E, {"input": [101, 999999, 102]}, 400, "input"),
    ("negative token", E, {"input": [[-1]]}, 400, "input"),
    ("fractional token", E, {"input": [1.5]}, 400, "input"),
    ("token 2^64", E, b'{"input": [18446744073709551616]}', 400, "input"),
    ("more token ids than the model takes", E, {"input": [1000] * 257}, 400, "input"),
    ("2049 inputs", E, {"input": ["a"] * 2049}, 400, "input"),
    ("encoding_format int8", E, {"input": "a", "encoding_format": "int8"}, 400, "encoding_format"),
    ("other dimensions", E, {"input": "a", "dimensions": 100}, 400, "dimensions"),
    ("dimensions a string", E, {"input": "a", "dimensions": "384"}, 400, "dimensions"),
    ("user a number", E, {"input": "a", "user": 5}, 400, "user"),
    ("unknown field", E, {"input": "a", "truncate": True}, 400, "truncate"),
    ("unknown model", E, {"input": "a", "model": "gpt-9"}, 404, "model"),
    ("completions on an encoder", C, OK_BODY, 404, "model"),
    ("chat on an encoder", CHAT, {"messages": [{"role": "user", "content": "x"}]}, 404, "model"),
]


def still_embeds(server):
    status, payload, _ = post(server, E, {"input": ["hello", "world"]})
    assert status == 200, payload
    body = json.loads(payload)
    assert [len(d["embedding"]) for d in body["data"]] == [384, 384]


@pytest.mark.parametrize("name,path,body,status,param", EMBEDDING_CASES, ids=[c[0] for c in EMBEDDING_CASES])
def test_bad_embedding_request(minilm, name, path, body, status, param):
    got, payload, _ = post(minilm, path, body)
    assert_error(got, payload, status, param)
    still_embeds(minilm)


def test_embedding_paths_methods_and_body_size(minilm):
    status, payload, headers = post(minilm, E, None, method="GET")
    assert_error(status, payload, 405)
    assert headers["Allow"] == "POST"
    assert_ten_megabytes_refused(minilm, E)
    still_embeds(minilm)


def test_embeddings_with_an_api_key_and_a_full_queue():
    from conftest import Server, minilm_dir
    import concurrent.futures
    server = Server(["-m", minilm_dir()], ["--api-key", "sekret", "--max-batch", "1", "--max-queue", "1"])
    try:
        status, payload, _ = post(server, E, {"input": "a"})
        assert_error(status, payload, 401)
        auth = {"Authorization": "Bearer sekret"}
        big = {"input": [f"sentence {i} " + "with many words in it " * 5 for i in range(64)]}
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            futures = [pool.submit(post, server, E, big, auth) for _ in range(6)]
            statuses = sorted(f.result()[0] for f in futures)
        assert statuses.count(429) >= 1 and statuses.count(200) >= 2, statuses
        status, _, _ = post(server, E, {"input": "a"}, auth)
        assert status == 200
    finally:
        assert server.stop() == 0
