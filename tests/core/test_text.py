"""core.text: `visible_parts` says which parts of `visible` are escapes it made; plural and article."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from core.text import article, plural, visible, visible_parts

# text with the characters that matter: controls, hiding characters, lone surrogates, backslashes
TRICKY = st.text(st.sampled_from(list("ab \\x1[\n\t\x1b\r\x00\x7f\x9b\u202e\u200b\ufeff\udcff\U000e0041")), max_size=40)


@settings(max_examples=300, deadline=None)
@given(TRICKY | st.text(max_size=40))
def test_the_parts_join_to_visible_and_only_made_escapes_are_marked(text: str) -> None:
    parts = list(visible_parts(text))
    assert "".join(piece for piece, _ in parts) == visible(text)
    for piece, escape in parts:
        assert piece
        if escape:
            assert piece.startswith("\\") and visible(piece) == piece
        else:
            assert piece in text  # plain parts are the text as it was: a typed `\x1b` stays unmarked


def test_a_typed_backslash_escape_is_not_marked() -> None:
    assert list(visible_parts("\x1b[2K and \\x1b[2K")) == [("\\x1b", True), ("[2K and \\x1b[2K", False)]


def test_plural_and_article() -> None:
    assert [plural(1, "line"), plural(2, "line"), plural(1_204, "match", "matches")] == [
        "1 line", "2 lines", "1,204 matches"]
    assert [article("bash"), article("edit_file"), article("write_file"), article("")] == ["a", "an", "a", "a"]
