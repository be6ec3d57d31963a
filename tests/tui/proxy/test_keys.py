"""The live view's keys come from one table (tui/proxy_actions.py): the bindings, the footer, the keys
panel and the README's table say the same thing; the diff's keys act only where the diff is shown."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import HelpPanel

from tests.support.fakeapi import FakeAnthropicServer
from tests.support.pilot import wait_for
from tests.support.proxy import running_proxy, view_app
from tui.proxy_actions import PROXY_ACTIONS, proxy_readme_rows
from tui.proxy_app import ProxyApp
from tui.screens.proxy import ProxyScreen

README = Path(__file__).resolve().parents[3] / "README.md"


def test_the_readme_lists_the_views_keys_as_the_table_says_them() -> None:
    text = README.read_text(encoding="utf-8")
    for row in proxy_readme_rows():
        assert row in text, f"README.md lacks the row {row!r}"


def test_every_key_of_the_table_is_bound_once_where_the_table_says() -> None:
    bound = {binding.id: binding for binding in [*ProxyScreen.BINDINGS, *ProxyApp.BINDINGS]}  # type: ignore[union-attr]
    assert set(bound) == {action.id for action in PROXY_ACTIONS if action.key}
    for action in PROXY_ACTIONS:
        binding = bound[action.id]
        assert (binding.key, binding.action, binding.tooltip) == (action.key, action.action, action.help)  # type: ignore[union-attr]
        assert binding.show == (action.footer is not None)  # type: ignore[union-attr]


async def test_the_diffs_keys_act_only_on_the_diff_and_f1_shows_every_key(
        fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    async with running_proxy(fake_api.base_url) as proxy:
        app = view_app(proxy, tmp_path)
        async with app.run_test(size=(160, 48)) as pilot:
            view = app.view
            assert view.current_view == "tree"
            assert view.check_action("diff_call", (1,)) is False and view.check_action("diff_base", (-1,)) is False
            footer_keys = {key for key, active in view.active_bindings.items() if active.binding.show}
            assert footer_keys >= {"f2", "1", "2", "3", "4", "c", "f1"}
            await pilot.press("f2")
            assert view.current_view == "breakdown"
            await pilot.press("f2", "f2")
            assert view.current_view == "diff"
            assert view.check_action("diff_call", (1,)) is True
            await pilot.press("f1")
            await wait_for(pilot, lambda: bool(app.screen.query(HelpPanel)))
            await pilot.press("f1")
            await wait_for(pilot, lambda: not app.screen.query(HelpPanel))
            await pilot.press("ctrl+c")  # as Ctrl-C stops the headless proxy
            await wait_for(pilot, lambda: app.return_code == 0)
