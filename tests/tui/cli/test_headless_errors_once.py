"""Headless `-p`: a failure is printed once on stderr (issue 30, item 21). A reactive compaction that
fails ends the turn with that failure: it was printed when it happened and again as the turn's error."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import api_env, ctxtui
from tests.support.fakeapi import FakeAnthropicServer, error_reply, prompt_too_long, tool_reply

pytestmark = pytest.mark.slow


def test_a_failed_reactive_compaction_is_printed_once(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    fake_api.script(prompt_too_long(), *[error_reply(400, "invalid_request_error", "the summary was refused")] * 3)
    result = ctxtui("-p", "hello there", "--workdir", str(tmp_path), env=api_env(fake_api))
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    failures = [line for line in lines if "reactive compaction" in line]
    assert len(failures) == 1, result.stderr
    assert failures[0].startswith("ctxtui: reactive compaction: ") and "the summary was refused" in failures[0]


def test_an_api_error_that_ends_the_turn_is_printed_once(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a line\n" * 10, encoding="utf-8")
    fake_api.script(tool_reply([("toolu_1", "read_file", {"path": "a.txt"})]),
                    *[error_reply(400, "invalid_request_error", "no more")] * 3)
    result = ctxtui("-p", "read a.txt", "--workdir", str(tmp_path), env=api_env(fake_api))
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if "no more" in line]
    assert len(errors) == 1, result.stderr
