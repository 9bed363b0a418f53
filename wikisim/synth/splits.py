"""Train/dev/test splits by structure and answer entity.

Why union-find: questions that share a subgraph structure (WL hash) or an answer entity
are joined into one group, and a group goes to one split as a whole, so no test question
shares its structure or answer with a training question.
"""

from __future__ import annotations

import hashlib
from typing import Any

SPLITS = ("train", "dev", "test")


def _find(parent: dict[str, str], a: str) -> str:
    while parent[a] != a:
        parent[a] = parent[parent[a]]
        a = parent[a]
    return a


def assign_splits(records: list[dict[str, Any]], dev: float = 0.1, test: float = 0.1) -> dict[str, str]:
    """Question id -> split; a group's split is a hash of its smallest key (order-free)."""
    parent: dict[str, str] = {}
    for r in records:
        keys = (f"wl:{r['wl_hash']}", f"ans:{r['answer_node']}")
        for k in keys:
            parent.setdefault(k, k)
        a, b = _find(parent, keys[0]), _find(parent, keys[1])
        if a != b:
            parent[max(a, b)] = min(a, b)
    out: dict[str, str] = {}
    for r in records:
        root = _find(parent, f"wl:{r['wl_hash']}")
        u = int(hashlib.sha256(root.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
        out[r["id"]] = "test" if u < test else "dev" if u < test + dev else "train"
    return out
