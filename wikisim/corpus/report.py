"""What an ingestion read: counts for the build report, and every skipped page with its reason."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from wikisim.corpus.page import Page, Redirect


@dataclass(frozen=True)
class SkippedPage:
    file: str
    page_id: int | None
    title: str
    reason: str


@dataclass
class IngestReport:
    """Filled while `read_pages` streams; complete once the stream is exhausted.

    Mutable on purpose: it is an accumulator that the build prints at the end.
    """

    files: list[str] = field(default_factory=list)
    pages: int = 0
    redirects: int = 0
    links: int = 0
    infoboxes: int = 0
    categories: int = 0
    citations: int = 0
    wikitext_bytes: int = 0
    non_article: int = 0  # pages outside the article namespace, left out on purpose
    skipped: list[SkippedPage] = field(default_factory=list)

    def count(self, item: Page | Redirect) -> None:
        if isinstance(item, Redirect):
            self.redirects += 1
            return
        self.pages += 1
        self.links += len(item.links)
        self.infoboxes += item.infobox is not None
        self.categories += len(item.categories)
        self.citations += len(item.citations)

    def skipped_by_reason(self) -> dict[str, int]:
        return dict(sorted(Counter(s.reason.split(":", 1)[0] for s in self.skipped).items()))

    def as_dict(self) -> dict:
        return {
            "files": list(self.files),
            "pages": self.pages,
            "redirects": self.redirects,
            "links": self.links,
            "infoboxes": self.infoboxes,
            "categories": self.categories,
            "citations": self.citations,
            "wikitext_bytes": self.wikitext_bytes,
            "non_article": self.non_article,
            "skipped": len(self.skipped),
            "skipped_by_reason": self.skipped_by_reason(),
            "skipped_pages": [vars(s) for s in self.skipped],
        }

    def __str__(self) -> str:
        lines = [
            f"pages {self.pages:,}  redirects {self.redirects:,}  links {self.links:,}  "
            f"infoboxes {self.infoboxes:,}  categories {self.categories:,}  "
            f"citations {self.citations:,}  wikitext {self.wikitext_bytes / 1e6:.1f} MB  "
            f"non-article pages left out {self.non_article:,}",
            f"skipped {len(self.skipped):,}"
            + "".join(f"  {r}: {n}" for r, n in self.skipped_by_reason().items()),
        ]
        lines += [
            f"  - {s.title!r} (id {s.page_id}, {s.file}): {s.reason}" for s in self.skipped[:20]
        ]
        if len(self.skipped) > 20:
            lines.append(f"  ... and {len(self.skipped) - 20} more")
        return "\n".join(lines)
