import random
import re

from wikisim.text import count_tokens, cut_to_tokens

TOKEN = re.compile(r"\w+|[^\w\s]")


def test_count_tokens_equals_the_token_regex_on_any_unicode():
    # Every BMP code point (lone surrogates too) shows up, next to spaces, underscores and digits.
    alphabet = [chr(c) for c in range(0x10000)] + ["\U0001f600", "\U00020000", "\U000e0020"]
    rng = random.Random(0)
    for _ in range(3000):
        text = "".join(
            rng.choice(alphabet) if rng.random() < 0.5 else rng.choice(" _a1.\n\xa0\u2003é")
            for _ in range(rng.randrange(0, 60))
        )
        n = count_tokens(text)
        assert type(n) is int and n == len(TOKEN.findall(text)), repr(text)


def test_count_tokens_on_prose_and_markup():
    assert count_tokens("") == 0
    assert count_tokens("Anarchism is a political philosophy.") == 6
    assert count_tokens("1. [Émile_Zola](https://en.wikipedia.org/wiki/Émile_Zola)") == 20
    assert count_tokens("snake_case x²  —  naïve") == 4


def test_cut_keeps_a_prefix_within_the_budget():
    text = "one two, three four."
    assert cut_to_tokens(text, 100) == text
    cut = cut_to_tokens(text, 3)
    assert cut == "one two, [...]" and count_tokens(cut.removesuffix(" [...]")) == 3
