"""A MediaWiki XML dump of N pages made by replicating real pages, for scale benchmarks.

Copy k of a page keeps its wikitext (so text length, links, infoboxes, categories and
citations per page stay those of real articles) under a new title "Title (k)" and a new
id; every wikilink to a page or redirect of the pool is rewired to copy k of it, so the
link graph is k disjoint copies of the real one (links out of the pool stay red links,
as in the original). Redirects are replicated alongside, one batch per copy, in the
pool's proportion. The same pool, N and order give the same file, byte for byte.

    .venv/bin/python bench/replicate.py --pages 10000 --out /tmp/enwiki-10k.xml [--pool DUMP]
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from wikisim.corpus.formats import open_input
from wikisim.corpus.page import normalize_title
from wikisim.corpus.raw import RawPage
from wikisim.errors import ConfigError, CorpusError
from wikisim.paths import SAMPLE_DUMP

_LINK = re.compile(r"\[\[([^\[\]|#\n]+)")


@dataclass(frozen=True)
class Pool:
    """The real pages copies are made of: articles (wikitext) and redirects, in dump order."""

    articles: tuple[RawPage, ...]
    redirects: tuple[RawPage, ...]

    @property
    def titles(self) -> frozenset[str]:
        return frozenset(normalize_title(r.title) for r in (*self.articles, *self.redirects))


def load_pool(dump: Path = SAMPLE_DUMP) -> Pool:
    """The articles and redirects of a MediaWiki dump (other namespaces and skipped pages left out)."""
    articles, redirects = [], []
    for raw in open_input(dump):
        if raw.kind == "wiki":
            articles.append(raw)
        elif raw.kind == "redirect":
            redirects.append(raw)
    if not articles:
        raise CorpusError(
            f"{dump}: no article with wikitext to replicate; pass a MediaWiki XML dump"
        )
    return Pool(tuple(articles), tuple(redirects))


def copy_title(title: str, k: int) -> str:
    return title if k == 0 else f"{title} ({k})"


def _rewire(wikitext: str, k: int, titles: frozenset[str]) -> str:
    """Links to pool pages point at copy k of them; the anchor text shown stays the same."""
    if k == 0:
        return wikitext

    def link(m: re.Match) -> str:
        target = m.group(1)
        if normalize_title(target) not in titles:
            return m.group(0)
        shown = "" if "|" in wikitext[m.end() : m.end() + 1] else f"|{target}"
        return f"[[{copy_title(normalize_title(target), k)}{shown}"

    return _LINK.sub(link, wikitext)


def replicated(pool: Pool, n_pages: int) -> Iterator[RawPage]:
    """N articles (and the pool's share of redirects) in copy order, ids 1.. in that order."""
    if n_pages < 1:
        raise ConfigError(f"n_pages must be >= 1, got {n_pages}")
    titles, per = pool.titles, len(pool.articles)
    page_id, made, k = 0, 0, 0
    while made < n_pages:
        take = pool.articles[: n_pages - made]
        share = len(pool.redirects) * len(take) // per
        for raw in take:
            page_id += 1
            yield RawPage(
                "wiki",
                page_id,
                copy_title(normalize_title(raw.title), k),
                _rewire(raw.body, k, titles),
            )
        for raw in pool.redirects[:share]:
            page_id += 1
            target = normalize_title(raw.body)
            yield RawPage(
                "redirect",
                page_id,
                copy_title(normalize_title(raw.title), k),
                copy_title(target, k) if target in titles else target,
            )
        made += len(take)
        k += 1


def write_dump(pages: Iterator[RawPage], out: Path) -> dict[str, int]:
    """Write pages as an uncompressed MediaWiki XML export; returns counts and wikitext bytes."""
    counts = {"articles": 0, "redirects": 0, "wikitext_bytes": 0}
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        f.write('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/">\n')
        for raw in pages:
            f.write(f"<page><title>{escape(raw.title)}</title><ns>0</ns><id>{raw.page_id}</id>")
            if raw.kind == "redirect":
                counts["redirects"] += 1
                f.write(f"<redirect title={quoteattr(raw.body)} />")
                body = f"#REDIRECT [[{raw.body}]]"
            else:
                counts["articles"] += 1
                body = raw.body
            counts["wikitext_bytes"] += len(body.encode("utf-8"))
            f.write(
                f'<revision><text xml:space="preserve">{escape(body)}</text></revision></page>\n'
            )
        f.write("</mediawiki>\n")
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, required=True, help="articles in the output")
    ap.add_argument("--out", type=Path, required=True, help="output .xml file")
    ap.add_argument("--pool", type=Path, default=SAMPLE_DUMP, help="MediaWiki dump to replicate")
    args = ap.parse_args()
    counts = write_dump(replicated(load_pool(args.pool), args.pages), args.out)
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
