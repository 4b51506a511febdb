"""64 concurrent streaming clients with several requests each: no errors,
every stream's text equal to its non-streamed greedy twin (no token lost or
duplicated), the server's memory back to its level after the first round and
nothing left running."""
import asyncio
import urllib.request

import pytest

from conftest import Server, stories_args

pytestmark = pytest.mark.timeout(600)
PROMPTS = ["Once upon a time", "The little dog", "Lily and Tom", "One day, a bird", "The sun was", "Sam had a",
           "There was a big", "In the park"]


def scrape(server):
    with urllib.request.urlopen(server.base_url + "/metrics") as m:
        return {line.split()[0]: float(line.split()[1]) for line in m.read().decode().splitlines()
                if line and not line.startswith("#")}


async def one_round(client, twins, clients=64, per_client=3):
    async def worker(c):
        for k in range(per_client):
            i = (c + k) % len(PROMPTS)
            stream = await client.completions.create(model="stories", prompt=PROMPTS[i], max_tokens=48,
                                                     temperature=0, stream=True)
            text = "".join([chunk.choices[0].text async for chunk in stream])
            assert text == twins[i], (PROMPTS[i], text, twins[i])
    await asyncio.gather(*(worker(c) for c in range(clients)))


def test_sixty_four_streaming_clients():
    import openai
    server = Server(stories_args(), ["--max-batch", "64", "--served-model-name", "stories"],
                    env={"MALLOC_ARENA_MAX": "2"})
    try:
        sync = openai.OpenAI(base_url=server.base_url + "/v1", api_key="none", max_retries=0)
        twins = [sync.completions.create(model="stories", prompt=p, max_tokens=48, temperature=0).choices[0].text
                 for p in PROMPTS]
        client = openai.AsyncOpenAI(base_url=server.base_url + "/v1", api_key="none", max_retries=0, timeout=300)
        asyncio.run(one_round(client, twins))  # warm-up: arenas, KV pages and thread stacks touched
        warm = server.rss_kib()
        for _ in range(2):
            client = openai.AsyncOpenAI(base_url=server.base_url + "/v1", api_key="none", max_retries=0, timeout=300)
            asyncio.run(one_round(client, twins))
        after = server.rss_kib()
        assert after <= warm + 8 * 1024, (warm, after)
        m = scrape(server)
        assert m["flashsvd_requests_running"] == 0 and m["flashsvd_requests_waiting"] == 0
        assert m["flashsvd_kv_blocks_used"] == 0
        ok = m['flashsvd_http_requests_total{endpoint="/v1/completions",status="200"}']
        assert ok == len(PROMPTS) + 3 * 64 * 3
        assert m["flashsvd_time_to_first_token_seconds_count"] == ok
    finally:
        assert server.stop() == 0, server.stderr()
