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
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wikisim.checks import at_least
from wikisim.errors import ConfigError
from wikisim.flags import add_config_arguments, config_from_args, option
from wikisim.index.base import DEFAULT_RETRIEVER, RetrieverName

if TYPE_CHECKING:
    import uvicorn

    from wikisim.backends.wiki import WikiBackend
    from wikisim.integrations.server import ServerLimits


@dataclass(frozen=True)
class ServeOptions:
    """What `wikisim serve` is asked for (every field a flag and a YAML key)."""

    index: str = option("", "a built index directory (wikisim build)", required=True)
    host: str = option("127.0.0.1", "address to bind (127.0.0.1: this machine only)")
    port: int = option(8765, "port (0 = any free port)")
    retriever: RetrieverName = option(DEFAULT_RETRIEVER, "retriever for search")
    max_body_bytes: int = option(1 << 20, "largest request body")
    max_queries: int = option(32, "queries per request")
    max_k: int = option(100, "largest k")
    workers: int = option(
        1, "processes answering on the one port, each with its own index handle, memo and /metrics"
    )
    memo_size: int = option(4096, "answers memoised in memory, LRU (0 = off)")

    def __post_init__(self) -> None:
        at_least("wikisim serve", 1, workers=self.workers)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser, ServeOptions)


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
    args: ServeOptions,
    sock: socket.socket,
    limits: ServerLimits,
    backend: WikiBackend | None = None,
) -> None:
    """Load the index (unless given) and answer on `sock` until SIGTERM/SIGINT."""
    if backend is None:
        backend = _load(args)
    http_server(backend, limits).run(sockets=[sock])


def http_server(backend: WikiBackend, limits: ServerLimits) -> uvicorn.Server:
    """uvicorn serving `backend`: httptools when installed (about twice the requests/s of h11),
    on the asyncio loop, not uvloop.

    Why not uvloop: under load it accepts one waiting connection per pass of the loop, and a
    pass runs every ready request's backend call, so of 64 clients that connect together the
    last waited seconds while the first were answered hundreds of times (p99 4.5 s over a
    50k-page index, 0.5 s on asyncio). asyncio accepts every waiting connection at once and
    answers in arrival order, for ~12% fewer requests/s of a handler that does nothing."""
    import uvicorn

    from wikisim.integrations.server import create_app

    config = uvicorn.Config(
        create_app(backend, limits),
        log_level="warning",
        access_log=False,
        http="auto",
        loop="asyncio",
        lifespan="off",
        timeout_keep_alive=30,
    )
    return uvicorn.Server(config)


def _prefork(args: ServeOptions, socks: list[socket.socket], limits: ServerLimits) -> None:
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


def _load(args: ServeOptions) -> WikiBackend:
    """The index's backend, its lazy parts loaded now, not on the first client's clock."""
    from wikisim.backends.wiki import WikiBackend  # lazy: the CLI starts fast

    backend = WikiBackend(args.index, retriever=args.retriever)
    backend.search(["warm up"], 1)
    return backend


def run(args: argparse.Namespace) -> int:
    return serve(config_from_args(ServeOptions, args))


def serve(args: ServeOptions) -> int:
    """Bind, load the index, announce the address, and answer until SIGTERM/SIGINT."""
    from wikisim.integrations.server import ServerLimits

    limits = ServerLimits(
        max_body_bytes=args.max_body_bytes,
        max_queries=args.max_queries,
        max_k=args.max_k,
        memo_size=args.memo_size,
    )
    from wikisim.index.sparse_lucene import search_threads, share_cores

    if args.workers > 1:
        share_cores(args.workers)  # Lucene's search threads: the cores split among the workers
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
        f"Lucene threads {search_threads()} a worker, manifest {backend.manifest_hash[:12]})",
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
