"""`wikisim mcp --index DIR`: the env's tools (search, visit, scholar, python) as an MCP server.

`--transport stdio` (default) answers one client on stdin/stdout: what MCP clients launch as a
subprocess. `--transport streamable-http` serves `http://HOST:PORT/mcp`; its first line on
stdout is `wikisim mcp: listening on http://HOST:PORT/mcp ...` once the index is loaded, as
for `wikisim serve`. Binds 127.0.0.1 by default: the server has no authentication.
"""

from __future__ import annotations

import argparse
import sys

from wikisim.commands.serve import RETRIEVERS, bind
from wikisim.index.base import DEFAULT_RETRIEVER

TRANSPORTS = ("stdio", "streamable-http")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--index", required=True, help="a built index directory (wikisim build)")
    parser.add_argument(
        "--transport",
        default="stdio",
        choices=TRANSPORTS,
        help="how clients connect (default stdio)",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address for streamable-http (default 127.0.0.1)"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=8766,
        help="port for streamable-http (default 8766; 0 = any free)",
    )
    parser.add_argument(
        "--retriever",
        default=DEFAULT_RETRIEVER,
        choices=RETRIEVERS,
        help=f"retriever for search (default {DEFAULT_RETRIEVER}, as the env's)",
    )
    parser.add_argument(
        "--search-k", type=int, default=10, help="results per search query, as the env's search_k"
    )
    parser.add_argument(
        "--visit-tokens", type=int, default=1500, help="token budget of a visit, as the env's"
    )
    parser.add_argument(
        "--no-python", action="store_true", help="leave the python sandbox tool out"
    )


def run(args: argparse.Namespace) -> int:
    import anyio

    from wikisim.backends.wiki import WikiBackend
    from wikisim.integrations.mcp_server import build_server, serve_stdio
    from wikisim.tools.registry import default_toolbox

    sock = (
        bind(args.host, args.port) if args.transport == "streamable-http" else None
    )  # a taken port fails first
    try:
        backend = WikiBackend(args.index, retriever=args.retriever)
        backend.search(["warm up"], 1)
    except BaseException:
        if sock is not None:
            sock.close()
        raise
    toolbox = default_toolbox(
        backend,
        k=args.search_k,
        visit_tokens=args.visit_tokens,
        python=False if args.no_python else None,
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
    app = server.streamable_http_app(host=args.host)
    print(
        f"wikisim mcp: listening on http://{host}:{port}/mcp (retriever {args.retriever}, "
        f"manifest {backend.manifest_hash[:12]})",
        flush=True,
    )
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])
    return 0
