"""`wikisim serve` as a real subprocess on 127.0.0.1, and RemoteBackend as its client."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from serve_procs import start, started, stop

from wikisim.backends.executor import ExecutorConfig, ToolPolicy
from wikisim.backends.remote import RemoteBackend
from wikisim.errors import BackendError, ConfigError, ToolCallError
from wikisim.index.sparse_lucene import cores


def start_serve(index, *extra: str) -> tuple[subprocess.Popen, str]:
    """Start `wikisim serve --port 0` and wait (bounded) for its "listening on" line."""
    return start("serve", index, *extra)


@pytest.fixture(scope="module")
def local(sample_index):
    from wikisim.backends.wiki import WikiBackend

    return WikiBackend(sample_index)  # the default retriever, as the server's


@pytest.fixture(scope="module")
def server(sample_index) -> Iterator[str]:
    proc, url = start_serve(
        sample_index, "--memo-size", "0", "--max-queries", "4", "--max-body-bytes", "4096"
    )
    yield url
    stop(proc)


@pytest.fixture(scope="module")
def queries(local) -> list[str]:
    return [title for _, title in local.index.store.titles()][:40]


def test_remote_equals_in_process(server, local, queries):
    remote = RemoteBackend(server)
    assert remote.manifest_hash == local.manifest_hash and remote.name == "remote"
    assert remote.search(queries[:4], 5) == local.search(queries[:4], 5)
    assert remote.scholar(["history", "university press"], 3) == local.scholar(
        ["history", "university press"], 3
    )
    for title in queries[:5] + ["No Such Page Anywhere"]:
        assert remote.visit(title, "when was it founded", 200) == local.visit(
            title, "when was it founded", 200
        )
    with pytest.raises(ToolCallError):
        remote.search([" "], 5)
    remote.close()


def test_concurrent_load_zero_failures(server, local, queries):
    expected = {q: local.search([q], 10)[0] for q in queries}
    clients = [RemoteBackend(server) for _ in range(16)]

    def work(c: int) -> int:
        wrong = 0
        for i in range(20):  # 16 clients x 20 requests, bounded
            q = queries[(c * 7 + i) % len(queries)]
            wrong += clients[c].search([q], 10)[0] != expected[q]
        return wrong

    with ThreadPoolExecutor(16) as pool:
        assert sum(pool.map(work, range(16))) == 0
    stats = [c.stats()["search"] for c in clients]
    assert sum(s["calls"] for s in stats) == 320 and sum(s.get("live", 0) for s in stats) == 320
    assert not any(s.get("retries") or s.get("degraded") for s in stats)
    metrics = httpx.get(f"{server}/metrics").text
    assert 'wikisim_requests_total{endpoint="search",status="200"}' in metrics


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "needle"),
    [
        ("POST", "/search", b"{not json", 400, "not valid JSON"),
        ("POST", "/search", b"[1, 2]", 400, "JSON object"),
        ("POST", "/search", b'{"queries": []}', 400, "non-empty list"),
        ("POST", "/search", b'{"queries": ["a", 3]}', 400, "query 1"),
        ("POST", "/search", b'{"queries": ["a", "b", "c", "d", "e"]}', 400, "limit is 4"),
        (
            "POST",
            "/search",
            b'{"queries": ["a"], "k": 1000}',
            400,
            "'k' must be an integer from 1 to 100",
        ),
        ("POST", "/visit", b'{"goal": "x"}', 400, "'url'"),
        (
            "POST",
            "/scholar",
            b'{"queries": ["' + b"a" * 5000 + b'"]}',
            413,
            "exceeds the limit of 4096",
        ),
        ("GET", "/search", None, 405, "GET is not allowed"),
        ("GET", "/nowhere", None, 404, "no endpoint /nowhere"),
    ],
)
def test_bad_requests_get_clear_json_errors(server, method, path, body, status, needle):
    response = httpx.request(method, f"{server}{path}", content=body)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["status"] == status and needle in error["message"]


def test_health_names_the_index(server, local):
    health = httpx.get(f"{server}/health").json()
    assert health == {
        "status": "ok",
        "backend": "wiki",
        "manifest_hash": local.manifest_hash,
        "version": health["version"],
    }


def test_memo_serves_repeats_identically(sample_index, local):
    proc, url = start_serve(sample_index, "--memo-size", "8")
    try:
        remote = RemoteBackend(url)
        first = remote.search(["Anarchism"], 3)
        assert remote.search(["Anarchism"], 3) == first == local.search(["Anarchism"], 3)
        assert "wikisim_memo_hits_total 1" in httpx.get(f"{url}/metrics").text
    finally:
        stop(proc)


def test_unreachable_server_is_a_clear_error_and_a_dead_one_falls_back(sample_index, local):
    with pytest.raises(ConfigError, match="http"):
        RemoteBackend("127.0.0.1:1")
    proc, url = start_serve(sample_index, "--memo-size", "0")
    fast = ToolPolicy(timeout_s=1.0, max_attempts=3, backoff_base_s=0.01, backoff_max_s=0.05)
    remote = RemoteBackend(
        url, config=ExecutorConfig(search=fast, visit=fast, scholar=fast), fallback=local
    )
    assert remote.trace() == []
    stop(proc)  # the server dies mid-run: retries, then the local index answers
    assert remote.search(["Anarchism"], 3) == local.search(["Anarchism"], 3)
    [record] = remote.trace()
    assert record.outcome == "fallback" and record.provider == "wiki"
    assert record.attempts[0].provider == "remote" and record.attempts[0].tries == 3
    with pytest.raises(BackendError, match="cannot reach wikisim serve"):
        RemoteBackend(url)


def test_gym_env_over_remote_matches_in_process(server, sample_index):
    import json

    import gymnasium as gym

    import wikisim  # noqa: F401 - registers WikiSim-v0

    actions = [
        {"name": "search", "arguments": {"query": ["Anarchism", "Albedo"]}},
        {
            "name": "visit",
            "arguments": {"url": ["Anarchism", "Not A Page"], "goal": "origin of the word"},
        },
        {"name": "scholar", "arguments": {"query": "anarchism history"}},
    ]

    def observations(env: gym.Env) -> list[str]:
        obs = [env.reset(seed=3)[0]]
        for action in actions:
            obs.append(env.step(f"<tool_call>{json.dumps(action)}</tool_call>")[0])
        return obs

    local_env = gym.make("WikiSim-v0", index=sample_index, python=False).unwrapped
    remote_env = gym.make("WikiSim-v0", backend="remote", url=server, python=False).unwrapped
    assert remote_env.manifest_hash == local_env.manifest_hash
    assert observations(remote_env) == observations(local_env)  # byte for byte


def test_prefork_workers_share_the_port_and_stop_together(sample_index, local, queries):
    import os
    from pathlib import Path

    proc, line = started("serve", sample_index, "--workers", "2")
    url = line.split("listening on ")[1].split()[0]
    # each worker searches Lucene's segments on its share of the cores ($WIKISIM_SEARCH_THREADS)
    assert f"Lucene threads {max(1, cores() // 2)} a worker" in line
    try:
        expected = {q: local.search([q], 5)[0] for q in queries[:16]}
        clients = [RemoteBackend(url) for _ in range(8)]
        with ThreadPoolExecutor(8) as pool:
            got = list(
                pool.map(lambda i: clients[i % 8].search([queries[i % 16]], 5)[0], range(64))
            )
        assert got == [expected[queries[i % 16]] for i in range(64)]
        children = [
            int(p) for p in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        ]
        assert len(children) == 2
        # 32 keep-alive connections, one visit each: each reads its worker's visit count from /metrics,
        # which is the number of connections that worker holds. On one shared socket, one worker took
        # nearly all; on a socket per worker the kernel splits them by a hash (16 +- 3 each, almost always).
        conns = [httpx.Client(base_url=url) for _ in range(32)]
        for c in conns:
            assert c.post("/visit", json={"url": "Angola", "max_tokens": 10}).status_code == 200
        held = [
            int(
                re.search(
                    r'requests_total\{endpoint="visit",status="200"\} (\d+)', c.get("/metrics").text
                )[1]
            )
            for c in conns
        ]
        for c in conns:
            c.close()
        assert max(held) <= 26
    finally:
        stop(proc)
    for child in children:
        with pytest.raises(ProcessLookupError):
            os.kill(child, 0)


def test_clients_that_connect_together_are_answered_in_arrival_order(local, queries, monkeypatch):
    """32 keep-alive clients connect at once to a saturated server (each search holds its loop
    for 5 ms, then answers the real hits, memoised: what is measured is the scheduling) and send 8 requests each, twice: no request waits for more than about two passes of
    the loop (a pass answers every client once). On uvloop, which accepts one waiting
    connection a pass, the last to connect waited while the first were answered hundreds of
    times."""
    import asyncio
    import json
    import threading
    import time

    from wikisim.commands.serve import bind, http_server
    from wikisim.integrations.server import ServerLimits

    answers = {q: local.search([q], 3) for q in queries}  # the real hits, looked up once

    def slow(qs: list[str], k: int):
        time.sleep(0.005)
        return answers[qs[0]]

    monkeypatch.setattr(local, "search", slow)
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    server = http_server(local, ServerLimits(memo_size=0))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(500):
        if server.started:
            break
        time.sleep(0.02)

    def request(q: str) -> bytes:
        body = json.dumps({"queries": [q], "k": 3}).encode()
        head = f"POST /search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        return head.encode() + body

    async def client(c: int, sent: list[tuple[float, float]]) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for i in range(8):
            start = time.perf_counter()
            writer.write(request(queries[(c + i) % len(queries)]))
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200"), head
            length = int(re.search(rb"(?i)content-length: (\d+)", head)[1])
            await reader.readexactly(length)
            sent.append((start, time.perf_counter()))
        writer.close()

    async def bursts() -> list[list[tuple[float, float]]]:
        out = []
        for _ in range(2):  # uvloop's starvation shows in most bursts, not in every one
            sent: list[tuple[float, float]] = []
            await asyncio.gather(*(client(c, sent) for c in range(32)))
            out.append(sent)
        return out

    try:
        measured = asyncio.run(bursts())
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
    for sent in measured:
        overtaken = max(sum(s2 > s and r2 < r for s2, r2 in sent) for s, r in sent)
        assert overtaken <= 3 * 32, f"a request was answered after {overtaken} sent later"
