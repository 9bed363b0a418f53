"""The real-web backend: Serper / SerpAPI search and scholar, Jina Reader or direct-fetch visit."""

from wikisim.tools.web.backend import WebBackend

__all__ = ["WebBackend"]
