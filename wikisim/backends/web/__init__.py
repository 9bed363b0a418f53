"""The real-web backend: Serper / SerpAPI search and scholar, Jina Reader or direct-fetch visit."""

from wikisim.backends.web.backend import WebBackend

__all__ = ["WebBackend"]
