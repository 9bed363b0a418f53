"""`make_backend(name, **kw)`: one switch between the local index, the retrieval server and the web.

Every one is a tool executor (limits, retries, fallback, degradation, cache, call trace) over
its provider, and every one takes `cache_mode=` and `cache_path=`. The remote and web backends
are imported by name only when asked for, so the env works without their dependencies (and
before anyone configures them).
"""

from __future__ import annotations

import importlib
from typing import Any

from wikisim.backends.base import Backend
from wikisim.errors import ConfigError

BACKENDS = {
    "wiki": ("wikisim.backends.wiki", "WikiExecutor"),
    "remote": ("wikisim.backends.remote", "RemoteBackend"),
    "web": ("wikisim.backends.web", "WebBackend"),
}


def make_backend(name: str, **kwargs: Any) -> Backend:
    if name not in BACKENDS:
        raise ConfigError(f"unknown backend {name!r}; choose one of {sorted(BACKENDS)}")
    module_name, cls_name = BACKENDS[name]
    try:
        cls = getattr(importlib.import_module(module_name), cls_name)
    except (ImportError, AttributeError) as e:
        raise ConfigError(
            f"backend {name!r} needs {module_name}.{cls_name}, which cannot be imported: {e}"
        ) from e
    return cls(**kwargs)
