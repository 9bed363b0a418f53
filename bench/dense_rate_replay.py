"""The dense encode rate on a machine that cannot run bench/dense_rate.py: encode() replayed with transformers alone.

A lent GPU machine here lacks sentence-transformers' dependencies (scikit-learn, scipy, pandas,
datasets, PIL) and the parser, and its per-call transfer cannot hold the encoder's 91 MB of
weights. This script needs torch, transformers and a JSON list of passages only, and replays
what `SentenceTransformer.encode` does for all-MiniLM-L6-v2 as the build calls it: texts sorted
longest first, batches tokenized with truncation at 128 tokens and padding to the batch's
longest, BertModel, mean pooling over the attention mask, L2 normalisation, to numpy.

`--random-weights` builds the same architecture from the model's config.json: the compute does
not depend on the weights' values. `--check` (with the real weights) compares the vectors with
sentence-transformers' on this machine, so the replay is shown to be the build's encoder.

    .venv/bin/python bench/dense_rate_replay.py --write-texts passages.json      # on a machine with the parser
    .venv/bin/python bench/dense_rate_replay.py --texts passages.json --model DIR --n 2000 --batch 64 --check
    python bench/dense_rate_replay.py --texts passages.json --model DIR --device cuda --n 200000 \\
        --batch 1024 --random-weights --out dense-rate-gpu.json
"""

from __future__ import annotations

import argparse
import json
import time
from itertools import cycle, islice
from pathlib import Path

import numpy as np
import torch
from transformers import AutoTokenizer, BertConfig, BertModel

WIKI18_PASSAGES = 21_015_324
MAX_SEQ_TOKENS = 128  # wikisim.index.dense.MAX_SEQ_TOKENS (not imported: faiss is not needed here)


def encode(model: BertModel, tok, texts: list[str], batch: int, device: str) -> np.ndarray:
    """Unit vectors of `texts` in their order, computed as SentenceTransformer.encode does."""
    order = np.argsort([-len(t) for t in texts], kind="stable")
    parts = []
    for i in range(0, len(texts), batch):
        chunk = [texts[j] for j in order[i : i + batch]]
        feats = tok(
            chunk, padding=True, truncation=True, max_length=MAX_SEQ_TOKENS, return_tensors="pt"
        ).to(device)
        with torch.inference_mode():
            hidden = model(**feats).last_hidden_state
            mask = feats["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            parts.append(torch.nn.functional.normalize(pooled, p=2, dim=1).cpu().numpy())
    vectors = np.concatenate(parts)
    out = np.empty_like(vectors)
    out[order] = vectors
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--write-texts", type=Path, help="write the sample's passage texts here and stop"
    )
    ap.add_argument("--texts", type=Path, help="JSON list of passage texts, cycled to --n")
    ap.add_argument("--model", type=Path, help="the encoder's directory (config.json, tokenizer)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--n", type=int, default=20_000, help="passages to encode (timed)")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument(
        "--random-weights", action="store_true", help="the architecture, random weights"
    )
    ap.add_argument("--check", action="store_true", help="compare with sentence-transformers")
    ap.add_argument("--out", type=Path, help="JSON file to write")
    args = ap.parse_args()
    if args.write_texts:
        from bench.dense_rate import sample_passages  # the parser and faiss: not on the device

        texts = sample_passages()  # the passages dense_rate.py cycles
        args.write_texts.write_text(json.dumps(texts), encoding="utf-8")
        print(f"wrote {len(texts)} passages to {args.write_texts}")
        return
    if args.texts is None or args.model is None:
        ap.error("--texts and --model are required (or --write-texts)")
    if args.check and args.random_weights:
        ap.error("--check compares the real weights' vectors")
    texts = list(islice(cycle(json.loads(args.texts.read_text(encoding="utf-8"))), args.n))
    tok = AutoTokenizer.from_pretrained(args.model)
    if args.random_weights:
        torch.manual_seed(0)
        model = BertModel(BertConfig.from_pretrained(args.model), add_pooling_layer=False)
    else:
        model = BertModel.from_pretrained(args.model, add_pooling_layer=False)
    model = model.to(args.device).eval()
    cuda = args.device.startswith("cuda")
    encode(model, tok, texts[: 4 * args.batch], args.batch, args.device)  # untimed warm-up
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    vectors = encode(model, tok, texts, args.batch, args.device)
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    result: dict = {
        "device": args.device,
        "device_name": torch.cuda.get_device_name(args.device) if cuda else "cpu",
        "weights": "random" if args.random_weights else "real",
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "passages": len(texts),
        "batch": args.batch,
        "max_seq_tokens": MAX_SEQ_TOKENS,
        "seconds": seconds,
        "passages_per_s": len(texts) / seconds,
        "wiki18_hours": WIKI18_PASSAGES / (len(texts) / seconds) / 3600,
    }
    if cuda:
        result["peak_gpu_mb"] = torch.cuda.max_memory_allocated() / 2**20
    if args.check:
        from sentence_transformers import SentenceTransformer

        st = SentenceTransformer(str(args.model), device=args.device, local_files_only=True)
        st.max_seq_length = MAX_SEQ_TOKENS
        ref = st.encode(texts, batch_size=args.batch, normalize_embeddings=True)
        result["max_abs_diff_vs_sentence_transformers"] = float(np.abs(ref - vectors).max())
    if args.out:
        args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
