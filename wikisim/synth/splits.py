"""Train/dev/test splits by answer entity and subgraph structure.

Why by answer: a model must not have seen the entity it is asked for. Why also by structure:
each kept subgraph has its own WL hash, and a subgraph may give questions with different
answers; its questions go to the split of its first question, and a later question whose
answer belongs to another split is held out, so no test question shares its subgraph or
its answer with a training question.
"""

from __future__ import annotations

import hashlib
from typing import Any

SPLITS = ("train", "dev", "test")
HELD_OUT = "held_out"


def answer_split(answer: str, dev: float = 0.1, test: float = 0.1) -> str:
    u = int(hashlib.sha256(answer.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "test" if u < test else "dev" if u < test + dev else "train"


def assign_splits(
    records: list[dict[str, Any]], dev: float = 0.1, test: float = 0.1
) -> dict[str, str]:
    """Question id -> "train" | "dev" | "test" | "held_out" (a function of the records, in order)."""
    by_structure: dict[str, str] = {}
    out: dict[str, str] = {}
    for r in records:
        split = answer_split(r["answer"], dev, test)
        structure = by_structure.setdefault(r["wl_hash"], split)
        out[r["id"]] = split if split == structure else HELD_OUT
    return out
