"""`ctxtui inspect --report` on a real session file whose lines were tampered with: a sample's figures that
are no count or no amount (NaN, 1e400, a string, a negative number) are unknown, and a line nested deeper
than any reader can walk costs that line only. The real command, on a session a headless run against
the loopback fake wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.jsonlines import MAX_DEPTH
from tests.support.cli import api_env, ctxtui
from tests.support.fakeapi import FakeAnthropicServer, text_reply

pytestmark = pytest.mark.slow

MODEL = "claude-sonnet-5-5"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session file of one headless call (written once; each test tampers with its own copy)."""
    workdir = tmp_path_factory.mktemp("session")
    with FakeAnthropicServer() as fake_api:
        fake_api.script(text_reply("first answer"))
        result = ctxtui("-p", "hello", "--workdir", str(workdir), "--model", MODEL, env=api_env(fake_api))
    assert result.returncode == 0, result.stderr
    (session,) = (workdir / ".ctxtui" / "sessions").glob("*.jsonl")
    return session


@pytest.fixture
def session(pristine: Path, tmp_path: Path) -> Path:
    copy = tmp_path / pristine.name
    copy.write_bytes(pristine.read_bytes())
    return copy


def tamper(session: Path, raw: dict[str, str]) -> None:
    """Write each sample figure named in `raw` as that raw JSON text (no encoder writes 1e400)."""
    lines = session.read_text(encoding="utf-8").split("\n")
    for number, line in enumerate(lines):
        record = json.loads(line) if line else None
        if isinstance(record, dict) and record.get("kind") == "ContextSampled":
            sample = record["event"]["sample"]
            for key in raw:
                parent, _, name = key.rpartition(".")
                (sample[parent] if parent else sample)[name] = f"@@{key}@@"
            text = json.dumps(record)
            for key, value in raw.items():
                text = text.replace(f'"@@{key}@@"', value)
            lines[number] = text
    session.write_text("\n".join(lines), encoding="utf-8")


def report(session: Path) -> dict[str, object]:
    result = ctxtui("inspect", str(session), "--report", "--output-format", "json")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    economics = json.loads(result.stdout)["economics"]
    assert isinstance(economics, dict)
    text = ctxtui("inspect", str(session), "--report")
    assert text.returncode == 0 and "Traceback" not in text.stderr, text.stderr
    assert "cache economics: 1 call(s)" in text.stdout
    return economics


@pytest.mark.parametrize(("count", "amount"), [
    ("NaN", "NaN"), ("Infinity", "-Infinity"), ("1e400", "1e400"), ("-3", "-3"), ("2.5", '"2.5"'),
    ('"12"', "NaN"), ('"many"', "1e300"), ("true", "true"), ("[1]", "1e300"), ("1e20", '"0.01"'),
])
def test_a_sample_with_bad_figures_is_reported_with_them_unknown(session: Path, count: str, amount: str) -> None:
    tamper(session, {"input_tokens": count, "output_tokens": count, "cache_creation_tokens": count,
                     "cost": amount, "cost_parts.output": amount})
    economics = report(session)
    tokens = economics["tokens"]
    assert isinstance(tokens, dict)
    assert tokens["input_tokens"] == tokens["output_tokens"] == tokens["cache_creation_tokens"] == 0
    assert economics["cost"] is None and economics["cost_parts"] is None  # the one cost is unknown
    assert economics["hit_rate"] is None  # no prompt figure is known
    assert economics["misses"] == {"first_call": {"calls": 1, "tokens": 0}}


def test_a_miss_whose_tokens_are_no_count_is_still_counted_as_a_miss(session: Path) -> None:
    tamper(session, {"cache_miss.tokens": "1e400"})
    assert report(session)["misses"] == {"first_call": {"calls": 1, "tokens": 0}}


def test_a_line_nested_too_deep_costs_that_line_only(session: Path) -> None:
    expected = report(session)
    deep = "[" * 100_000 + "]" * 100_000  # deeper than json (or any walk of it) can recurse
    nested_sample = {"type": "event", "kind": "ContextSampled", "event": {"sample": "@@deep@@"}}
    just_deeper = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    with session.open("a", encoding="utf-8") as handle:
        handle.write("\n" + deep + "\n")
        handle.write(json.dumps(nested_sample).replace('"@@deep@@"', just_deeper) + "\n")
    assert report(session) == expected
