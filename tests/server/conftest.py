"""Fixtures for the server's end-to-end tests: a `flashsvd serve` process on
127.0.0.1 (a free port), driven by the official `openai` client and by raw
sockets. Real models: stories260K from ../shared/data (always), the default
model when FLASHSVD_SMOLLM2_GGUF names it, the encoder all-MiniLM-L6-v2 when
FLASHSVD_MINILM_DIR names it."""
import json
import os
import pathlib
import signal
import subprocess
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BINARY = pathlib.Path(os.environ.get("FLASHSVD_BINARY", ROOT / "build" / "flashsvd"))
SHARED = pathlib.Path(os.environ.get("FLASHSVD_SHARED_DATA", ROOT.parent / "shared" / "data"))
STORIES = SHARED / "models" / "stories260K"


class Server:
    """One `flashsvd serve` process; its stderr is kept for the tests to read."""

    def __init__(self, model_args, extra_args=(), env=None):
        self.model_args = list(model_args)
        self.log_path = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / f"flashsvd-serve-{os.getpid()}-{time.time_ns()}.log"
        self.log = open(self.log_path, "w+b")
        args = [str(BINARY), "serve", *self.model_args, "--device", "cpu", "--port", "0", *extra_args]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log, env={**os.environ, **(env or {})})
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(10)
            raise RuntimeError("serve did not start:\n" + self.stderr())
        self.port = int(line)
        self.base_url = f"http://127.0.0.1:{self.port}"

    def stderr(self):
        self.log.flush()
        return self.log_path.read_text(errors="replace")

    def rss_kib(self):
        for line in pathlib.Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise
        self.log.close()
        return self.proc.returncode


def stories_args():
    model = STORIES / "stories260K.bin"
    if not model.exists():
        pytest.skip(f"{model} is missing (../shared/data)")
    return ["-m", str(model), "--tokenizer", str(STORIES / "tok512.bin")]


def slow_args():
    """A model slow enough on the CPU that a long request is still running a
    second later (the default model); stories260K when it is absent, where
    those tests check less (its requests may end before a client acts)."""
    path = os.environ.get("FLASHSVD_SMOLLM2_GGUF")
    if path and pathlib.Path(path).exists():
        return ["-m", path, "--ctx", "1024"], True
    return stories_args() + ["--ctx", "512"], False


def generate_cli(model_args, prompt, n, *extra):
    """`flashsvd generate --json`: the one-sequence reference."""
    out = subprocess.run([str(BINARY), "generate", *model_args, "--device", "cpu", "-p", prompt, "-n", str(n),
                          "--json", *extra], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


@pytest.fixture(scope="session")
def stories():
    server = Server(stories_args(), ["--max-batch", "16", "--served-model-name", "stories"])
    yield server
    assert server.stop() == 0, server.stderr()


@pytest.fixture(scope="session")
def smollm2():
    path = os.environ.get("FLASHSVD_SMOLLM2_GGUF")
    if not path or not pathlib.Path(path).exists():
        pytest.skip("the default model is not available (FLASHSVD_SMOLLM2_GGUF)")
    server = Server(["-m", path], ["--max-batch", "8", "--ctx", "1024", "--served-model-name", "smollm2"])
    yield server
    assert server.stop() == 0, server.stderr()


def minilm_dir():
    path = os.environ.get("FLASHSVD_MINILM_DIR")
    if not path or not (pathlib.Path(path) / "config.json").exists():
        pytest.skip("the default encoder is not available (FLASHSVD_MINILM_DIR; `flashsvd pull --encoder`)")
    return path


def embed_cli(texts):
    """`flashsvd embed --json`: the reference embeddings, one per text (no newlines in them)."""
    path = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / f"flashsvd-embed-{os.getpid()}-{time.time_ns()}.txt"
    path.write_text("\n".join(texts) + "\n")
    try:
        out = subprocess.run([str(BINARY), "embed", "-m", minilm_dir(), "--device", "cpu", "--input", str(path),
                              "--json"], check=True, capture_output=True, text=True)
    finally:
        path.unlink()
    return json.loads(out.stdout)["embeddings"]


@pytest.fixture(scope="session")
def minilm():
    server = Server(["-m", minilm_dir()], ["--served-model-name", "minilm", "--max-batch", "32", "--max-queue", "32"])
    yield server
    assert server.stop() == 0, server.stderr()


@pytest.fixture
def client_for():
    import openai

    def make(server, **kw):
        return openai.OpenAI(base_url=server.base_url + "/v1", api_key=kw.pop("api_key", "none"), max_retries=0,
                             timeout=kw.pop("timeout", 60), **kw)
    return make
