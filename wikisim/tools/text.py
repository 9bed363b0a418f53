"""Token counting and cutting for observation budgets, without a tokenizer.

Budgets must give the same cut in every process and for every policy, so a "token" here
is a word or a single punctuation mark (close to what BPE tokenizers count on English prose).
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


def cut_to_tokens(text: str, max_tokens: int, marker: str = " [...]") -> str:
    """`text` when within `max_tokens`, else its longest prefix within it, ending in `marker`."""
    if max_tokens <= 0:
        return ""
    for i, m in enumerate(_TOKEN.finditer(text)):
        if i == max_tokens:
            return text[: m.start()].rstrip() + marker
    return text
