"""The server through the official `openai` client: completions and chat,
streamed and not, stop strings, token limits, seeded sampling, logprobs, and
greedy text equal to `flashsvd generate` on the same prompt."""
import math
import os

import pytest

from conftest import generate_cli, stories_args

pytestmark = pytest.mark.timeout(120)
PROMPT = "Once upon a time"


def test_greedy_completion_equals_generate(stories, client_for):
    client = client_for(stories)
    want = generate_cli(stories_args(), PROMPT, 40)
    r = client.completions.create(model="stories", prompt=PROMPT, max_tokens=40, temperature=0)
    assert r.object == "text_completion" and r.id.startswith("cmpl-") and r.model == "stories"
    assert r.choices[0].text == want["text"]
    assert r.usage.prompt_tokens == want["prompt_tokens"]
    assert r.usage.completion_tokens == want["generated_tokens"]
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
    assert r.choices[0].finish_reason == ("length" if want["stop_reason"] == "length" else "stop")


def test_streamed_text_equals_the_whole_response(stories, client_for):
    client = client_for(stories)
    whole = client.completions.create(model="stories", prompt=PROMPT, max_tokens=60, temperature=0)
    chunks = list(client.completions.create(model="stories", prompt=PROMPT, max_tokens=60, temperature=0,
                                            stream=True, stream_options={"include_usage": True}))
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    assert text == whole.choices[0].text
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == [whole.choices[0].finish_reason]
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
    assert all(c.usage is None for c in chunks[:-1])


def test_max_tokens_and_stop_strings(stories, client_for):
    client = client_for(stories)
    r = client.completions.create(model="stories", prompt=PROMPT, max_tokens=5, temperature=0)
    assert r.usage.completion_tokens == 5 and r.choices[0].finish_reason == "length"
    full = client.completions.create(model="stories", prompt=PROMPT, max_tokens=60, temperature=0).choices[0].text
    stop = full[10:13]
    cut = client.completions.create(model="stories", prompt=PROMPT, max_tokens=60, temperature=0, stop=[stop])
    assert cut.choices[0].text == full[:full.index(stop)]
    assert cut.choices[0].finish_reason == "stop"
    streamed = client.completions.create(model="stories", prompt=PROMPT, max_tokens=60, temperature=0, stop=stop,
                                         stream=True)
    assert "".join(c.choices[0].text for c in streamed) == cut.choices[0].text


def test_seeded_sampling_is_reproducible_and_matches_generate(stories, client_for):
    client = client_for(stories)
    kw = dict(model="stories", prompt=PROMPT, max_tokens=30, temperature=0.9, top_p=0.9, extra_body={"top_k": 40})
    a = client.completions.create(seed=123, **kw).choices[0].text
    b = client.completions.create(seed=123, **kw).choices[0].text
    c = client.completions.create(seed=124, **kw).choices[0].text
    assert a == b
    assert a != c
    want = generate_cli(stories_args(), PROMPT, 30, "--temp", "0.9", "--top-p", "0.9", "--top-k", "40", "--seed", "123")
    assert a == want["text"]


def test_several_prompts_in_one_request(stories, client_for):
    client = client_for(stories)
    prompts = ["Once upon a time", "The little dog", "Lily"]
    r = client.completions.create(model="stories", prompt=prompts, max_tokens=12, temperature=0)
    assert [c.index for c in r.choices] == [0, 1, 2]
    for p, c in zip(prompts, r.choices):
        assert c.text == generate_cli(stories_args(), p, 12)["text"]


def test_completion_logprobs_are_a_distribution_and_greedy_picks_the_top(stories, client_for):
    client = client_for(stories)
    r = client.completions.create(model="stories", prompt=PROMPT, max_tokens=8, temperature=0, logprobs=3)
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == 8
    assert "".join(lp.tokens) == r.choices[0].text
    for tok, value, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs):
        assert value <= 0 and len(top) <= 3
        assert math.isclose(max(top.values()), value, abs_tol=1e-5)  # greedy: the chosen one is the most likely
        assert sum(math.exp(v) for v in top.values()) <= 1 + 1e-4
    assert lp.text_offset == sorted(lp.text_offset)


def test_echo_scores_the_prompt_like_lm_evaluation_harness(stories, client_for):
    client = client_for(stories)
    context, continuation = "Once upon a time, there was a", " little girl"
    r = client.completions.create(model="stories", prompt=context + continuation, max_tokens=0, echo=True,
                                  logprobs=1, temperature=0)
    lp = r.choices[0].logprobs
    assert r.choices[0].text == context + continuation
    assert lp.token_logprobs[0] is None and lp.top_logprobs[0] is None
    assert len(lp.tokens) == r.usage.prompt_tokens and r.usage.completion_tokens == 0
    assert all(v <= 0 for v in lp.token_logprobs[1:])
    # With one token generated, the prompt's entries are the same and the generated one follows them.
    r2 = client.completions.create(model="stories", prompt=context + continuation, max_tokens=1, echo=True,
                                   logprobs=1, temperature=0)
    lp2 = r2.choices[0].logprobs
    assert len(lp2.tokens) == len(lp.tokens) + 1
    for a, b in zip(lp2.token_logprobs[1:len(lp.tokens)], lp.token_logprobs[1:]):
        assert math.isclose(a, b, abs_tol=1e-5)
    assert r2.choices[0].text == context + continuation + lp2.tokens[-1]


def test_models_health_and_metrics(stories, client_for):
    import urllib.request
    from prometheus_client.parser import text_string_to_metric_families

    client = client_for(stories)
    models = client.models.list()
    assert [m.id for m in models.data] == ["stories"]
    with urllib.request.urlopen(stories.base_url + "/health") as h:
        assert h.status == 200
    def scrape():
        with urllib.request.urlopen(stories.base_url + "/metrics") as m:
            return {s.name + str(sorted(s.labels.items())): s.value
                    for f in text_string_to_metric_families(m.read().decode()) for s in f.samples}
    before = scrape()
    client.completions.create(model="stories", prompt=PROMPT, max_tokens=4, temperature=0)
    after = scrape()
    key = "flashsvd_http_requests_total" + str(sorted({"endpoint": "/v1/completions", "status": "200"}.items()))
    assert after[key] == before.get(key, 0) + 1
    assert after["flashsvd_generation_tokens_total[]"] == before["flashsvd_generation_tokens_total[]"] + 4
    assert after["flashsvd_time_to_first_token_seconds_count[]"] == before["flashsvd_time_to_first_token_seconds_count[]"] + 1
    assert after["flashsvd_requests_running[]"] == 0


def test_errors_reach_the_client_as_openai_errors(stories, client_for):
    import openai

    client = client_for(stories)
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model="stories", prompt=PROMPT, temperature=5)
    assert e.value.body["param"] == "temperature"
    with pytest.raises(openai.NotFoundError):
        client.completions.create(model="gpt-9", prompt=PROMPT)
    with pytest.raises(openai.BadRequestError):  # stories260K has no chat template
        client.chat.completions.create(model="stories", messages=[{"role": "user", "content": "hi"}])


@pytest.mark.timeout(600)
def test_chat_on_the_default_model(smollm2, client_for):
    client = client_for(smollm2, timeout=300)
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    r = client.chat.completions.create(model="smollm2", messages=messages, max_tokens=24, temperature=0)
    assert r.object == "chat.completion" and r.id.startswith("chatcmpl-")
    text = r.choices[0].message.content
    assert r.choices[0].message.role == "assistant"
    assert "Paris" in text
    want = generate_cli(["-m", os.environ["FLASHSVD_SMOLLM2_GGUF"]], "What is the capital of France?", 24, "--chat")
    assert text == want["text"]
    chunks = list(client.chat.completions.create(model="smollm2", messages=messages, max_tokens=24, temperature=0,
                                                 stream=True))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == text
    lp = client.chat.completions.create(model="smollm2", messages=messages, max_tokens=5, temperature=0,
                                        logprobs=True, top_logprobs=2).choices[0].logprobs.content
    assert len(lp) == 5 and all(len(t.top_logprobs) == 2 and t.top_logprobs[0].token == t.token for t in lp)
