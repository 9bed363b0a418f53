"""bm25s, imported with JAX hidden from it.

Where JAX is installed, importing bm25s imports it and runs a top-k on JAX's default device: on a
GPU machine JAX then preallocates 75% of the GPU's memory in every process that touches an index,
which starves the policy training beside it (three seeds side by side on one H100 died of CUDA
out-of-memory this way). wikisim never uses bm25s's JAX selection (`sparse_bm25s` ranks with its
own top-k), so bm25s is imported while `jax` is unimportable; a process that imported JAX itself
keeps it, and JAX stays importable afterwards.
"""

from __future__ import annotations

import sys

_hide = "jax" not in sys.modules
if _hide:
    sys.modules["jax"] = None  # type: ignore[assignment]  # `import jax` raises ImportError
try:
    import bm25s
    from bm25s.stopwords import STOPWORDS_EN
finally:
    if _hide:
        del sys.modules["jax"]

__all__ = ["STOPWORDS_EN", "bm25s"]
