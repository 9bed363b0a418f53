"""Hybrid retrieval, the default: title-aware BM25 fused with dense, then re-ranked by page.

score(d) = (1 - w) / (rrf_k + rank_sparse(d)) + w / (rrf_k + rank_dense(d)), ranks from 1,
a list that misses d adds nothing. Ranks, not scores, are fused, so BM25's unbounded
scores and cosine similarities need no calibration. When the sparse side is bm25s, its
list is first re-scored with the title field (`wikisim.index.titles`). The fused list is
then re-ranked by page, with the pages its best pages link to or name and the pages the
question names (`wikisim.index.expand`): the second hop of a multi-hop question; and last
with the pages a second sparse query, the question and the best pages' names, finds
(`wikisim.index.hop`).

TITLE_WEIGHT, RRF_K, DENSE_WEIGHT, FUSION_DEPTH and the two later stages' weights were tuned by `python bench/recall.py
--tune`: a grid search for page-level recall@10 of gold supporting titles on the TRAIN
halves of both bundled QA sets (questions 0-49 of HotpotQA-100 and of MuSiQue-100, 100
questions; see bench/recall.py). The other halves are only ever reported, never tuned on.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from wikisim.errors import ConfigError
from wikisim.index.expand import PageExpander
from wikisim.index.hop import SecondHop
from wikisim.index.ranked import Ranked, RankedRetriever, top_k
from wikisim.index.sparse_bm25s import BM25sRetriever
from wikisim.index.titles import TitleBooster

TITLE_WEIGHT = 0.0  # the title field: on TRAIN, the query-title stage does its work
RRF_K = 10.0
DENSE_WEIGHT = 0.6
FUSION_DEPTH = 100  # how deep each list is read before fusing (BM25S_MAX_PASSAGES assumes it)
EXPAND_TOP = 2  # the best pages whose links and title mentions are followed
MENTION_WEIGHT = 0.5  # the share of a best page's score the pages it points to gain
QUERY_TITLE_WEIGHT = 1.0  # what a page the question names gains, times the best score
HOP_SEEDS = 1  # the best pages a second sparse query starts from
HOP_WEIGHT = 1.0  # what the page that query ranks r-th gains: HOP_WEIGHT * seed score / r
HOP_PAGES = 8  # how many of the pages that query ranks gain


@dataclass(frozen=True)
class FusionParams:
    rrf_k: float = RRF_K
    dense_weight: float = DENSE_WEIGHT
    depth: int = FUSION_DEPTH
    title_weight: float = TITLE_WEIGHT
    expand_top: int = EXPAND_TOP  # 0: no expansion, the fused ranking as is
    mention_weight: float = MENTION_WEIGHT
    query_title_weight: float = QUERY_TITLE_WEIGHT
    hop_seeds: int = HOP_SEEDS  # 0: no second query
    hop_weight: float = HOP_WEIGHT
    hop_pages: int = HOP_PAGES

    def __post_init__(self) -> None:
        for name in (
            "expand_top",
            "mention_weight",
            "query_title_weight",
            "hop_seeds",
            "hop_weight",
            "hop_pages",
        ):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.title_weight < 0:
            raise ConfigError(f"title_weight must be >= 0, got {self.title_weight}")
        if self.rrf_k < 0:
            raise ConfigError(f"rrf_k must be >= 0, got {self.rrf_k}")
        if not 0.0 <= self.dense_weight <= 1.0:
            raise ConfigError(f"dense_weight must be in [0, 1], got {self.dense_weight}")
        if self.depth < 1:
            raise ConfigError(f"fusion depth must be >= 1, got {self.depth}")


def fuse(sparse: Ranked, dense: Ranked, params: FusionParams) -> Ranked:
    """Weighted RRF of two best-first lists; ties by docid."""
    scores: dict[str, float] = {}
    for weight, ranked in ((1.0 - params.dense_weight, sparse), (params.dense_weight, dense)):
        for rank, (docid, _) in enumerate(ranked, start=1):
            scores[docid] = scores.get(docid, 0.0) + weight / (params.rrf_k + rank)
    return top_k(list(scores.items()), len(scores))


class HybridRetriever(RankedRetriever):
    name = "hybrid"

    def __init__(
        self,
        sparse: RankedRetriever,
        dense: RankedRetriever,
        manifest_hash: str = "",
        params: FusionParams | None = None,
    ) -> None:
        self.sparse, self.dense = sparse, dense
        self.passages = sparse.passages
        self.params = params or FusionParams()
        self.manifest_hash = manifest_hash
        self.titles = TitleBooster(sparse) if isinstance(sparse, BM25sRetriever) else None
        self.expander = (
            PageExpander(self.passages, self.passages.page_store) if self.passages else None
        )
        self.hop = SecondHop(sparse, self.passages) if self.passages else None

    @property
    def settings(self) -> str:
        """The sparse side and every fusion, page and hop setting: a cache recorded under other
        weights never answers for these."""
        tuned = ",".join(f"{f.name}={getattr(self.params, f.name)}" for f in fields(self.params))
        return f"sparse={self.sparse.name},{tuned}"

    def sparse_ranked(self, queries: list[str], depth: int) -> list[Ranked]:
        """The sparse side's lists, re-scored with the title field where the sparse side is bm25s."""
        lists = self.sparse.ranked(queries, depth)
        if self.titles is None:
            return lists
        return [
            self.titles.boost(q, r, self.params.title_weight)
            for q, r in zip(queries, lists, strict=True)
        ]

    def ranked(self, queries: list[str], depth: int) -> list[Ranked]:
        read = max(depth, self.params.depth)
        sparse, dense = self.sparse_ranked(queries, read), self.dense.ranked(queries, read)
        # A query none of whose terms occurs in the corpus ("zzqxj") finds nothing, as on the
        # sparse side: dense would always return its nearest passages, however unrelated.
        return [
            self.second_stage(q, fuse(s, d, self.params))[:depth] if s else []
            for q, s, d in zip(queries, sparse, dense, strict=True)
        ]

    def second_stage(self, query: str, fused: Ranked) -> Ranked:
        """The fused list re-ranked by page and expanded (as it is with expand_top 0 or no
        store), then by the second hop (as it is with hop_seeds 0 or no passage store)."""
        p = self.params
        ranked = fused
        if self.expander is not None and p.expand_top > 0:
            ranked = self.expander.rerank(
                query, ranked, p.expand_top, p.mention_weight, p.query_title_weight
            )
        if self.hop is not None:
            ranked = self.hop.rerank(query, ranked, p.hop_seeds, p.hop_weight, p.hop_pages)
        return ranked
