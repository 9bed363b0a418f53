"""The answer tool's own call (the env ends the episode on it; see tests/test_env.py)."""

from fakes.turns import call_tool

from wikisim.tools.answer import AnswerTool


def test_answer_tool() -> None:
    assert call_tool(AnswerTool(), answer=" Paris ") == "Final answer recorded: Paris"
    assert call_tool(AnswerTool(), answer="").startswith('Error: answer argument "answer" is empty')
    assert call_tool(AnswerTool()).startswith(
        'Error: answer is missing the required argument "answer"'
    )
