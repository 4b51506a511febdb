"""/v1/embeddings on an encoder (all-MiniLM-L6-v2) through the official
`openai` client: float and base64 (the client's default) embeddings equal to
`flashsvd embed` (both the CPU fp32 path), token-id inputs, truncation,
concurrent requests sharing forward passes, and the endpoints each kind of
server refuses."""
import base64
import math
import struct
import threading
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import embed_cli, minilm_dir

pytestmark = pytest.mark.timeout(300)
TEXTS = ["A man is playing a guitar.", "Someone plays music.", "The stock market fell sharply on Monday.",
         "Un homme joue de la guitare.", "日本語のテキスト", "   spaces   around   "]


def cosine(a, b):
    ab = sum(x * y for x, y in zip(a, b))
    return ab / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def assert_same(got, want, tol=1e-6):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert len(g) == len(w) == 384
        assert cosine(g, w) > 0.99999
        assert max(abs(x - y) for x, y in zip(g, w)) < tol


def scrape(server):
    with urllib.request.urlopen(server.base_url + "/metrics") as m:
        return {line.split()[0]: float(line.split()[1]) for line in m.read().decode().splitlines()
                if line and not line.startswith("#")}


def vocab():
    with open(f"{minilm_dir()}/vocab.txt", encoding="utf-8") as f:
        return {line.rstrip("\n"): i for i, line in enumerate(f)}


def test_float_embeddings_equal_embed_cli(minilm, client_for):
    r = client_for(minilm).embeddings.create(model="minilm", input=TEXTS, encoding_format="float")
    assert r.object == "list" and r.model == "minilm"
    assert [d.index for d in r.data] == list(range(len(TEXTS)))
    assert all(d.object == "embedding" for d in r.data)
    assert_same([d.embedding for d in r.data], embed_cli(TEXTS))
    assert r.usage.prompt_tokens == r.usage.total_tokens > 2 * len(TEXTS)


def test_default_base64_embeddings_equal_embed_cli(minilm, client_for):
    client = client_for(minilm)
    r = client.embeddings.create(model="minilm", input=TEXTS)  # the client asks for base64 and decodes it
    assert_same([d.embedding for d in r.data], embed_cli(TEXTS))
    raw = client.embeddings.with_raw_response.create(model="minilm", input=TEXTS[0], encoding_format="base64")
    b64 = raw.http_response.json()["data"][0]["embedding"]
    floats = struct.unpack("<384f", base64.b64decode(b64))  # little-endian fp32
    exact = client.embeddings.create(model="minilm", input=TEXTS[0], encoding_format="float").data[0].embedding
    assert list(floats) == [struct.unpack("<f", struct.pack("<f", x))[0] for x in exact]


def test_one_string_and_the_reported_model(minilm, client_for):
    r = client_for(minilm).embeddings.create(model="minilm", input=TEXTS[2], dimensions=384, user="someone")
    assert len(r.data) == 1
    assert_same([r.data[0].embedding], embed_cli([TEXTS[2]]))
    models = client_for(minilm).models.list().data
    assert [m.id for m in models] == ["minilm"]
    assert models[0].model_extra["max_model_len"] == 256


def test_token_ids_are_the_encoders_whole_input(minilm, client_for):
    v = vocab()
    ids = [v["[CLS]"], v["hello"], v["world"], v["[SEP]"]]
    client = client_for(minilm)
    text = client.embeddings.create(model="minilm", input="Hello world", encoding_format="float")
    one = client.embeddings.create(model="minilm", input=ids, encoding_format="float")
    many = client.embeddings.create(model="minilm", input=[ids, ids[1:3]], encoding_format="float")
    assert text.usage.prompt_tokens == one.usage.prompt_tokens == 4
    assert many.usage.prompt_tokens == 6
    assert_same([one.data[0].embedding, many.data[0].embedding], [text.data[0].embedding] * 2)
    assert cosine(many.data[1].embedding, one.data[0].embedding) < 0.999  # no [CLS] / [SEP] added


def test_long_text_is_truncated_like_embed(minilm, client_for):
    long = " ".join(["the quick brown fox jumps over the lazy dog"] * 60)  # ~540 tokens
    r = client_for(minilm).embeddings.create(model="minilm", input=[long, long + " and more"],
                                             encoding_format="float")
    assert r.usage.prompt_tokens == 2 * 256
    assert_same([d.embedding for d in r.data], embed_cli([long, long]))


def test_concurrent_requests_share_forward_passes(minilm, client_for):
    clients = 32
    texts = [f"Sentence number {i} is about {w}, and it is long enough to take a while to embed on a CPU."
             for i, w in enumerate(["cats", "dogs", "music", "rain", "trains", "tea", "chess", "rivers"] * 4)]
    want = embed_cli(texts)
    before = scrape(minilm)
    barrier = threading.Barrier(clients)

    def one(i):
        client = client_for(minilm)
        barrier.wait()
        return client.embeddings.create(model="minilm", input=texts[i], encoding_format="float").data[0].embedding

    with ThreadPoolExecutor(clients) as pool:
        got = list(pool.map(one, range(clients)))
    after = scrape(minilm)
    for g, w in zip(got, want):
        assert cosine(g, w) > 0.99999  # other inputs in the pass change BLAS blocking, not the result
        assert max(abs(x - y) for x, y in zip(g, w)) < 1e-5
    requests = after["flashsvd_embedding_requests_total"] - before["flashsvd_embedding_requests_total"]
    passes = after["flashsvd_encoder_passes_total"] - before["flashsvd_encoder_passes_total"]
    assert requests == clients
    assert after["flashsvd_encoder_pass_inputs_total"] - before["flashsvd_encoder_pass_inputs_total"] == clients
    print(f"{clients} concurrent requests, {passes:.0f} forward passes")
    assert passes < clients / 2, passes
    assert after["flashsvd_embedding_inputs_waiting"] == 0


def test_generation_endpoints_on_an_encoder_are_404(minilm, client_for):
    import openai
    client = client_for(minilm)
    with pytest.raises(openai.NotFoundError) as e:
        client.completions.create(model="minilm", prompt="Hello", max_tokens=4)
    assert "/v1/embeddings" in str(e.value)
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="minilm", messages=[{"role": "user", "content": "Hi"}])
    with pytest.raises(openai.NotFoundError) as e:
        client.embeddings.create(model="gpt-9", input="x")
    assert e.value.body["code"] == "model_not_found"
    with pytest.raises(openai.BadRequestError) as e:
        client.embeddings.create(model="minilm", input="x", dimensions=128)
    assert e.value.body["param"] == "dimensions"


def test_embeddings_on_a_decoder_are_404(stories, client_for):
    import openai
    with pytest.raises(openai.NotFoundError) as e:
        client_for(stories).embeddings.create(model="stories", input="Once upon a time")
    assert "/v1/completions" in str(e.value)
