"""The answer tool's own call (the env ends the episode on it; see tests/test_env.py)."""

from wikisim.tools.answer import AnswerTool


def test_answer_tool() -> None:
    assert AnswerTool()(answer=" Paris ") == "Final answer recorded: Paris"
    assert AnswerTool()(answer="").startswith('Error: answer argument "answer" is empty')
    assert AnswerTool()().startswith('Error: answer is missing the required argument "answer"')
