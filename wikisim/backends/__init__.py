"""Backends that answer the tools: wiki (the local index), remote (`wikisim serve`), web; all behind one executor."""

from wikisim.backends.base import Backend, PageView, ScholarHit
from wikisim.backends.factory import make_backend

__all__ = ["Backend", "PageView", "ScholarHit", "make_backend"]
