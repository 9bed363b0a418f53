"""wikisim for verl: `BaseTool` subclasses for search, visit and python, listed in `verl_tools.yaml`.

verl builds each tool from the YAML (`class_name`, `config`, `tool_schema`), then per trajectory
calls `create` -> `execute(instance_id, parameters)` -> `release`. `execute` answers with the env's
own observation text, a step reward of 0 (the answer reward is the trainer's), and metrics
(`ok`, `chars`). A tool reads a local index (`config.index`) or a `wikisim serve` instance
(`config.url`); tools with the same source share one backend per process.

verl's schema model accepts one `type` per argument, so the YAML gives each argument a single
type (a string), where the env's own schemas also accept a list of queries or URLs.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any
from uuid import uuid4

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from wikisim.errors import ConfigError
from wikisim.index.base import DEFAULT_RETRIEVER, RetrieverName
from wikisim.tools.registry import ToolBox, default_toolbox

TOOL_CONFIG = Path(__file__).with_name("verl_tools.yaml")


@functools.lru_cache(maxsize=8)
def _toolbox(
    index: str | None, url: str | None, retriever: RetrieverName, search_k: int, visit_tokens: int
) -> ToolBox:
    if (index is None) == (url is None):
        raise ConfigError(
            "a wikisim verl tool needs exactly one of config.index (a built index directory) "
            f"and config.url (a wikisim serve URL); got index={index!r}, url={url!r}"
        )
    if url is not None:
        from wikisim.backends.remote import RemoteBackend

        backend: Any = RemoteBackend(url)
    else:
        from wikisim.backends.wiki import WikiBackend

        backend = WikiBackend(index, retriever=retriever)
    return default_toolbox(backend, k=search_k, visit_tokens=visit_tokens, python=True)


class WikiSimTool(BaseTool):
    """One env tool (`tool_name`) for verl; the subclasses only name it."""

    tool_name = ""

    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema) -> None:
        super().__init__(config, tool_schema)
        if self.name != self.tool_name:
            raise ConfigError(
                f"{type(self).__name__} serves the {self.tool_name!r} tool; its tool_schema names "
                f"{self.name!r}"
            )
        self.toolbox = _toolbox(
            config.get("index"),
            config.get("url"),
            config.get("retriever", DEFAULT_RETRIEVER),
            int(config.get("search_k", 10)),
            int(config.get("visit_tokens", 1500)),
        )
        self.instances: dict[str, int] = {}  # instance id -> calls made

    async def create(
        self, instance_id: str | None = None, **kwargs: Any
    ) -> tuple[str, ToolResponse]:
        instance_id = instance_id or str(uuid4())
        self.instances[instance_id] = 0
        return instance_id, ToolResponse()

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[ToolResponse, float, dict]:
        result = self.toolbox.call(self.tool_name, parameters)
        self.instances[instance_id] = self.instances.get(instance_id, 0) + 1
        return ToolResponse(text=result.text), 0.0, {"ok": result.ok, "chars": len(result.text)}

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        self.instances.pop(instance_id, None)


class VerlSearchTool(WikiSimTool):
    tool_name = "search"


class VerlVisitTool(WikiSimTool):
    tool_name = "visit"


class VerlPythonTool(WikiSimTool):
    tool_name = "python"
