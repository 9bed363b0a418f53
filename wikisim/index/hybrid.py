"""Hybrid retrieval, the default: title-aware BM25 fused with dense, then re-ranked by page.

score(d) = (1 - w) / (rrf_k + rank_sparse(d)) + w / (rrf_k + rank_dense(d)), ranks from 1,
a list that misses d adds nothing. Ranks, not scores, are fused, so BM25's unbounded
scores and cosine similarities need no calibration. When the sparse side is bm25s, its
list is first re-scored with the title field (`wikisim.index.titles`). The fused list is
then re-ranked by page, with the pages its best pages link to or name and the pages the
question names (`wikisim.index.expand`): the second hop of a multi-hop question.

TITLE_WEIGHT, RRF_K, DENSE_WEIGHT, FUSION_DEPTH and the expansion's weights were tuned by `python bench/recall.py
--tune`: a grid search for page-level recall@10 of gold supporting titles on the TRAIN
halves of both bundled QA sets (questions 0-49 of HotpotQA-100 and of MuSiQue-100, 100
questions; see bench/recall.py). The other halves are only ever reported, never tuned on.
"""

from __future__ import annotations

from dataclasses import dataclass

from wikisim.errors import ConfigError
from wikisim.index.expand import PageExpander
from wikisim.index.ranked import Ranked, RankedRetriever, top_k
from wikisim.index.sparse_bm25s import BM25sRetriever
from wikisim.index.titles import TitleBooster

TITLE_WEIGHT = 0.0  # the title field: on TRAIN, the query-title stage does its work
RRF_K = 10.0
DENSE_WEIGHT = 0.5
FUSION_DEPTH = 100  # how deep each list is read before fusing
EXPAND_TOP = 2  # the best pages whose links and title mentions are followed
MENTION_WEIGHT = 1.0  # the share of a best page's score the pages it points to gain
QUERY_TITLE_WEIGHT = 1.0  # what a page the question names gains, times the best score


@dataclass(frozen=True)
class FusionParams:
    rrf_k: float = RRF_K
    dense_weight: float = DENSE_WEIGHT
    depth: int = FUSION_DEPTH
    title_weight: float = TITLE_WEIGHT
    expand_top: int = EXPAND_TOP  # 0: no expansion, the fused ranking as is
    mention_weight: float = MENTION_WEIGHT
    query_title_weight: float = QUERY_TITLE_WEIGHT

    def __post_init__(self) -> None:
        for name in ("expand_top", "mention_weight", "query_title_weight"):
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
        """The fused list re-ranked by page and expanded (as it is with expand_top 0 or no store)."""
        p = self.params
        if self.expander is None or p.expand_top == 0:
            return fused
        return self.expander.rerank(
            query, fused, p.expand_top, p.mention_weight, p.query_title_weight
        )
