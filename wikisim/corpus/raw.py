"""The unit a format reader hands to the parser: cheap to pickle to a worker process."""

from __future__ import annotations

from typing import Literal, NamedTuple

RawKind = Literal["wiki", "text", "redirect", "skip", "namespace"]


class RawPage(NamedTuple):
    """`body` is wikitext ("wiki"), plain paragraphs joined by newlines ("text"),
    the target title ("redirect"), the reason the page is skipped ("skip"), or the
    namespace number of a non-article page ("namespace": counted, never parsed)."""

    kind: RawKind
    page_id: int | None
    title: str
    body: str
