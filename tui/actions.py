"""Every user action of ctxtui, described once.

One row per action: its key, id, footer text, palette text and help, slash command, and when it is
available. The bindings, `check_action`, the command palette, the slash commands and `/help` are all
generated from `ACTIONS`, so the footer, the palette, `/help` and the README cannot drift apart
(a test compares the README's keys table with this one, and every key the README's prose names with
the binding it says it is). Keys that act on the message tree's selection are bound on the tree
(`in_tree`): function keys, never a letter, so typing while the tree has focus never steers (the
letters go to the prompt).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from textual.binding import Binding

When = Literal["always", "idle", "busy", "inspector"]
"""always; idle (shown but disabled while a turn runs); busy (only while a turn runs, else hidden);
inspector (only while the inspector is shown)."""


@dataclass(frozen=True)
class Action:
    """One action: how it is invoked (key, palette, slash) and when it makes sense."""

    id: str
    """The binding id (users may remap keys by it)."""
    action: str
    """The Textual action string run on the main screen (the app for `quit`)."""
    help: str
    """One sentence: what it does (tooltip, palette help, /help)."""
    key: str | None = None
    footer: str | None = None
    """Footer text; None keeps the key out of the footer."""
    palette: str | None = None
    """Command palette text; None keeps it out of the palette."""
    slash: str | None = None
    """The slash command (without `/`); `slash_arg` names its optional argument."""
    slash_arg: str | None = None
    when: When = "always"
    app_wide: bool = False
    """Bound on the app (with priority) rather than on the main screen."""
    in_tree: bool = False
    """Bound on the message tree (it acts on the tree's selection) rather than on the main screen."""
    needs_agent: bool = True
    """It acts on the agent: disabled in the first moments, while the agent is still being built."""

    @property
    def name(self) -> str:
        """The action's method name (`resize_inspector(4)` -> `resize_inspector`)."""
        return self.action.partition("(")[0]


ACTIONS: tuple[Action, ...] = (
    Action(
        "quit",
        "quit",
        "Cancel any turn, save the session and exit",
        key="ctrl+q",
        footer="Quit",
        palette="Quit",
        slash="quit",
        app_wide=True,
        needs_agent=False,
    ),
    Action(
        "cancel_turn",
        "cancel_turn",
        "Cancel the running turn; the history stays valid",
        key="escape",
        footer="Cancel",
        palette="Cancel the running turn",
        when="busy",
        needs_agent=False,
    ),
    Action(
        "toggle_inspector",
        "toggle_inspector",
        "Show or hide the context gauge and message tree",
        key="ctrl+b",
        footer="Inspector",
        palette="Toggle inspector",
        slash="inspector",
        needs_agent=False,
    ),
    Action(
        "focus_tree",
        "focus_tree",
        "Move focus between the prompt and the message tree",
        key="ctrl+t",
        footer="Tree",
        palette="Focus message tree",
        needs_agent=False,
    ),
    Action(
        "compact",
        "compact",
        "Summarise the history into one message (optional focus); review the summary first",
        key="ctrl+o",
        footer="Compact",
        palette="Compact context now…",
        slash="compact",
        slash_arg="focus",
        when="idle",
    ),
    Action(
        "compact_now",
        "compact_now",
        "Summarise the history right away, without a focus",
        palette="Compact context now (no focus)",
        when="idle",
    ),
    Action(
        "archive",
        "archive",
        "List everything compaction saved; open one",
        key="ctrl+r",
        footer="Archive",
        palette="Archived files",
        slash="archive",
    ),
    Action(
        "toggle_tools",
        "toggle_tools",
        "Expand or collapse every tool call's input and output",
        key="ctrl+g",
        footer="Tools",
        palette="Expand/collapse tool calls",
        needs_agent=False,
    ),
    Action(
        "new_session",
        "new_session",
        "Forget the history and start again (archives stay on disk)",
        key="ctrl+n",
        footer="New",
        palette="New session",
        slash="new",
        when="idle",
    ),
    Action(
        "inspector_narrower",
        "resize_inspector(-4)",
        "Make the inspector narrower",
        key="f8",
        footer="Narrower",
        palette="Narrow inspector",
        when="inspector",
        needs_agent=False,
    ),
    Action(
        "inspector_wider",
        "resize_inspector(4)",
        "Make the inspector wider",
        key="f9",
        footer="Wider",
        palette="Widen inspector",
        when="inspector",
        needs_agent=False,
    ),
    Action(
        "show_help",
        "show_help",
        "Show the keys and slash commands in the chat",
        palette="Help: keys and commands",
        slash="help",
        needs_agent=False,
    ),
    Action(
        "sessions",
        "sessions",
        "List this workdir's sessions and resume one",
        key="ctrl+s",
        palette="Sessions: resume one…",
        slash="sessions",
        when="idle",
    ),
    # --- steering: the tree's keys run these on the selected node ---
    Action(
        "pin",
        "toggle_pin",
        "Pin or unpin a tool result or a user message (the selected one): compaction keeps it byte-exact",
        key="f6",
        footer="Pin",
        palette="Pin/unpin the selected tool result or user message",
        slash="pin",
        slash_arg="id",
        when="idle",
        in_tree=True,
    ),
    Action(
        "unpin",
        "unpin",
        "Unpin a tool result or a user message (the selected one): compaction may shorten it again",
        slash="unpin",
        slash_arg="id",
        when="idle",
    ),
    Action(
        "drop",
        "drop",
        "Archive a tool result now (the selected one) and leave a placeholder",
        palette="Drop the selected tool result",
        slash="drop",
        slash_arg="tool_use_id",
        when="idle",
    ),
    Action(
        "restore",
        "restore",
        "Put an archived result back in context, byte-exact (the selected placeholder)",
        palette="Restore the selected archived result",
        slash="restore",
        slash_arg="path",
        when="idle",
    ),
    Action(
        "drop_or_restore",
        "drop_or_restore",
        "Drop the selected tool result (archived, a placeholder left), or restore the selected placeholder",
        key="f7",
        footer="Drop/restore",
        when="idle",
        in_tree=True,
    ),
    Action(
        "undo",
        "undo",
        "Undo the last compaction: what it removed is back, in place",
        key="f3",
        palette="Undo the last compaction",
        slash="undo",
        when="idle",
    ),
    Action(
        "pause",
        "toggle_pause",
        "Pause or resume automatic compaction (reactive compaction still guards the API)",
        key="f5",
        palette="Pause/resume automatic compaction",
        slash="pause",
    ),
    Action(
        "preview",
        "preview",
        "Show what the next call's compaction would do, step by step",
        key="f4",
        palette="Preview the next compaction",
        slash="preview",
        when="idle",
    ),
    # --- the inspector's views ---
    Action(
        "next_view",
        "next_view",
        "Switch the inspector's view: message tree, breakdown, timeline, dropped, facts, search",
        key="f2",
        footer="View",
        needs_agent=False,
    ),
    Action(
        "show_tree",
        "show_view('tree')",
        "Show the message tree in the inspector",
        palette="Inspector: message tree",
        slash="tree",
        needs_agent=False,
    ),
    Action(
        "show_breakdown",
        "show_view('breakdown')",
        "Show what fills the context, by category, in the inspector",
        palette="Inspector: context breakdown",
        slash="breakdown",
        needs_agent=False,
    ),
    Action(
        "show_timeline",
        "show_view('timeline')",
        "Show the context of every model call in the inspector",
        palette="Inspector: call timeline",
        slash="timeline",
        needs_agent=False,
    ),
    Action(
        "show_dropped",
        "show_view('dropped')",
        "Show what compaction took out of the context, newest first; open or restore an item",
        palette="Inspector: dropped (what compaction took)",
        slash="dropped",
        needs_agent=False,
    ),
    Action(
        "show_facts",
        "show_view('facts')",
        "Show which of your constraints, files and errors the model can no longer see; keep a constraint",
        key="ctrl+f",
        palette="Inspector: facts the model cannot see",
        slash="facts",
        needs_agent=False,
    ),
    Action(
        "search",
        "search",
        "Search everything compaction archived (as the model's search_context does); enter opens a hit",
        palette="Inspector: search the archive",
        slash="search",
        slash_arg="query",
        needs_agent=False,
    ),
    Action(
        "compare",
        "compare",
        "Replay this session's log under every engine: context and cost side by side",
        palette="Compare engines on this session",
        slash="compare",
        when="idle",
    ),
)

FOOTER_PRIORITY: tuple[tuple[str, ...], ...] = (
    ("quit",),
    ("cancel_turn",),
    ("pin",),
    ("drop_or_restore",),
    ("next_view",),
    ("focus_tree",),
    ("toggle_inspector",),
    ("inspector_narrower", "inspector_wider"),
    ("compact",),
    ("archive",),
    ("toggle_tools",),
    ("new_session",),
)
"""The footer's keys by action id, most needed first, in groups shown together or not at all: where not
every key fits (80 columns), the last ones give way whole (each stays in the palette and in /help)."""

BY_NAME: dict[str, Action] = {action.name: action for action in ACTIONS}
BY_ID: dict[str, Action] = {action.id: action for action in ACTIONS}
BY_SLASH: dict[str, Action] = {action.slash: action for action in ACTIONS if action.slash}


COMMAND_WORD = re.compile(r"/([A-Za-z]+)(\S*)")
"""The first word of a prompt that looks like a command: `/`, letters, then anything up to a space."""


def refused_command(text: str) -> str | None:
    """Why `text` (a prompt starting with `/`) is refused as a mistyped command, with a suggestion;
    None when it is not refused (a known command runs; anything else is a message).

    A first word of `/` and letters only that is no command (`/tre`) is refused, as is a command's
    name with more glued to it (`/restore.task_outputs/x`): either would reach the model as a prompt
    (a paid call, junk in the context). A first word with other characters after the letters is sent
    as a message: a path such as `/usr/bin` starts many a real question.
    """
    match = COMMAND_WORD.match(text)
    if match is None:
        return None
    word, glued = match.groups()
    if word in BY_SLASH:
        if not glued:
            return None
        return f"/{word}{glued} is not a command: did you mean /{word} {text[len(word) + 1 :].strip()}?"
    if glued:
        return None
    close = difflib.get_close_matches(word.lower(), list(BY_SLASH), n=1, cutoff=0.6)
    hint = f"did you mean /{close[0]}?" if close else "/help lists the commands"
    return f"unknown command /{word}: {hint}"


class UiState(Protocol):
    """What availability depends on."""

    @property
    def busy(self) -> bool: ...

    @property
    def inspector_visible(self) -> bool: ...

    @property
    def starting(self) -> bool:
        """The agent is still being built (after the first frame)."""
        ...


def bindings(*, app_wide: bool, table: Sequence[Action] = ACTIONS) -> list[Binding]:
    """The Textual bindings of the app (`app_wide`) or of the main screen (of `table`: another app's own)."""
    return [
        Binding(
            action.key,
            action.action,
            action.footer or "",
            id=action.id,
            show=action.footer is not None,
            priority=action.app_wide,
            tooltip=action.help,
        )
        for action in table
        if action.key is not None and action.app_wide == app_wide and not action.in_tree
    ]


def tree_bindings() -> list[Binding]:
    """The message tree's bindings: its steering keys, each the tree's `steer` action naming the screen's
    action to run (the main screen knows the agent); the tree offers them only on a screen that steers
    (`MessageTree.check_action`): the proxy's view and the read-only inspector show none."""
    return [
        Binding(
            action.key,
            f"steer('{action.action}')",
            action.footer or "",
            id=action.id,
            show=action.footer is not None,
            tooltip=action.help,
        )
        for action in ACTIONS
        if action.key is not None and action.in_tree
    ]


def footer_groups() -> list[tuple[str, ...]]:
    """`FOOTER_PRIORITY` as the keys the footer shows (a group's keys together), most needed first."""
    return [tuple(key for name in group if (key := BY_ID[name].key) is not None) for group in FOOTER_PRIORITY]


def availability(name: str, state: UiState) -> bool | None:
    """`check_action`'s answer: True (run), None (shown, disabled), False (hidden). Unknown names: True."""
    action = BY_NAME.get(name)
    if action is None:
        return True
    if action.needs_agent and state.starting:
        return None  # shown, disabled until the agent is built
    if action.when == "busy":
        return state.busy
    if action.when == "idle":
        return None if state.busy else True
    if action.when == "inspector":
        return state.inspector_visible
    return True


def palette_entries(state: UiState) -> list[Action]:
    """The palette's commands: only those that can run now."""
    return [action for action in ACTIONS if action.palette and availability(action.name, state) is True]


def key_label(key: str) -> str:
    """A key as the help and the README say it ("esc"; "ctrl+c / ctrl+q" for a binding of two keys)."""
    return " / ".join("esc" if one == "escape" else one for one in key.split(","))


def _lower_first(text: str) -> str:
    return text[0].lower() + text[1:]


def help_markdown() -> str:
    """The `/help` text, from the table."""
    keys = " · ".join(
        f"`{key_label(action.key)}` {_lower_first(action.help)}"
        for action in ACTIONS
        if action.key and not action.in_tree
    )
    tree_keys = " · ".join(
        f"`{action.key}` {_lower_first(action.help)}" for action in ACTIONS if action.key and action.in_tree
    )
    slashes = ", ".join(
        f"`/{action.slash}{f' [{action.slash_arg}]' if action.slash_arg else ''}`"
        for action in ACTIONS
        if action.slash
    )
    return (
        "**Prompt**: `enter` send · `ctrl+j` new line · `↑/↓` earlier prompts · `pageup/pagedown` scroll the chat · "
        "typing anywhere goes to the prompt (in the tree too: letters never steer).\n\n"
        f"**Keys**: {keys} · `ctrl+p` command palette.\n\n"
        "**In the tree**: `enter` opens a placeholder / persisted output (the archived file), a snip marker or "
        f"summary (the archived transcript), or shows a block's text; `space` expands a message · {tree_keys}.\n\n"
        f"**Slash commands** (not sent to the model): {slashes}. A first word of `/` and letters that is no "
        "command (`/tre`), or a command with more glued to it (`/restore.x`), is refused with a suggestion and "
        "nothing is sent; a message may start with a path such as `/usr/bin/env`."
    )


def readme_rows() -> list[str]:
    """The README's keys table rows (`| key | slash | what |`), as the table says them."""
    rows = []
    for action in ACTIONS:
        key = f"`{key_label(action.key)}`" if action.key else ("palette" if not action.slash else "")
        if action.key and action.in_tree:
            key += " (tree)"
        slash = (
            f"`/{action.slash}{f' [{action.slash_arg}]' if action.slash_arg else ''}`" if action.slash else ""
        )
        rows.append(f"| {key} | {slash} | {action.help} |")
    return rows
