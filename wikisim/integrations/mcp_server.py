"""The env's tools as an MCP server, on the official `mcp` SDK (stdio or streamable HTTP).

Why: verl (`type: mcp` tools), verifiers' MCP environments, OpenEnv, rLLM and desktop agents
all consume MCP tools. Each tool is listed with the env's own JSON schema and answers with
the env's own observation text (`is_error` when the env would show an error), so an agent
gets the same bytes over MCP as from `env.step`. Calls run inline on the event loop, one at
a time, as `wikisim serve` answers: the index handles are not shared between threads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server

from wikisim import __version__
from wikisim.tools.registry import ToolBox

EXPOSED = (
    "search",
    "visit",
    "scholar",
    "python",
)  # "answer" ends an env episode; it has no meaning here


def build_server(toolbox: ToolBox, names: Sequence[str] = EXPOSED) -> Server[Any]:
    """A low-level MCP `Server` listing and calling `names` from `toolbox` (those it holds)."""
    chosen = [n for n in names if n in toolbox.tools]
    listed = []
    for name in chosen:
        function = toolbox.tools[name].schema["function"]
        listed.append(
            types.Tool(
                name=name, description=function["description"], input_schema=function["parameters"]
            )
        )

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in chosen:
            text = f"Error: no tool named {params.name!r}; this server has {', '.join(chosen)}."
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=text)], is_error=True
            )
        result = toolbox.call(params.name, dict(params.arguments or {}))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.text)], is_error=not result.ok
        )

    return Server(
        "wikisim",
        version=__version__,
        instructions="An offline, reproducible web built from Wikipedia: search it, visit pages, "
        "search the citations (scholar), run Python.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(server: Server[Any]) -> None:
    """Answer one client on this process's stdin/stdout until it closes them."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
