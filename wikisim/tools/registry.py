"""The env's tool box: tools by name, their schemas for the prompt, and one guarded call.

`run` never raises: a tool that fails unexpectedly becomes an error observation, since an
exception out of `env.step` would end every episode of a vector env at once.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wikisim.backends.base import Backend
from wikisim.errors import ConfigError, ToolCallError
from wikisim.tools.answer import AnswerTool
from wikisim.tools.arguments import check_arguments
from wikisim.tools.base import Tool, ToolOutput
from wikisim.tools.protocol import ToolCall, tool_parameters
from wikisim.tools.scholar import ScholarTool
from wikisim.tools.search import SearchTool
from wikisim.tools.visit import VisitTool

PYTHON_MODULE = "wikisim.tools.python_sandbox"


@dataclass(frozen=True)
class ToolResult:
    name: str
    text: str
    ok: bool  # False when the text is an error the tool reported (or a crash turned into one)
    latency_s: float  # wall time: reported in info, never part of an observation


def python_available() -> bool:
    return importlib.util.find_spec(PYTHON_MODULE) is not None


class ToolBox:
    def __init__(self, tools: Sequence[Tool]) -> None:
        self.tools: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in self.tools:
                raise ConfigError(f"two tools are named {tool.name!r}; tool names must be unique")
            self.tools[tool.name] = tool

    @property
    def names(self) -> list[str]:
        return list(self.tools)

    @property
    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema for t in self.tools.values()]

    @property
    def parameters(self) -> dict[str, Mapping[str, Any]]:
        """Tool name -> JSON-schema of its arguments: what `parse_turn` checks against."""
        return tool_parameters(self.schemas)

    def run(self, call: ToolCall) -> ToolResult:
        """Run a call whose arguments the turn parser has checked."""
        start = time.perf_counter()
        try:
            out = self.tools[call.name](**call.arguments)
        except Exception as e:  # a tool bug must not end the episode; the message says which tool
            out = ToolOutput(
                f"Error: the {call.name} tool failed unexpectedly ({type(e).__name__}: {e}). Try another call.",
                ok=False,
            )
        return ToolResult(call.name, out.text, out.ok, time.perf_counter() - start)

    def call(self, name: str, arguments: Any) -> ToolResult:
        """Check then run a call made directly (servers, adapters): a bad call is an error result."""
        if name not in self.tools:
            return ToolResult(
                name,
                f"Error: unknown tool {name!r}; available tools: {', '.join(self.tools)}.",
                False,
                0.0,
            )
        try:
            check_arguments(name, self.parameters[name], arguments)
        except ToolCallError as e:
            return ToolResult(name, f"Error: {e}", False, 0.0)
        return self.run(ToolCall(name, dict(arguments)))


def default_toolbox(
    backend: Backend,
    *,
    k: int = 10,
    visit_tokens: int = 1500,
    python: bool | None = None,
    python_limits: dict[str, Any] | None = None,
) -> ToolBox:
    """search, visit, scholar, python (when the sandbox is installed, or `python=True`), answer.

    `python_limits` are SandboxConfig fields (wall_seconds, cpu_seconds, memory_mb, ...).
    """
    tools: list[Tool] = [
        SearchTool(backend, k),
        VisitTool(backend, visit_tokens),
        ScholarTool(backend, k),
    ]
    if python or (python is None and python_available()):
        from wikisim.tools.python_sandbox import PythonTool, SandboxConfig

        tools.append(PythonTool(SandboxConfig(**(python_limits or {}))))
    tools.append(AnswerTool())
    return ToolBox(tools)
