"""`wikisim mcp --index DIR`: the env's tools (search, visit, scholar, python) as an MCP server.

`--transport stdio` (default) answers one client on stdin/stdout: what MCP clients launch as a
subprocess. `--transport streamable-http` serves `http://HOST:PORT/mcp`; its first line on
stdout is `wikisim mcp: listening on http://HOST:PORT/mcp ...` once the index is loaded, as
for `wikisim serve`. Binds 127.0.0.1 by default: the server has no authentication.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Literal

from wikisim.commands.serve import bind
from wikisim.flags import add_config_arguments, config_from_args, option
from wikisim.index.base import DEFAULT_RETRIEVER, RetrieverName


@dataclass(frozen=True)
class McpOptions:
    """What `wikisim mcp` is asked for (every field a flag and a YAML key)."""

    index: str = option("", "a built index directory (wikisim build)", required=True)
    transport: Literal["stdio", "streamable-http"] = option("stdio", "how clients connect")
    host: str = option("127.0.0.1", "address for streamable-http")
    port: int = option(8766, "port for streamable-http (0 = any free)")
    retriever: RetrieverName = option(DEFAULT_RETRIEVER, "retriever for search, as the env's")
    search_k: int = option(10, "results per search query, as the env's search_k")
    visit_tokens: int = option(1500, "token budget of a visit, as the env's")
    python: bool = option(True, "offer the python sandbox tool (--no-python leaves it out)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser, McpOptions)


def run(args: argparse.Namespace) -> int:
    import anyio

    from wikisim.backends.wiki import WikiBackend
    from wikisim.integrations.mcp_server import build_server, serve_stdio
    from wikisim.tools.registry import default_toolbox

    o = config_from_args(McpOptions, args)
    sock = (
        bind(o.host, o.port) if o.transport == "streamable-http" else None
    )  # a taken port fails first
    try:
        backend = WikiBackend(o.index, retriever=o.retriever)
        backend.search(["warm up"], 1)
    except BaseException:
        if sock is not None:
            sock.close()
        raise
    toolbox = default_toolbox(
        backend,
        k=o.search_k,
        visit_tokens=o.visit_tokens,
        python=None if o.python else False,
    )
    server = build_server(toolbox)
    if sock is None:
        print(
            f"wikisim mcp: serving {', '.join(t for t in toolbox.names if t != 'answer')} on stdio "
            f"(manifest {backend.manifest_hash[:12]})",
            file=sys.stderr,
            flush=True,
        )
        anyio.run(serve_stdio, server)
        return 0
    import uvicorn

    host, port = sock.getsockname()[:2]
    app = server.streamable_http_app(host=o.host)
    print(
        f"wikisim mcp: listening on http://{host}:{port}/mcp (retriever {o.retriever}, "
        f"manifest {backend.manifest_hash[:12]})",
        flush=True,
    )
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])
    return 0
