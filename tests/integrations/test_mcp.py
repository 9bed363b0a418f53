"""`wikisim mcp` as a subprocess, driven by the official `mcp` SDK's own client over stdio and
streamable HTTP: the env's schemas listed, the env's observations returned."""

from __future__ import annotations

import sys

import anyio
import pytest
from mcp import Client, StdioServerParameters
from serve_procs import start, stop

from wikisim.paths import REPO_ROOT
from wikisim.tools.registry import default_toolbox, python_available

CALLS = [
    ("search", {"query": "Apollo 11 landed the first humans on the Moon"}),
    ("search", {"query": ["Neil Armstrong", "Buzz Aldrin"]}),
    (
        "visit",
        {"url": "https://en.wikipedia.org/wiki/Apollo_11", "goal": "who commanded the mission"},
    ),
    ("visit", {"url": "No Such Page Anywhere", "goal": "anything"}),
    ("scholar", {"query": "history"}),
    ("visit", {"url": 3}),  # a bad call: the env's error observation, flagged is_error
]


@pytest.fixture(scope="module")
def toolbox(sample_index):
    from wikisim.backends.wiki import WikiBackend

    return default_toolbox(WikiBackend(sample_index), python=None)


async def _session(server, toolbox) -> None:
    async with Client(server) as client:
        listed = (await client.list_tools()).tools
        expected = [n for n in ("search", "visit", "scholar", "python") if n in toolbox.tools]
        assert [t.name for t in listed] == expected
        for tool in listed:
            function = toolbox.tools[tool.name].schema["function"]
            assert (
                tool.input_schema == function["parameters"]
                and tool.description == function["description"]
            )
        for name, arguments in CALLS:
            result = await client.call_tool(name, arguments)
            local = toolbox.call(name, arguments)
            assert result.content[0].text == local.text and result.is_error == (not local.ok), (
                name,
                arguments,
            )
        if python_available():
            result = await client.call_tool("python", {"code": "print(6 * 7)"})
            assert not result.is_error and "42" in result.content[0].text
        unknown = await client.call_tool("answer", {"answer": "x"})
        assert unknown.is_error and "no tool named 'answer'" in unknown.content[0].text


def test_mcp_over_stdio(sample_index, toolbox):
    params = StdioServerParameters(
        command=sys.executable,
        cwd=str(REPO_ROOT),
        args=["-m", "wikisim", "mcp", "--index", str(sample_index)],
    )
    anyio.run(_session, params, toolbox)


def test_mcp_over_streamable_http(sample_index, toolbox):
    proc, url = start("mcp", sample_index, "--transport", "streamable-http")
    try:
        assert url.endswith("/mcp")
        anyio.run(_session, url, toolbox)
    finally:
        stop(proc)
