"""The cache economics in headless output and in `ctxtui inspect --report`: the real command against the
loopback fake (stream-json context and compaction records, `-p -v` lines, the session file's report)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import api_env, ctxtui
from tests.support.fakeapi import FakeAnthropicServer, MessageReply, text_reply, tool_reply

pytestmark = pytest.mark.slow

MODEL = "claude-sonnet-5-5"
COMPACTING = ("--set", "context_char_limit=5000", "--set", "tool_result_batch_char_limit=10000",
              "--set", "large_result_char_limit=5000")


def script(fake_api: FakeAnthropicServer, workdir: Path) -> None:
    fake_api.models[MODEL] = 1_000_000
    fake_api.thinking[MODEL] = ("adaptive", "disabled")
    (workdir / "big.txt").write_text("".join(f"big {n:05d} ".ljust(99, "b") + "\n" for n in range(80)))
    fake_api.script(
        MessageReply([{"type": "thinking", "thinking": "Read the big file first."},
                      {"type": "tool_use", "id": "toolu_big", "name": "read_file", "input": {"path": "big.txt"}}],
                     stop_reason="tool_use"),
        text_reply("Read it."),
    )


def test_stream_json_carries_the_miss_the_cost_parts_and_thinking(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    script(fake_api, tmp_path)
    result = ctxtui("-p", "read big.txt", "--workdir", str(tmp_path), "--model", MODEL, "--output-format",
                    "stream-json", *COMPACTING, env=api_env(fake_api))
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    first, second = [record for record in records if record["type"] == "context"]
    assert first["cache_miss"] == {"cause": "first_call", "by": None, "path": None, "tokens": None, "api_reason": None}
    assert second["cache_miss"] is None and second["api_miss_reason"] == "none"
    for record in (first, second):
        parts = record["cost_parts"]
        assert set(parts) == {"input", "cache_write", "cache_read", "output"}
        assert abs(sum(parts.values()) - record["cost"]) < 1e-12 and record["cost"] > 0
        assert record["kind"] == "turn" and record["cache_ttl"] == "5m" and record["timing"] == "eager"
        assert record["cache_expires_at"] > record["started_at"]
    assert first["thinking_tokens"] > 0
    (step,) = [record for record in records if record["type"] == "compaction"]
    assert step["step"] == "fit_tool_results"  # the one big result is over the limit, unseen: a preview
    assert step["cache_invalidated_tokens"] == 0  # it only touched the newest result, never cached
    assert step["break_even_calls"] == 0


def test_verbose_lines_carry_the_miss_cost_parts_and_thinking_and_the_report_sums_the_session(
    fake_api: FakeAnthropicServer, tmp_path: Path
) -> None:
    script(fake_api, tmp_path)
    result = ctxtui("-p", "read big.txt", "--workdir", str(tmp_path), "--model", MODEL, "-v", *COMPACTING,
                    env=api_env(fake_api))
    assert result.returncode == 0, result.stderr
    calls = [line for line in result.stderr.splitlines() if line.startswith("[call ")]
    assert len(calls) == 2
    assert "cache miss: first call" in calls[0] and "thinking " in calls[0]
    assert "(input $" in calls[0] and "cache write $" in calls[0] and "cache read $" in calls[0]
    assert "cache miss" not in calls[1]
    assert any(line.startswith("cache: fit_tool_results saved") for line in result.stderr.splitlines())

    (session,) = (tmp_path / ".ctxtui" / "sessions").glob("*.jsonl")
    report = ctxtui("inspect", str(session), "--report", "--output-format", "json")
    assert report.returncode == 0, report.stderr
    economics = json.loads(report.stdout)["economics"]
    assert economics["calls"] == 2 and economics["summary_calls"] == 0
    assert economics["misses"] == {"first_call": {"calls": 1, "tokens": 0}}
    assert 0 < economics["hit_rate"] < 1 and economics["tokens"]["thinking_tokens"] > 0
    assert abs(sum(economics["cost_parts"].values()) - economics["cost"]) < 1e-5
    text = ctxtui("inspect", str(session), "--report")
    assert text.returncode == 0, text.stderr
    assert "cache economics: 2 call(s), 0 summary call(s)" in text.stdout
    assert "hit rate " in text.stdout and "miss first_call" in text.stdout
    assert "thinking" in text.stdout.split("breakdown")[1]


def test_the_report_counts_misses_by_cause_and_cause(fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    for name in ("a.txt", "b.txt", "c.txt"):
        (tmp_path / name).write_text(f"{name} line\n" * 300)
    fake_api.script(
        tool_reply([("toolu_a", "read_file", {"path": "a.txt"})]),
        tool_reply([("toolu_b", "read_file", {"path": "b.txt"})]),
        tool_reply([("toolu_c", "read_file", {"path": "c.txt"})]),
        text_reply("done"),
    )
    result = ctxtui("-p", "read them", "--workdir", str(tmp_path), "--model", MODEL, "--set",
                    "context_char_limit=9000", "--set", "keep_recent_results=1", env=api_env(fake_api))
    assert result.returncode == 0, result.stderr
    (session,) = (tmp_path / ".ctxtui" / "sessions").glob("*.jsonl")
    economics = json.loads(ctxtui("inspect", str(session), "--report", "--output-format", "json").stdout)["economics"]
    assert economics["misses"]["messages_changed"]["calls"] == 1
    assert economics["misses"]["messages_changed"]["tokens"] > 0
    assert economics["misses_by"] == {"nothing of ours": 1, "micro_compact": 1}
    assert economics["written_again"] == economics["misses"]["messages_changed"]["tokens"]
    assert economics["api_disagreements"] == 0
