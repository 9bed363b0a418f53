"""`wikisim serve --index DIR`: search, visit and scholar over HTTP for many env workers, and the
routes other stacks call (Search-R1's /retrieve, ASearcher's /access, Serper, Jina Reader).

Binds 127.0.0.1 by default (the server has no authentication); `--port 0` picks a free port.
The first line on stdout is `wikisim serve: listening on http://HOST:PORT ...` once the index
is loaded and warm, so scripts and tests can wait for it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import sys
from typing import TYPE_CHECKING

from wikisim.errors import ConfigError
from wikisim.index.base import DEFAULT_RETRIEVER

RETRIEVERS = ("bm25s", "lucene", "dense", "hybrid")

if TYPE_CHECKING:
    from wikisim.backends.wiki import WikiBackend
    from wikisim.integrations.server import ServerLimits


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--index", required=True, help="a built index directory (wikisim build)")
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)"
    )
    parser.add_argument(
        "--port", type=int, default=8765, help="port (default 8765; 0 = any free port)"
    )
    parser.add_argument(
        "--retriever",
        default=DEFAULT_RETRIEVER,
        choices=RETRIEVERS,
        help=f"retriever for search (default {DEFAULT_RETRIEVER})",
    )
    parser.add_argument(
        "--max-body-bytes", type=int, default=1 << 20, help="largest request body (default 1 MiB)"
    )
    parser.add_argument(
        "--max-queries", type=int, default=32, help="queries per request (default 32)"
    )
    parser.add_argument("--max-k", type=int, default=100, help="largest k (default 100)")
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="processes answering on the one port, each with its own index handle, memo and /metrics (default 1)",
    )
    parser.add_argument(
        "--memo-size",
        type=int,
        default=4096,
        help="answers memoised in memory, LRU (default 4096; 0 = off)",
    )


#: Linux spreads the connections of listening sockets that share a port with SO_REUSEPORT over
#: them; elsewhere the option only allows the shared bind, so workers share one socket there.
BALANCED_REUSEPORT = sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


def bind(host: str, port: int, reuse_port: bool = False) -> socket.socket:
    """A listening socket; binding here (not in uvicorn) lets `--port 0` report the port it got."""
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port must be 0..65535, got {port}")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(
        family, socket.SOCK_STREAM, socket.IPPROTO_TCP
    )  # asyncio sets TCP_NODELAY only then
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise ConfigError(
            f"cannot bind {host}:{port} ({e}); pick another --port or 0 for any free one"
        ) from e
    sock.listen(2048)
    return sock


def _serve(
    args: argparse.Namespace,
    sock: socket.socket,
    limits: ServerLimits,
    backend: WikiBackend | None = None,
) -> None:
    """Load the index (unless given) and answer on `sock` until SIGTERM/SIGINT."""
    import uvicorn

    from wikisim.integrations.server import create_app

    if backend is None:
        backend = _load(args)
    # "auto": httptools and uvloop when installed (about twice the requests/s of h11 and asyncio;
    # uvloop also sends a response's head and body in one write)
    config = uvicorn.Config(
        create_app(backend, limits),
        log_level="warning",
        access_log=False,
        http="auto",
        loop="auto",
        lifespan="off",
        timeout_keep_alive=30,
    )
    uvicorn.Server(config).run(sockets=[sock])


def _prefork(args: argparse.Namespace, socks: list[socket.socket], limits: ServerLimits) -> None:
    """N worker processes, each on its socket of the port (or all on one, `socks` of length 1);
    each opens the index itself after the fork (SQLite handles must not cross a fork).
    SIGTERM/SIGINT to this process stops them all.

    Why a socket per worker: on one shared socket the first worker to wake accepts every
    connection that is waiting (15 of 16 keep-alive clients in a test), so the others idle
    while its queue, and the latency of everyone on it, grows.
    """
    children = []
    for i in range(args.workers):
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            mine = socks[i % len(socks)]
            for other in socks:
                if other is not mine:
                    other.close()
            try:
                _serve(args, mine, limits)
            finally:
                os._exit(0)
        children.append(pid)
    for sock in socks:
        sock.close()

    def stop(signum: int, frame: object) -> None:
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for pid in children:
        os.waitpid(pid, 0)


def _load(args: argparse.Namespace) -> WikiBackend:
    """The index's backend, its lazy parts loaded now, not on the first client's clock."""
    from wikisim.backends.wiki import WikiBackend  # lazy: the CLI starts fast

    backend = WikiBackend(args.index, retriever=args.retriever)
    backend.search(["warm up"], 1)
    return backend


def run(args: argparse.Namespace) -> int:
    from wikisim.integrations.server import ServerLimits

    if args.workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {args.workers}")
    limits = ServerLimits(
        max_body_bytes=args.max_body_bytes,
        max_queries=args.max_queries,
        max_k=args.max_k,
        memo_size=args.memo_size,
    )
    spread = args.workers > 1 and BALANCED_REUSEPORT
    sock = bind(
        args.host, args.port, reuse_port=spread
    )  # a taken port fails at once, not after loading the index
    try:
        backend = _load(args)
    except BaseException:
        sock.close()
        raise
    host, port = sock.getsockname()[:2]
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"wikisim serve: warning: listening on {args.host}, which has no authentication",
            file=sys.stderr,
        )
    print(
        f"wikisim serve: listening on http://{host}:{port} (retriever {args.retriever}, workers {args.workers}, "
        f"manifest {backend.manifest_hash[:12]})",
        flush=True,
    )
    if args.workers == 1:
        _serve(args, sock, limits, backend)
    else:
        del backend
        socks = [sock] + [
            bind(args.host, port, reuse_port=True) for _ in range(args.workers - 1) if spread
        ]
        _prefork(args, socks, limits)
    return 0
