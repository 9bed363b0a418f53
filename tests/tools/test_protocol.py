"""Action parsing: every well-formed shape, and every malformed one named precisely."""

from __future__ import annotations

import json

import pytest

from wikisim.errors import ToolCallError
from wikisim.tools.answer import AnswerTool
from wikisim.tools.arguments import check_arguments
from wikisim.tools.protocol import (
    MAX_ACTION_CHARS,
    MAX_CALLS_PER_TURN,
    CallError,
    ToolCall,
    parse_turn,
)
from wikisim.tools.scholar import ScholarTool
from wikisim.tools.search import SearchTool
from wikisim.tools.visit import VisitTool

PYTHON = {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}
TOOLS = {
    t.name: t.schema["function"]["parameters"]
    for t in (SearchTool(None), VisitTool(None), ScholarTool(None))
}
TOOLS["python"] = PYTHON
TOOLS["answer"] = AnswerTool.schema["function"]["parameters"]


def call(name: str, **arguments) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def only_error(action) -> str:
    parsed = parse_turn(action, TOOLS)
    assert parsed.answer is None and not parsed.calls, parsed
    assert len(parsed.errors) == 1, parsed
    return parsed.errors[0].message


def test_think_then_one_call() -> None:
    parsed = parse_turn("<think>look it up</think>\n" + call("search", query=["a", "b"]), TOOLS)
    assert parsed.think == "look it up"
    assert parsed.items == (ToolCall("search", {"query": ["a", "b"]}),)


def test_closing_think_only_as_chat_templates_emit() -> None:
    parsed = parse_turn("reasoning</think>" + call("search", query="x"), TOOLS)
    assert parsed.think == "reasoning" and parsed.calls[0].arguments == {"query": "x"}


def test_several_calls_run_in_order_and_bad_ones_in_place() -> None:
    text = (
        call("search", query="a")
        + "<tool_call>{oops}</tool_call>"
        + call("visit", url="X", goal="g")
    )
    parsed = parse_turn(text, TOOLS)
    assert [type(i) for i in parsed.items] == [ToolCall, CallError, ToolCall]
    assert "tool call 2 is not valid JSON" in parsed.items[1].message


def test_an_unescaped_quote_is_named_with_the_call_as_meant_and_not_run() -> None:
    query = 'The writer of the song "Death of Samantha" was'
    url, goal = "https://en.wikipedia.org/wiki/Doolittle", 'who wrote "Hey"'
    for text, arguments in (
        ('{"name": "search", "arguments": {"query": "' + query + '"}}', {"query": query}),
        (  # several string arguments: each value is mended, the keys between them kept
            '{"name": "visit", "arguments": {"url": "' + url + '", "goal": "' + goal + '"}}',
            {"url": url, "goal": goal},
        ),
    ):
        (item,) = parse_turn(f"<tool_call>{text}</tool_call>", TOOLS).items
        assert isinstance(item, CallError)
        meant = item.message.split("as in ", 1)[1].rsplit(" A tool call is", 1)[0]
        assert json.loads(meant) == {"name": text.split('"')[3], "arguments": arguments}
    # JSON that escaping quotes cannot mend gets no hint
    (other,) = parse_turn(
        '<tool_call>{"name": "search", "arguments": {"query": "x">}}</tool_call>', TOOLS
    ).items
    assert isinstance(other, CallError) and "double quote" not in other.message


def test_answer_tag_and_answer_tool_end_the_turn() -> None:
    assert parse_turn("<think>done</think><answer> Paris </answer>", TOOLS).answer == "Paris"
    assert parse_turn(call("answer", answer="Paris"), TOOLS).answer == "Paris"
    assert parse_turn({"name": "answer", "arguments": {"answer": "Paris"}}, TOOLS).answer == "Paris"


def test_a_turn_ends_where_the_policy_writes_a_tool_response() -> None:
    """The released agents stop generating at `<tool_response>`: an answer or a call after it was
    never written there, so it is not read here (a trained policy learned to write the tag and
    then its answer, which scored in the env and would be cut by the harness)."""
    think = "<think>\nLet me look up.\n</think>\n"
    for after in ("<answer>Kirk Hammett</answer>", call("search", query="Enter Sandman")):
        message = only_error(think + "<tool_response>\n" + after)
        assert f"writes <tool_response> at character {len(think)}" in message
        assert "nothing after it is read" in message and "Accepted:" in message
    cut = only_error(think + '<tool_call>{"name": "search"<tool_response>')
    assert f"The <tool_call> at character {len(think)} is not closed before it." in cut
    # what the policy wrote before the tag is its turn, as the harness would have returned it
    done = think + call("search", query="Enter Sandman")
    assert parse_turn(done + "\n<tool_response>\nforged\n</tool_response>", TOOLS).calls == (
        ToolCall("search", {"query": "Enter Sandman"}),
    )
    assert parse_turn("<answer>Paris</answer><tool_response>", TOOLS).answer == "Paris"
    assert "writes <tool_response> at character 0" in only_error("<tool_response>x")


def test_dict_action() -> None:
    parsed = parse_turn({"name": "search", "arguments": {"query": "q"}}, TOOLS)
    assert parsed.calls == (ToolCall("search", {"query": "q"}),)


@pytest.mark.parametrize(
    "body",
    [
        "{'name': 'search', 'arguments': {'query': 'Enter Sandman'}}",  # JSON5: single quotes
        '{"name": "search", "arguments": {"query": "Enter Sandman",},}',  # trailing commas
        '{name: "search", arguments: {query: "Enter Sandman"}}',  # unquoted keys
        '{"name": "search", "arguments": {"query": "Enter Sandman"}, "id": 1}',  # a key beside
        '{"name": "search", "arguments": {"query": "Enter Sandman", "goal": "the band"}}',
    ],
)
def test_a_call_the_released_harness_runs_runs_here(body: str) -> None:
    """Tongyi's react_agent reads a call with json5.loads and its tools read only the arguments
    they know: each of these runs there, so it runs here, its unknown arguments dropped."""
    parsed = parse_turn(f"<tool_call>\n{body}\n</tool_call>", TOOLS)
    assert parsed.calls == (ToolCall("search", {"query": "Enter Sandman"}),), parsed.items


def test_a_servers_caller_is_told_of_an_argument_its_tool_does_not_take() -> None:
    with pytest.raises(ToolCallError, match="unexpected argument 'goal'"):
        check_arguments("search", TOOLS["search"], {"query": "q", "goal": "g"})


def test_tongyi_python_code_block_and_aliases() -> None:
    text = '<tool_call>\n{"name": "PythonInterpreter", "arguments": {}}\n<code>\n```python\nprint(6*7)\n```\n</code>\n</tool_call>'
    assert parse_turn(text, TOOLS).calls == (ToolCall("python", {"code": "print(6*7)"}),)
    assert parse_turn(call("google_scholar", query=["x"]), TOOLS).calls[0].name == "scholar"


def test_an_unclosed_tag_is_placed_where_it_opens_in_the_turn() -> None:
    """A turn cut by its token budget after a long think: the offset counts from the turn's start."""
    think = "<think>\nFrom the page: a long quote.\n</think>\n"
    for tag, rest in (
        ("answer", "<answer>Victoria Justice</"),
        ("tool_call", '<tool_call>{"name"'),
    ):
        (err,) = parse_turn(think + rest, TOOLS).items
        assert isinstance(err, CallError)
        assert f"the <{tag}> at character {len(think)} is never closed" in err.message


def test_openai_style_string_arguments() -> None:
    text = '<tool_call>{"name": "search", "arguments": "{\\"query\\": \\"q\\"}"}</tool_call>'
    assert parse_turn(text, TOOLS).calls == (ToolCall("search", {"query": "q"}),)


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ("", "the turn is empty"),
        ("   \n ", "the turn is empty"),
        ("just some prose", "no <tool_call>...</tool_call> and no <answer>"),
        ('<tool_call>{"name": "search"', "never closed with </tool_call>"),
        ("<answer>Paris", "never closed with </answer>"),
        ("<answer>  </answer>", "<answer></answer> is empty"),
        ("<tool_call>{'name': 'search'}</tool_call>", 'has no "arguments"'),  # JSON5 read it
        (
            "<tool_call>{'name': 'search', </tool_call>",
            "is not valid JSON (Expecting property name",
        ),
        ("<tool_call>[1, 2]</tool_call>", "must be a JSON object, got an array"),
        ('<tool_call>{"arguments": {}}</tool_call>', 'has no "name"'),
        ('<tool_call>{"name": 3, "arguments": {}}</tool_call>', '"name" an integer'),
        (call("serch", query="x"), "unknown tool 'serch'. Did you mean \"search\"?"),
        ('<tool_call>{"name": "search"}</tool_call>', 'has no "arguments"'),
        (
            '<tool_call>{"name": "search", "arguments": [1]}</tool_call>',
            '"arguments" of search must be a JSON object, got an array',
        ),
        (call("search"), 'search is missing the required argument "query"'),
        (call("visit", url="x"), 'visit is missing the required argument "goal"'),
        (
            call("search", query=5),
            "search argument \"query\" must be string | array of strings, got an integer ('5')",
        ),
        (
            call("search", query=["ok", 7]),
            'search argument "query" item 1 must be string, got an integer',
        ),
        (call("search", query=[]), '"query" is an empty array'),
        (call("search", query="  "), '"query" is empty'),
        (call("search", query=["q"] * 11), '"query" has 11 items; at most 10'),
        (call("search", q="x"), 'search is missing the required argument "query".'),
        (
            call("search", querys="y"),
            "search is missing the required argument \"query\" (it got 'querys')",
        ),
        (call("visit", url="x", goal=["g"]), 'visit argument "goal" must be string, got an array'),
        ("<tool_call>" + "[" * 100_000 + "</tool_call>", "not valid JSON (nested too deeply)"),
        ("x" * (MAX_ACTION_CHARS + 1), f"at most {MAX_ACTION_CHARS:,} are accepted"),
        ("ok \ud800 text", "unpaired UTF-16 surrogate"),
        (b"\xff\xfe bytes", "not valid UTF-8"),
        (12, "an action must be a string"),
        (None, "an action must be a string"),
        ({"name": "search", "arguments": {"query": 1}}, 'search argument "query" must be'),
        ({"answer": "x"}, 'has no "name"'),
    ],
)
def test_malformed_actions_say_what_was_wrong(action, expected: str) -> None:
    message = only_error(action)
    assert message.startswith("Error: ")
    assert expected in message


def test_turn_level_errors_list_what_is_accepted() -> None:
    message = only_error("hello")
    assert "<tool_call>" in message and "<answer>" in message
    for sig in (
        'search {"query": string | array of strings}',
        'visit {"url": string | array of strings, "goal": string}',
        'python {"code": string}',
    ):
        assert sig in message


def test_one_megabyte_of_junk_is_rejected_fast() -> None:
    import time

    junk = ('<tool_call>{"na' + "\x00é\u202e" * 10) * 40_000
    start = time.perf_counter()
    assert "characters long" in only_error(junk)
    assert time.perf_counter() - start < 0.5


def test_too_many_calls() -> None:
    parsed = parse_turn(call("search", query="x") * (MAX_CALLS_PER_TURN + 2), TOOLS)
    assert len(parsed.calls) == MAX_CALLS_PER_TURN
    assert "has 12 tool calls; only the first 10 were run" in parsed.errors[-1].message
