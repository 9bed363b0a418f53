"""Weight sync for server-side generation: save a checkpoint, have the server reload it, confirm.

Strictly on-policy GRPO with a generation server (vLLM, SGLang, `agent.rollout.model_server`) needs
the server to sample with the weights of the last update. After each update the main
process saves the weights (`save_pretrained`, LoRA merged) to `sync_dir/step-N` and has the
server load them, in that server's own wire format; no batch is sampled before it answers.

- `sglang`: `POST /update_weights_from_disk {"model_path", "weight_version"}`, then
  `GET /model_info` must report that `weight_version`.
- `vllm` (`vllm serve` with `VLLM_SERVER_DEV_MODE=1`): `POST /collective_rpc
  {"method": "reload_weights", "kwargs": {"weights_path", "is_checkpoint_format": true}}`,
  which returns once every worker holds the new weights, then `POST /reset_prefix_cache`
  so no KV cache computed with the old weights is reused. vLLM has no weight version to
  read back; a 200 from both is the confirmation.

`agent.rollout.model_server` speaks both, so both paths run in the tests.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import httpx
import torch

from agent.rollout.model_server import weights_sha256
from agent.train.config import SYNC_PROTOCOLS
from agent.train.loop import plain_model, save_plain
from wikisim.errors import BackendError, ConfigError


def server_root(base_url: str) -> str:
    """`http://host:port/v1` -> `http://host:port` (the reload and info routes are not under /v1)."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


class WeightSync:
    """Pushes the trainer's weights to one generation server; `history` has one entry per push."""

    def __init__(
        self,
        base_url: str,
        sync_dir: str | Path,
        tokenizer: Any,
        accelerator: Any,
        protocol: str = "sglang",
        timeout_s: float = 600.0,
    ) -> None:
        if protocol not in SYNC_PROTOCOLS:
            raise ConfigError(
                f"weight sync protocol must be one of {SYNC_PROTOCOLS}, got {protocol!r}"
            )
        self.url, self.dir, self.protocol = server_root(base_url), Path(sync_dir), protocol
        self.tokenizer, self.accelerator = tokenizer, accelerator
        self.timeout_s = timeout_s
        self.history: list[dict[str, Any]] = []

    def push(self, model: torch.nn.Module, step: int) -> None:
        """Make the server generate with `model`'s current weights (all processes call this)."""
        if self.accelerator.is_main_process:
            plain = plain_model(self.accelerator, model)
            sha = weights_sha256(plain)
            version = f"step-{step}-{sha[:16]}"
            path = save_plain(plain, self.tokenizer, self.dir / f"step-{step}")
            info = self._reload(path.resolve(), version)
            for old in self.dir.glob("step-*"):  # the server holds the new weights in memory now
                if old.is_dir() and old.name != path.name:
                    shutil.rmtree(old, ignore_errors=True)
            self.history.append(
                {
                    "step": step,
                    "weight_version": version,
                    "sha256": sha,
                    "path": str(path.resolve()),
                    "server": info,
                }
            )
        self.accelerator.wait_for_everyone()

    def _reload(self, path: Path, version: str) -> dict[str, Any]:
        with httpx.Client(base_url=self.url, timeout=self.timeout_s) as client:
            try:
                return (
                    self._sglang(client, path, version)
                    if self.protocol == "sglang"
                    else self._vllm(client, path)
                )
            except (httpx.HTTPError, ValueError) as e:
                raise BackendError(
                    f"{self.url}: weight reload of {path} failed ({e!r}); is the generation server "
                    "running, and can it read the sync_dir?"
                ) from e

    def _sglang(self, client: httpx.Client, path: Path, version: str) -> dict[str, Any]:
        reply = client.post(
            "/update_weights_from_disk", json={"model_path": str(path), "weight_version": version}
        )
        body = reply.json()
        if reply.status_code != 200 or not body.get("success"):
            raise BackendError(
                f"{self.url}/update_weights_from_disk refused {path}: HTTP {reply.status_code} {body}"
            )
        info = client.get("/model_info").json()
        if info.get("weight_version") != version:
            raise BackendError(
                f"{self.url}/model_info reports weight_version={info.get('weight_version')!r} after "
                f"loading {version!r}: the server would sample off-policy"
            )
        return info

    def _vllm(self, client: httpx.Client, path: Path) -> dict[str, Any]:
        call = {
            "method": "reload_weights",
            "kwargs": {"weights_path": str(path), "is_checkpoint_format": True},
        }
        reply = client.post("/collective_rpc", json=call)
        if reply.status_code != 200:
            hint = (
                " (is the server started with VLLM_SERVER_DEV_MODE=1?)"
                if reply.status_code == 404
                else ""
            )
            raise BackendError(
                f"{self.url}/collective_rpc reload_weights of {path} failed: HTTP "
                f"{reply.status_code} {reply.text[:300]}{hint}"
            )
        reset = client.post("/reset_prefix_cache")
        if reset.status_code != 200:
            raise BackendError(
                f"{self.url}/reset_prefix_cache failed after loading {path}: HTTP {reset.status_code}; "
                "cached prefixes would still hold the old weights' keys and values"
            )
        return reply.json() if reply.content else {}
