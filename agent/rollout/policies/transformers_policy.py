"""A local causal LM as a policy: batched sampling with a KV cache, exact ids and logprobs.

The decoding loop is written out (rather than `model.generate`) so that each row samples from
its own seeded generator (a row's tokens do not depend on which rows share its batch), stops
at `</tool_call>`, `</answer>` or end-of-turn on its own, and reports the log-probability of
every sampled id under the sampling temperature (greedy: under the raw logits).

Most of a turn's cost on CPU is avoidable work, so none is done twice: the system prompt's
keys and values are computed once per run, an episode's next turn prefills only the tool
response (`agent.rollout.policies.kv`), rows with the same context prefill once, only the last
position's logits are computed, and rows that stop leave the batch. On a GPU, where a step costs
its launches rather than its arithmetic, the decode steps run instead in fixed-shape buffers, each
replayed as one CUDA graph (`agent.rollout.policies.fixed_decode`); a stop string is looked for
only after a token that can end one.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from agent.rollout.policies.base import DECODE_DTYPES, DecodeDtype
from agent.rollout.policies.fixed_decode import FixedDecode
from agent.rollout.policies.kv import (
    KVStore,
    Past,
    batch_cache,
    buffered,
    layer_kv,
    row_past,
)
from agent.rollout.react import ChatFormat, Generation, TurnRequest
from wikisim.errors import ConfigError
from wikisim.tools.protocol import STOP_STRINGS

_TAIL_TOKENS = 16  # decoded tail long enough to contain any stop string
_MIN_PREFIX = 32  # shorter shared prompts are not worth a cached prefix
THINK_CLOSE = "\n</think>\n"  # given to a row whose think reaches SamplingConfig.think_budget


@dataclass(frozen=True)
class SamplingConfig:
    """Attributes:
    temperature: 0 means greedy.
    top_p: nucleus mass kept when sampling (1.0 keeps all).
    batch_size: most episodes generated together in one forward pass.
    fixed_shapes: decode in fixed-shape buffers, each step a CUDA graph on a GPU
        (`agent.rollout.policies.fixed_decode`); None: on a GPU only. On a CPU it runs the same
        fixed-shape step eagerly, slower than the growing cache (it attends over padding).
    think_budget: tokens a turn's `<think>` may take (0: no limit). A row whose think is still
        open at that count is given `</think>` and spends the rest of the turn's budget on its
        call or answer (budget forcing, as in s1, Muennighoff et al. 2025): a small model that
        quotes at length otherwise reaches max_new_tokens before it closes its answer. A think
        opened after that count is closed at once: the budget is the turn's (a GRPO policy
        chained thinks past it in 16 of 96 held-out episodes, docs/learning-log.md). The given
        ids are recorded (`Turn.forced_at`) and never trained on.
    decode_dtype: the dtype the weights decode in (`DecodeDtype`). Weights in another dtype are
        decoded from a copy in this one (a LoRA model's merged), so a trainer's own stay as
        they are.
    presence_penalty: subtracted from the logit of every id the turn has already generated,
        as OpenAI's and vLLM's `presence_penalty` (Tongyi DeepResearch's harness samples with
        1.1); it ends a greedy loop that repeats one word to the turn's budget. The log-probs
        reported are those of the penalized logits, which the ids were drawn from. A trainer's
        sampler keeps 0: its update scores the ids under the model alone.
    """

    temperature: float = 0.0
    top_p: float = 1.0
    batch_size: int = 8
    fixed_shapes: bool | None = None
    think_budget: int = 0
    decode_dtype: DecodeDtype = "float32"
    presence_penalty: float = 0.0

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ConfigError(f"temperature={self.temperature} must be >= 0 (0 is greedy)")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"top_p={self.top_p} must be in (0, 1]")
        if self.batch_size < 1:
            raise ConfigError(f"batch_size={self.batch_size} must be >= 1")
        if self.think_budget < 0:
            raise ConfigError(f"think_budget={self.think_budget} must be >= 0 (0: no limit)")
        if not -2 <= self.presence_penalty <= 2:
            raise ConfigError(
                f"presence_penalty={self.presence_penalty} must be in [-2, 2], as OpenAI's"
            )
        if self.decode_dtype not in DECODE_DTYPES:
            raise ConfigError(
                f"decode_dtype={self.decode_dtype!r} must be one of {', '.join(DECODE_DTYPES)}"
            )


def _cast(model: Any, sampling: SamplingConfig | None) -> Any:
    return model.to(getattr(torch, (sampling or SamplingConfig()).decode_dtype))


class TransformersPolicy:
    """Any local causal LM folder (or the bundled SmolLM2) acting in the ReAct format."""

    def __init__(
        self,
        tokenizer: Any,
        model: Any,
        *,
        name: str = "transformers",
        sampling: SamplingConfig | None = None,
    ):
        from agent.rollout.models import for_decoding, stable_attention

        stable_attention()
        self.name = name
        self.sampling = sampling or SamplingConfig()
        # the caller sets train/eval mode (a copy in another dtype is in eval mode)
        self.tokenizer, self.model = tokenizer, for_decoding(model, self.sampling.decode_dtype)
        self.chat = ChatFormat(tokenizer)
        self.stop_ids = {
            i
            for i in (tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids("<|im_end|>"))
            if isinstance(i, int) and i >= 0
        }
        self.pad_id = (
            tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        )
        self.generated_tokens = 0  # running count, read by benchmarks
        self._prefixes: dict[tuple[int, ...], Past] = {}
        self._pasts = KVStore()
        on_gpu = self.model.device.type == "cuda"
        fixed = on_gpu if self.sampling.fixed_shapes is None else self.sampling.fixed_shapes
        self.fixed = FixedDecode(self.model, capture=on_gpu) if fixed else None
        self._closers = _closing_ids(tokenizer)
        self._think_close = tuple(tokenizer.encode(THINK_CLOSE, add_special_tokens=False))
        self.oom_backoffs: list[tuple[int, int]] = []  # (batch size, the smaller one retried)

    @classmethod
    def from_path(
        cls, path: str | Path, *, sampling: SamplingConfig | None = None
    ) -> TransformersPolicy:
        from agent.rollout.models import load_local

        tokenizer, model = load_local(path)
        model = _cast(model, sampling)  # in place: no copy of weights only this policy holds
        return cls(tokenizer, model, name=Path(path).name, sampling=sampling)

    @classmethod
    def smollm2(cls, *, sampling: SamplingConfig | None = None) -> TransformersPolicy:
        from agent.rollout.models import load_smollm2

        tokenizer, model = load_smollm2()
        return cls(tokenizer, _cast(model, sampling), name="smollm2-135m", sampling=sampling)

    def act(self, requests: Sequence[TurnRequest]) -> list[Generation]:
        """One turn for every request, `sampling.batch_size` at a time.

        A batch the device has no memory for is retried at half the size, and the smaller
        size stays for the rest of the run (`oom_backoffs` records each halving): an eval or a
        rollout then finishes where it would have died. Rows do not depend on which rows share
        their batch, so the turns are those of a run started at the smaller size.
        """
        out: list[Generation] = []
        self._pasts.mark()
        start = 0
        while start < len(requests):
            chunk = requests[start : start + self.sampling.batch_size]
            try:
                rows = self.generate(
                    [list(r.ids) for r in chunk],
                    [r.max_new_tokens for r in chunk],
                    [r.seed for r in chunk],
                    keep=True,
                )
            except torch.OutOfMemoryError:
                if len(chunk) == 1:
                    raise
                self._back_off(len(chunk))
                continue
            for ids, logprobs, forced_at in rows:
                text = self.tokenizer.decode(ids, skip_special_tokens=False)
                out.append(Generation(text, tuple(ids), tuple(logprobs), forced_at=forced_at))
            start += len(chunk)
        self._pasts.sweep()
        return out

    def _back_off(self, rows: int) -> None:
        smaller = max(1, rows // 2)
        self.oom_backoffs.append((self.sampling.batch_size, smaller))
        self.sampling = replace(self.sampling, batch_size=smaller)
        if self.fixed is not None:
            self.fixed.release()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()  # the failed batch's blocks go back before the retry

    @torch.inference_mode()
    def generate(
        self, contexts: list[list[int]], max_new: list[int], seeds: list[int], *, keep: bool = False
    ) -> list[Sampled]:
        """Sample one turn per context; each row stops on its own. Per row: ids, their
        log-probabilities, and the positions among them the row was given (`think_budget`).

        Args:
            keep: store each row's cache so that a later call extending its context (the next
                turn of the episode) prefills only the new tokens; `act` sweeps the store.
        """
        if any(not c for c in contexts):
            raise ConfigError(
                "TransformersPolicy needs token contexts; build episodes with a ChatFormat"
            )
        starts, pasts = zip(*(self._past(c) for c in contexts), strict=True)
        try:
            return self._decode(contexts, starts, pasts, max_new, seeds, keep)
        except torch.OutOfMemoryError:  # the pasts it took go back, for the retry
            for context, start, past in zip(contexts, starts, pasts, strict=True):
                if past is not None:
                    self._pasts.restore(context[:start], past)
            raise

    def _decode(
        self,
        contexts: list[list[int]],
        starts: Sequence[int],
        pasts: Sequence[Past | None],
        max_new: list[int],
        seeds: list[int],
        keep: bool,
    ) -> list[Sampled]:
        n = len(contexts)
        dev = self.model.device
        twin = prefill_rows(contexts)
        lead = [twin.index(u) for u in range(max(twin) + 1)]  # each prefilled row's first row
        rest = [contexts[i][starts[i] :] for i in lead]
        width = max(len(r) for r in rest)
        room = width + (0 if self.fixed is not None else max(max_new))
        cache, past_mask = batch_cache([pasts[i] for i in lead], room=room)
        input_ids = torch.full((len(lead), width), self.pad_id, dtype=torch.long)
        new_mask = torch.zeros((len(lead), width), dtype=torch.long)
        for i, r in enumerate(rest):  # left padding: every row's next token lines up at the end
            input_ids[i, width - len(r) :] = torch.tensor(r)
            new_mask[i, width - len(r) :] = 1
        input_ids = input_ids.to(dev)
        mask = torch.cat([past_mask, new_mask], dim=1).to(dev)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, past_mask.shape[1] :]
        result = self.model(
            input_ids=input_ids,
            attention_mask=mask,
            position_ids=positions,
            cache=cache,
            use_cache=True,
            logits_to_keep=1,
        )
        logits = result.logits[:, -1, :].float()
        if len(lead) < n:  # every row gets its prefilled row's cache, mask and logits
            idx = torch.tensor(twin, dtype=torch.long, device=dev)
            result.cache.batch_select_indices(idx)
            mask, positions, logits = mask[idx], positions[idx], logits[idx]
        gens = [torch.Generator().manual_seed(int(s)) for s in seeds]
        if self.fixed is not None:
            self.fixed.load(result.cache, mask, positions[:, -1:], max(max_new))
            return self._decode_fixed(contexts, logits, max_new, gens, keep)
        cache = result.cache if cache is not None else buffered(result.cache, max(max_new))
        out = _Rows(n)
        nxt = torch.full((n,), self.pad_id, dtype=torch.long, device=dev)
        live = list(range(n))  # the original row of each batch row
        stay = [b for b, i in enumerate(live) if max_new[i] > 0]
        while True:
            if len(stay) < len(live):  # finished rows leave before the next forward pass
                idx = torch.tensor(stay, dtype=torch.long, device=dev)
                cache.batch_select_indices(idx)
                mask, positions, logits, nxt = mask[idx], positions[idx], logits[idx], nxt[idx]
                live = [live[b] for b in stay]
            if not live:
                break
            if out.ids[live[0]]:  # not the first token: feed every live row's last id
                mask = torch.cat(
                    [mask, torch.ones((len(live), 1), dtype=torch.long, device=dev)], dim=1
                )
                positions = positions[:, -1:] + 1
                result = self.model(
                    input_ids=nxt[:, None],
                    attention_mask=mask,
                    position_ids=positions,
                    cache=cache,
                    use_cache=True,
                )
                logits = result.logits[:, -1, :].float()
            scores = self._penalized(logits, out, live)
            nxt, lps = self._sample(scores, [gens[i] for i in live])
            if out.owed:
                self._give(out, live, nxt, lps, scores)
            stay = []
            for b, (i, tok, lp) in enumerate(zip(live, nxt.tolist(), lps.tolist(), strict=True)):
                if self._add(out, i, tok, lp, max_new[i]):
                    stay.append(b)
                elif keep:  # its cache holds the context and this turn but the last token
                    self._pasts.put(
                        contexts[i] + out.ids[i][:-1],
                        row_past(map(layer_kv, cache.layers), b, mask[b].nonzero()[:, 0]),
                    )
        self.generated_tokens += sum(len(r) for r in out.ids)
        return out.sampled()

    def _decode_fixed(
        self,
        contexts: list[list[int]],
        logits: torch.Tensor,
        max_new: list[int],
        gens: list[torch.Generator],
        keep: bool,
    ) -> list[Sampled]:
        """`_decode`'s loop over the loaded `FixedDecode`: finished rows stay in the batch, ignored."""
        assert self.fixed is not None
        n = len(contexts)
        dev = self.model.device
        out = _Rows(n)
        nxt = torch.full((n,), self.pad_id, dtype=torch.long, device=dev)
        live = [i for i in range(n) if max_new[i] > 0]
        while live:
            idx = torch.tensor(live, dtype=torch.long, device=dev)
            scores = self._penalized(logits[idx], out, live)
            tok, lps = self._sample(scores, [gens[i] for i in live])
            if out.owed:
                self._give(out, live, tok, lps, scores)
            nxt[idx] = tok
            still = []
            for i, t, lp in zip(live, tok.tolist(), lps.tolist(), strict=True):
                if self._add(out, i, t, lp, max_new[i]):
                    still.append(i)
                elif keep:  # the buffers hold its context and this turn but the last token
                    self._pasts.put(contexts[i] + out.ids[i][:-1], self.fixed.row_past(i))
            live = still
            if live:
                logits = self.fixed.step(nxt)
        self.generated_tokens += sum(len(r) for r in out.ids)
        return out.sampled()

    def _add(self, out: _Rows, row: int, tok: int, logprob: float, limit: int) -> bool:
        """Append a row's token; whether the row goes on. A think still open at the turn's
        budget-th token, or opened after it, is owed `</think>`, given over the next steps by
        `_give`: the budget is the turn's, so a policy cannot chain thinks past it."""
        out.ids[row].append(tok)
        out.logprobs[row].append(logprob)
        if self._stopped(out.ids[row], limit):
            return False
        budget, n = self.sampling.think_budget, len(out.ids[row])
        if budget and n >= budget and row not in out.owed and (n == budget or tok in self._closers):
            text = self.tokenizer.decode(out.ids[row], skip_special_tokens=False)
            if text.rfind("<think>") > text.rfind("</think>"):
                out.owed[row] = list(self._think_close)
        return True

    def _give(
        self,
        out: _Rows,
        rows: list[int],
        tok: torch.Tensor,
        lps: torch.Tensor,
        logits: torch.Tensor,
    ) -> None:
        """Rows owed ids take the next one in place of their sample (in `tok`, in place), with its
        log-probability under the sampling temperature, as a sampled id would have."""
        for b, i in enumerate(rows):
            if i not in out.owed:
                continue
            t = out.owed[i].pop(0)
            if not out.owed[i]:
                del out.owed[i]
            tok[b] = t
            lps[b] = self._log_probs(logits[b])[t]
            out.forced_at[i].append(len(out.ids[i]))

    def _past(self, context: list[int]) -> tuple[int, Past | None]:
        """(tokens of `context` already cached, their past): the episode's previous turn, else its system turn.

        Every episode of a run shares the system prompt, so its cache is computed once and
        reused by every row of every call; later turns reuse the cache of the turn before.
        """
        start, past = self._pasts.take(context)
        if past is not None:
            return start, past
        end = self._system_end(context)
        if end == 0:
            return 0, None
        prefix = tuple(context[:end])
        if prefix not in self._prefixes:
            out = self.model(
                input_ids=torch.tensor([prefix], device=self.model.device),
                use_cache=True,
                logits_to_keep=1,
            )
            past = tuple((layer.keys[0], layer.values[0]) for layer in out.cache.layers)
            self._prefixes = {prefix: past}  # one system prompt per run: keep the latest only
        return end, self._prefixes[prefix]

    def _system_end(self, context: list[int]) -> int:
        """Length of the system turn (up to its end-of-turn id); 0 when too short to be worth caching."""
        end = next((j for j, t in enumerate(context) if t in self.stop_ids), -1) + 1
        return end if _MIN_PREFIX <= end < len(context) else 0

    def _penalized(self, logits: torch.Tensor, out: _Rows, rows: list[int]) -> torch.Tensor:
        """`logits` (a row per `rows`) less the presence penalty at the ids each row has generated."""
        penalty = self.sampling.presence_penalty
        if not penalty or not any(out.ids[i] for i in rows):
            return logits
        seen = torch.zeros_like(logits, dtype=torch.bool)  # on the logits' device: no copy a step
        for b, i in enumerate(rows):
            seen[b, out.ids[i]] = True
        return logits - penalty * seen

    def _sample(
        self, logits: torch.Tensor, gens: Sequence[torch.Generator]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Every row's next id and its log-probability, in tensor ops over the whole batch.

        Sampling is by inverse CDF: each row draws one uniform from its own CPU generator, so a
        row's ids depend only on its seed and its logits, whichever rows share the batch or
        whichever device holds the logits; the arithmetic stays on that device (copying a
        batch of vocabulary-wide rows to the CPU each token cost more than the model's step).
        """
        t, top_p = self.sampling.temperature, self.sampling.top_p
        if t == 0:
            tok = logits.argmax(-1)
            return tok, self._log_probs(logits).gather(1, tok[:, None])[:, 0]
        logp = self._log_probs(logits)
        probs, order = logp.exp(), None
        if top_p < 1:
            probs, order = torch.sort(probs, -1, descending=True)
            drop = probs.cumsum(-1) - probs > top_p  # keep the smallest set reaching top_p
            probs = probs.masked_fill(drop, 0.0)
        cdf = probs.double().cumsum(-1)
        u = torch.stack([torch.rand((), generator=g, dtype=torch.float64) for g in gens])
        u = u.to(logits.device)
        pos = torch.searchsorted(cdf, (u * cdf[:, -1])[:, None], right=True)[:, 0]
        pos = pos.clamp(max=logits.shape[-1] - 1)
        tok = pos if order is None else order.gather(1, pos[:, None])[:, 0]
        return tok, logp.gather(1, tok[:, None])[:, 0]

    def _log_probs(self, logits: torch.Tensor) -> torch.Tensor:
        """Log-probabilities under the sampling temperature (greedy: under the raw logits)."""
        return torch.log_softmax(logits / (self.sampling.temperature or 1.0), -1)

    def _stopped(self, ids: list[int], limit: int) -> bool:
        if ids[-1] in self.stop_ids or len(ids) >= limit:
            return True
        if (
            ids[-1] not in self._closers
        ):  # a stop string can only end in a token holding its last character
            return False
        tail = self.tokenizer.decode(ids[-_TAIL_TOKENS:], skip_special_tokens=False)
        return any(tail.endswith(s) or s in tail[-(len(s) + 8) :] for s in STOP_STRINGS)


Sampled = tuple[list[int], list[float], tuple[int, ...]]  # ids, logprobs, forced_at


class _Rows:
    """What each row of a decode call has produced, and the ids it is owed (`SamplingConfig.think_budget`)."""

    def __init__(self, n: int) -> None:
        self.ids: list[list[int]] = [[] for _ in range(n)]
        self.logprobs: list[list[float]] = [[] for _ in range(n)]
        self.forced_at: list[list[int]] = [[] for _ in range(n)]
        self.owed: dict[int, list[int]] = {}

    def sampled(self) -> list[Sampled]:
        return [
            (ids, lps, tuple(at))
            for ids, lps, at in zip(self.ids, self.logprobs, self.forced_at, strict=True)
        ]


def prefill_rows(contexts: Sequence[Sequence[int]]) -> list[int]:
    """Each row's row in the prefill: rows with the same context share one (the G rollouts of a
    GRPO group that start from a teacher's turns share hundreds of tokens), numbered in order."""
    firsts: dict[tuple[int, ...], int] = {}
    return [firsts.setdefault(tuple(c), len(firsts)) for c in contexts]


@functools.lru_cache(maxsize=8)  # a GRPO run builds a policy over the same tokenizer every step
def _closing_ids(tokenizer: Any) -> frozenset[int]:
    """Ids whose text holds the last character of a stop string: only they can complete one."""
    last = {s[-1] for s in STOP_STRINGS}
    texts = tokenizer.batch_decode([[i] for i in range(len(tokenizer))], skip_special_tokens=False)
    return frozenset(i for i, text in enumerate(texts) if any(c in text for c in last))
