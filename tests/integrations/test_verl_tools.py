"""The verl adapter, loaded by verl's own `initialize_tools_from_config` from the shipped YAML and driven
through verl's `BaseTool` lifecycle (create / execute / release)."""

from __future__ import annotations

import asyncio

import pytest
from verl.tools.base_tool import BaseTool
from verl.tools.schemas import ToolResponse
from verl.tools.tool_registry import initialize_tools_from_config

from wikisim.backends.wiki import WikiBackend
from wikisim.errors import ConfigError
from wikisim.integrations.verl_tools import TOOL_CONFIG, VerlSearchTool
from wikisim.tools.registry import default_toolbox


@pytest.fixture(scope="module")
def tools(sample_index):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WIKISIM_INDEX", str(sample_index))
        return {t.name: t for t in initialize_tools_from_config(str(TOOL_CONFIG))}


async def _trajectory(tool: BaseTool, calls: list[dict]) -> list[tuple[ToolResponse, float, dict]]:
    instance_id, created = await tool.create()
    assert created == ToolResponse()
    out = [await tool.execute(instance_id, parameters) for parameters in calls]
    assert tool.instances[instance_id] == len(calls)
    await tool.release(instance_id)
    assert instance_id not in tool.instances
    return out


def test_yaml_tools_are_verl_base_tools(tools):
    assert sorted(tools) == ["python", "search", "visit"]
    assert all(isinstance(t, BaseTool) for t in tools.values())
    schema = tools["visit"].get_openai_tool_schema()
    assert schema.function.parameters.required == ["url", "goal"]


def test_execute_returns_the_env_observation(tools, sample_index):
    toolbox = default_toolbox(WikiBackend(sample_index), python=True)
    search = [{"query": "Apollo 11"}, {"query": ""}]
    for (response, reward, metrics), call in zip(
        asyncio.run(_trajectory(tools["search"], search)), search, strict=True
    ):
        local = toolbox.call("search", call)
        assert (
            response.text == local.text
            and reward == 0.0
            and metrics == {"ok": local.ok, "chars": len(local.text)}
        )
    visit = {"url": "https://en.wikipedia.org/wiki/Apollo_11", "goal": "who commanded the mission"}
    ((response, _, metrics),) = asyncio.run(_trajectory(tools["visit"], [visit]))
    assert response.text == toolbox.call("visit", visit).text and metrics["ok"]
    ((response, _, metrics),) = asyncio.run(
        _trajectory(tools["python"], [{"code": "print(6 * 7)"}])
    )
    assert "42" in response.text and metrics["ok"]


def test_bad_configs_are_clear(sample_index, tools):
    schema = tools["search"].tool_schema
    with pytest.raises(ConfigError, match="exactly one of config.index"):
        VerlSearchTool({"type": "native"}, schema)
    with pytest.raises(ConfigError, match="serves the 'search' tool"):
        VerlSearchTool({"type": "native", "index": str(sample_index)}, tools["visit"].tool_schema)
