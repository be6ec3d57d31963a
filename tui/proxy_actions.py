"""Every key of `ctxtui proxy`'s live view, described once (the chat app's are in tui/actions.py).

One `Action` row per key: the bindings, the footer, the keys panel (`f1`) and the README's table of
the view's keys are generated from `PROXY_ACTIONS` (a test compares the README with it). The view
has no prompt, so single keys are free; `left`/`right` and `[`/`]` act only while the diff is shown.
"""

from __future__ import annotations

from typing import Protocol

from textual.binding import Binding

from tui.actions import Action, key_label

DIFF_ONLY = frozenset({"diff_call", "diff_base"})
"""Actions that act on the diff view only (hidden while another view is shown)."""

PROXY_ACTIONS: tuple[Action, ...] = (
    Action(
        "proxy.quit",
        "quit",
        "Stop the proxy and exit (calls in flight are recorded first)",
        key="ctrl+q,ctrl+c",
        footer="Quit",
        app_wide=True,
    ),
    Action(
        "proxy.next_view",
        "next_view",
        "Switch the view: message tree, breakdown, timeline, diff",
        key="f2",
        footer="View",
    ),
    Action(
        "proxy.tree",
        "show_view('tree')",
        "Show the latest request of the conversation as a message tree",
        key="1",
        footer="Tree",
    ),
    Action(
        "proxy.breakdown",
        "show_view('breakdown')",
        "Show what fills the latest request, by category",
        key="2",
        footer="Breakdown",
    ),
    Action(
        "proxy.timeline",
        "show_view('timeline')",
        "Show every call of the conversation: size, tokens, cache read and write, cost",
        key="3",
        footer="Timeline",
    ),
    Action(
        "proxy.diff",
        "show_view('diff')",
        "Show what changed between two calls: messages added, removed or changed",
        key="4",
        footer="Diff",
    ),
    Action(
        "proxy.conversations",
        "focus_conversations",
        "Move to the list of conversations; enter (or a click) shows one in every view",
        key="c",
        footer="Conversations",
    ),
    Action(
        "proxy.diff_earlier",
        "diff_call(-1)",
        "Diff: compare an earlier call with the one before it",
        key="left",
    ),
    Action(
        "proxy.diff_later", "diff_call(1)", "Diff: compare a later call with the one before it", key="right"
    ),
    Action("proxy.base_earlier", "diff_base(-1)", "Diff: compare with an earlier call", key="["),
    Action(
        "proxy.base_later", "diff_base(1)", "Diff: compare with a later call (up to the one before)", key="]"
    ),
    Action("proxy.keys", "toggle_keys", "Show or hide every key with what it does", key="f1", footer="Keys"),
)


class ViewState(Protocol):
    """What availability depends on: the view shown."""

    @property
    def current_view(self) -> str: ...


def proxy_bindings(*, app_wide: bool) -> list[Binding]:
    """The bindings of the proxy app (`app_wide`) or of its screen; a key without a footer entry shows
    its help as the keys panel's description."""
    return [
        Binding(
            action.key,
            action.action,
            action.footer or action.help,
            id=action.id,
            show=action.footer is not None,
            priority=action.app_wide,
            tooltip=action.help,
        )
        for action in PROXY_ACTIONS
        if action.key is not None and action.app_wide == app_wide
    ]


def proxy_availability(name: str, state: ViewState) -> bool | None:
    """`check_action`'s answer: the diff's keys only while the diff is shown; everything else always."""
    if name in DIFF_ONLY:
        return state.current_view == "diff"
    return True


def proxy_readme_rows() -> list[str]:
    """The README's rows for the view's keys (`| key | what |`), as the table says them."""
    return [f"| `{key_label(action.key)}` | {action.help} |" for action in PROXY_ACTIONS if action.key]


__all__ = ["DIFF_ONLY", "PROXY_ACTIONS", "proxy_availability", "proxy_bindings", "proxy_readme_rows"]
