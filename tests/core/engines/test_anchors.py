"""Anchors (core/engines/anchors.py): what a tool result told the agent that it could use later:
paths, identifiers of 8 or more characters, error lines; a result's anchors are only those it
introduced, and its last use is the last call whose reply mentions one."""

from __future__ import annotations

from typing import Any

from core.engines.anchors import AnchorIndex, analyse, anchors_of_text

Message = dict[str, Any]


def user(text: str) -> Message:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def call(text: str, use_id: str, command: str) -> Message:
    return {"role": "assistant", "content": [{"type": "text", "text": text},
                                             {"type": "tool_use", "id": use_id, "name": "bash",
                                              "input": {"command": command}}]}


def reply(text: str) -> Message:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def result(use_id: str, content: Any) -> Message:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use_id, "content": content}]}


# --- anchors_of_text --------------------------------------------------------------------------------------


def test_paths_are_anchors() -> None:
    found = anchors_of_text("edit ./src/pkg/module.py then /etc/hosts and lib/util/io.c, and docs/index.md.")
    assert {"src/pkg/module.py", "/etc/hosts", "lib/util/io.c", "docs/index.md"} <= found
    assert "./src/pkg/module.py" not in found  # one path, one anchor: the ./ is not part of it
    assert "docs/index.md." not in found  # the sentence's full stop is not part of the path


def test_short_or_numeric_slashes_are_not_paths() -> None:
    found = anchors_of_text("a/b and 1.2/3.4 and 10/20/30 and x/y")
    assert found == set()


def test_identifiers_of_eight_or_more_characters() -> None:
    found = anchors_of_text("call compute_total(x) or getUserById, not short_id7 nor helper; _private_x 12345678")
    assert {"compute_total", "getUserById", "_private_x"} <= found
    assert "short_id7" in found
    assert "helper" not in found and "12345678" not in found and "x" not in found


def test_identifier_boundary_is_exactly_eight() -> None:
    assert anchors_of_text("abcdefg") == set()
    assert anchors_of_text("abcdefgh") == {"abcdefgh"}
    assert anchors_of_text("9abcdefgh") == set()  # no identifier starts inside a token


def test_error_lines_are_anchors() -> None:
    text = ("collected 3 items\n"
            "Traceback (most recent call last):\n"
            "  File \"x.py\", line 1\n"
            "ValueError: bad value\n"
            "tests/test_a.py::test_one FAILED\n"
            "error: cannot open\n"
            "all good here\n")
    found = anchors_of_text(text)
    errors = {anchor for anchor in found if anchor.startswith("E:")}
    assert errors == {"E:Traceback (most recent call last):", "E:ValueError: bad value",
                      "E:tests/test_a.py::test_one FAILED", "E:error: cannot open"}


def test_error_marks_are_case_sensitive_and_lines_are_cut() -> None:
    assert not any(anchor.startswith("E:") for anchor in anchors_of_text("no errors found\nfailed quietly\nERROR"))
    long_line = "Error " + "x" * 1000
    errors = [anchor for anchor in anchors_of_text(long_line) if anchor.startswith("E:")]
    assert len(errors) == 1 and len(errors[0]) == 2 + 300 and errors[0].startswith("E:Error xxx")


def test_anchor_index_reads_only_what_the_model_reads() -> None:
    message = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "identifier_of_call",
                                            "content": [{"type": "text", "text": "see src/app/models.py"}]}]}
    index = AnchorIndex()
    found = index.of_message(message)
    assert "src/app/models.py" in found
    assert "identifier_of_call" not in found  # an id is not text the model read
    assert index.of_message(message) is found  # once per message object


# --- analyse ----------------------------------------------------------------------------------------------


def conversation() -> list[Message]:
    return [
        user("Fix parse_config in src/app/config.py please."),
        call("Reading it.", "c1", "grep -n load_settings src/app/config.py"),
        result("c1", "def parse_config():\n    return helper_function_one()  # lib/app/helpers.py\n"
                     "ValueError: bad config"),
        call("Now the helper_function_one body.", "c2", "cat lib/app/helpers.py"),
        result("c2", [{"type": "text", "text": "def helper_function_one():\n    return compute_everything()"}]),
        call("Editing compute_everything.", "c3", "sed -i s/a/b/ lib/app/helpers.py"),
        result("c3", "ok"),
        reply("Done with lib/app/helpers.py."),
        reply("Bye."),
    ]


def test_a_result_gets_only_the_anchors_it_introduced() -> None:
    found = analyse(conversation())
    assert found.order == ["c1", "c2", "c3"]
    assert found.anchors["c1"] == {"helper_function_one", "lib/app/helpers.py", "E:ValueError: bad config",
                                   "ValueError"}
    # parse_config and src/app/config.py came with the task
    assert not {"parse_config", "src/app/config.py"} & found.anchors["c1"]
    # c2 repeats helper_function_one (c1 introduced it) and introduces compute_everything
    assert found.anchors["c2"] == {"compute_everything"}
    assert found.anchors["c3"] == frozenset()
    assert found.produced_before == [0, 1, 2, 3, 3]
    assert found.original["c2"] == [{"type": "text", "text": "def helper_function_one():\n    return compute_everything()"}]


def test_last_use_is_the_last_reply_that_mentions_an_anchor() -> None:
    found = analyse(conversation())
    # replies: 1 "Reading it.", 2 mentions helper_function_one + lib/app/helpers.py (c1's), 3 compute_everything
    # (c2's) and lib/app/helpers.py (c1's), 4 lib/app/helpers.py (c1's), 5 nothing
    assert found.last_use["c1"] == 4
    assert found.last_use["c2"] == 3
    assert found.last_use.get("c3", 0) == 0
    assert found.referenced_from("c1", 4) and not found.referenced_from("c1", 5)
    assert found.referenced_from("c2", 3) and not found.referenced_from("c2", 4)
    assert not found.referenced_from("c3", 1)


def test_a_mention_before_the_result_is_not_a_use() -> None:
    messages = [user("Task."), call("Look.", "c1", "ls"), result("c1", "found special_module_name here"),
                call("Other.", "c2", "pwd"), result("c2", "special_module_name again"), reply("Fine.")]
    found = analyse(messages)
    assert found.anchors["c1"] == {"special_module_name"}
    assert found.anchors["c2"] == frozenset()
    assert found.last_use.get("c1", 0) == 0  # never mentioned in a reply


def test_results_of_one_batch_share_an_anchor_they_both_introduce() -> None:
    messages = [user("Task."),
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "a", "name": "bash", "input": {"command": "x"}},
                    {"type": "tool_use", "id": "b", "name": "bash", "input": {"command": "y"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "a", "content": "shared_identifier one"},
                    {"type": "tool_result", "tool_use_id": "b", "content": "shared_identifier two"}]},
                reply("Use shared_identifier.")]
    found = analyse(messages)
    assert found.anchors["a"] == found.anchors["b"] == {"shared_identifier"}
    assert found.last_use == {"a": 2, "b": 2}


def test_the_agents_own_command_is_not_an_anchor_of_its_result() -> None:
    """A name the agent typed in its command is not something the result gave it (the module's
    docstring: "a name the agent already had from the task or its own command")."""
    messages = [user("Task."), call("Searching.", "c1", "grep -rn load_settings_from_env src/"),
                result("c1", "src/app/config.py:12: def load_settings_from_env():"), reply("Found it.")]
    found = analyse(messages)
    assert "src/app/config.py" in found.anchors["c1"]
    assert "load_settings_from_env" not in found.anchors["c1"]


def test_a_later_tool_call_is_a_use() -> None:
    """DESIGN: referenced later = an anchor that appears in a later assistant message *or tool call*:
    the agent reading the file a result named, by its path in a command, uses that result."""
    messages = [user("Task."), call("Listing.", "c1", "ls -R"), result("c1", "src/deep/target_module.py"),
                call("Reading.", "c2", "cat src/deep/target_module.py"), result("c2", "x = 1"),
                reply("Done.")]
    found = analyse(messages)
    assert found.anchors["c1"] == {"src/deep/target_module.py", "target_module"}
    assert found.last_use.get("c1", 0) == 2
    assert found.referenced_from("c1", 2)
