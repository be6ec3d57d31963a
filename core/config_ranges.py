"""The range of every numeric setting, by its key: a view of the declarations (core/config.py and
core/compaction/settings.py declare each range with its setting; core/setting.py says what a range
allows and how a value outside it is refused, in one line naming the key, the value and its source)."""

from __future__ import annotations

from core.config import setting_of
from core.setting import Range


def range_of(key: tuple[str, ...]) -> Range | None:
    """The range of a setting by its key: ("bash_timeout",) or ("compaction", "context_char_limit")."""
    declared = setting_of(key)
    return declared.range if declared is not None else None
