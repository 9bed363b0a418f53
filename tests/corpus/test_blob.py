import pytest

from wikisim.corpus.blob import pack, unpack, unpack_first
from wikisim.errors import CorpusError


def test_unpack_first_is_the_first_item_of_unpack() -> None:
    for record in (
        ['text with "quotes", é and \\n', None, [["a", 1, 2]], "x" * 5000],
        [[1, {"a": [2, 3]}], "rest"],
        ["only"],
    ):
        assert unpack_first(pack(record)) == unpack(pack(record))[0]


def test_unpack_first_of_a_record_that_is_not_a_list_names_it() -> None:
    with pytest.raises(CorpusError, match="not a list"):
        unpack_first(pack({"text": "a page"}))
