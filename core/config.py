"""Run-time settings: where to work, which model, how patient to be, and the pipeline's thresholds.

Each setting is declared once, as a field of `Settings` (or of `CompactionSettings`, the config file's
`[compaction]` table) made with `setting()` (core/setting.py): its type, default, help, range or rule,
and the flag or variable that sets it besides the usual ones. The names below, the `CTXTUI_*`
variables, `--set`, the help, `ctxtui config`, the README's table and every check are read from there.

Settings come from four layers, the first that sets a value wins: command-line flags, `CTXTUI_*`
environment variables, the config file (`$XDG_CONFIG_HOME/ctxtui/config.toml`, default
`~/.config/ctxtui/config.toml`, read with tomllib), and the defaults. Each layer's values are converted
to their field's type where they are read, so an error names its layer, the key and what the key
expects, in one line; the merged values are then held to their ranges and rules, each refusal naming
the key, the value and where it came from. `resolve_config` remembers where each value came from,
which `ctxtui config` prints.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from core.compaction.settings import CompactionSettings
from core.setting import ENV_PREFIX, Check, NotAllowed, Range, Setting, declared, setting

DEFAULT_MODEL = "claude-sonnet-5-5"  # the newest Sonnet the installed SDK lists
DEFAULT_THEME = "textual-dark"
APP_NAME = "ctxtui"
CONFIG_FILE = "config.toml"
GIGA = 1_000_000_000
COMPACT_TRIGGER_MIN = 50_000  # the API refuses a compact_20260112 trigger below this
TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,128}")  # what the API accepts as a tool name


def default_model() -> str:
    """ANTHROPIC_MODEL if set, else a current Sonnet model."""
    return os.environ.get("ANTHROPIC_MODEL") or DEFAULT_MODEL


def api_key_configured() -> bool:
    return bool(os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN"))


def exclude_tools(value: str) -> list[str]:
    """The `clear_exclude_tools` setting as the edit's `exclude_tools` list (blank items dropped)."""
    return [name.strip() for name in value.split(",") if name.strip()]


def _not_a_tool_name(value: str) -> str | None:
    bad = [name for name in exclude_tools(value) if not TOOL_NAME.fullmatch(name)]
    return f"names {bad[0]!r}, which is not a tool name (1 to 128 of a-z A-Z 0-9 _ -)" if bad else None


A_MODEL = Check(
    "a model name, not empty",
    lambda value: None if value.strip() else "is empty: name a model, or leave it unset for the default",
)
TOOL_NAMES = Check("tool names, comma-separated (each 1 to 128 of a-z A-Z 0-9 _ -)", _not_a_tool_name)
NOT_ONLY_WHITESPACE = Check(
    "empty, or more than whitespace",
    lambda value: (
        "is only whitespace: leave it empty for the API's own summary prompt"
        if value and not value.strip()
        else None
    ),
)
SECONDS = Range(0, 86_400, "seconds", whole=False, above=True)
TOKENS = Range(0, 100_000_000, "tokens")
PROXY_BYTES = Range(1024, 4 * GIGA, "bytes")


@dataclass
class Settings:
    """Everything the agent needs to start: how this run was started (the first fields, set by the
    command's flags or by code), then the settings, each declared with `setting()`."""

    workdir: Path = field(default_factory=Path.cwd)
    offline: bool = False
    yes: bool = False
    resume: bool = False
    resume_id: str | None = None  # `--resume ID`: that session instead of the newest valid one
    offline_chunk_delay: float = 0.0  # the demo's pace of the offline model's text
    request_timeout: float = 120.0  # the API client's patience (not settings)
    max_retries: int = 2
    retry_after_cap: float = 10.0

    model: str = setting(
        DEFAULT_MODEL, factory=default_model, flag="--model", also_env=("ANTHROPIC_MODEL",),
        check=A_MODEL, help="the model every call uses",
    )  # fmt: skip
    theme: str = setting(DEFAULT_THEME, help="the Textual theme of the TUI (the palette saves it here)")
    bash_timeout: float = setting(120.0, range=SECONDS, help="seconds a bash command may run")
    max_bash_timeout: float = setting(
        600.0,
        range=SECONDS,
        help="the most seconds a bash command may ask for (its timeout is clamped to this)",
    )
    spill_byte_limit: int = setting(
        50_000_000,
        range=Range(1, 100 * GIGA, "bytes"),
        help="bytes of long bash output written to the spill file at most",
    )
    glob_time_budget: float = setting(
        10.0,
        range=Range(0, 3_600, "seconds", whole=False, above=True),
        help="seconds a glob may walk before it stops and says so",
    )
    tool_output_limit: int = setting(
        200_000, range=Range(1, GIGA, "characters"), help="characters of tool output kept in a result"
    )
    read_line_limit: int = setting(
        2_000, range=Range(1, 100_000_000, "lines"), help="lines read_file returns at most"
    )
    max_tokens: int = setting(
        8_000, range=Range(1, 1_000_000, "tokens"), help="max_tokens of each model call"
    )
    summary_instructions: str = setting("", help="text added to every summary request")
    auto_compact: bool = setting(
        True,
        help="false starts with automatic compaction paused (reactive compaction still guards the API; "
        "the TUI toggles it)",
    )
    undo_depth: int = setting(
        20,
        range=Range(0, 1_000, "compactions"),
        help="how many compactions undo can reverse, newest first (each keeps the history from before it)",
    )
    cache_ttl: Literal["5m", "1h"] = setting(
        "5m", help="the prompt cache's TTL (1h writes cost 2x input instead of 1.25x)"
    )
    compaction_timing: Literal["eager", "cache-aware"] = setting(
        "eager",
        help='"eager" (every step before every call) or "cache-aware" (steps that would break a warm '
        "cached prefix wait for it to go cold, the ceiling, or a compact)",
    )
    cache_ceiling_tokens: int = setting(
        0,
        range=TOKENS,
        help="cache-aware: the request size in tokens at which waiting steps run anyway "
        "(0: 80% of the model's window)",
    )
    thinking: Literal["off", "adaptive"] = setting(
        "adaptive", help='"adaptive" (where the Models API says the model supports it) or "off"'
    )
    engine: Literal["client", "server-clear", "server-compact"] = setting(
        "client",
        help='who manages the context (core/engines/): "client" (this pipeline), "server-clear" (the API '
        'clears old tool results) or "server-compact" (the API compacts)',
    )
    clear_trigger_tokens: int = setting(
        100_000,
        range=Range(1, 100_000_000, "tokens"),
        help="server-clear: the request's input tokens at which the API clears old tool results",
    )
    clear_keep_tool_uses: int = setting(
        3,
        range=Range(0, 1_000_000, "tool uses"),
        help="server-clear: how many of the newest tool uses the API keeps",
    )
    clear_at_least_tokens: int = setting(
        0,
        range=TOKENS,
        help="server-clear: the API clears only when at least this many tokens go (0: not sent)",
    )
    clear_exclude_tools: str = setting(
        "", check=TOOL_NAMES, help="server-clear: tool names whose uses the API never clears"
    )
    clear_tool_inputs: bool = setting(False, help="server-clear: the API clears the tool calls' inputs too")
    clear_thinking_keep: int = setting(
        1,
        range=Range(0, 1_000_000, "assistant turns"),
        help="server-clear with thinking on: assistant turns whose thinking the API keeps (0: all)",
    )
    compact_trigger_tokens: int = setting(
        150_000,
        range=Range(COMPACT_TRIGGER_MIN, 100_000_000, "tokens"),
        help="server-compact: the request's input tokens at which the API compacts",
    )
    compact_instructions: str = setting(
        "",
        check=NOT_ONLY_WHITESPACE,
        help="server-compact: instructions for the API's summary (empty: the API's own prompt)",
    )
    # `ctxtui proxy`'s bounds (core/proxy/limits.py): what one exchange may hold in memory and on disk
    proxy_request_limit: int = setting(
        256 * 1024 * 1024,
        range=PROXY_BYTES,
        help="ctxtui proxy: bytes of a request body as sent; a larger one is refused with a 413",
    )
    proxy_body_limit: int = setting(
        32 * 1024 * 1024,
        range=PROXY_BYTES,
        help="ctxtui proxy: bytes of a request body recorded, once inflated; a larger one is forwarded "
        "as sent and recorded without its body",
    )
    proxy_reply_limit: int = setting(
        32 * 1024 * 1024,
        range=PROXY_BYTES,
        help="ctxtui proxy: bytes of a reply kept for the recording and the live view; past it the "
        "client still gets every byte and the recording says where it was cut",
    )
    compaction: CompactionSettings = field(default_factory=CompactionSettings)  # [compaction]

    @property
    def use_offline(self) -> bool:
        """Offline when asked to, or when no API key is configured."""
        return self.offline or not api_key_configured()

    @property
    def state_dir(self) -> Path:
        """Where sessions are kept (inside the workdir)."""
        return self.workdir / ".ctxtui"


# --- views of the declarations ---------------------------------------------------------------------

SETTINGS: tuple[Setting, ...] = declared(Settings)
"""Every setting the config file, `CTXTUI_*` and `--set` take: the top-level ones, then [compaction]'s."""
TOP_LEVEL_FIELDS: tuple[str, ...] = tuple(item.name for item in SETTINGS if item.table is None)
COMPACTION_FIELDS: tuple[str, ...] = tuple(item.name for item in SETTINGS if item.table == "compaction")
TABLES: tuple[str, ...] = tuple(dict.fromkeys(item.table for item in SETTINGS if item.table is not None))
TOP_LEVEL_HELP: dict[str, str] = {item.name: item.help for item in SETTINGS if item.table is None}
_BY_NAME: dict[str, Setting] = {item.name: item for item in SETTINGS}
_BY_KEY: dict[tuple[str, ...], Setting] = {item.key: item for item in SETTINGS}


def setting_of(key: tuple[str, ...]) -> Setting | None:
    """The setting at a config file key: ("bash_timeout",) or ("compaction", "context_char_limit")."""
    return _BY_KEY.get(tuple(key))


def compaction_defaults() -> dict[str, Any]:
    return {item.name: item.default for item in SETTINGS if item.table == "compaction"}


def top_level_defaults() -> dict[str, Any]:
    return {item.name: item.default for item in SETTINGS if item.table is None}


def setting_names() -> tuple[str, ...]:
    """Every setting the config file, `CTXTUI_*` and `--set` take, top-level first."""
    return tuple(item.name for item in SETTINGS)


def _toml(value: Any) -> str:
    import tomlkit

    return str(tomlkit.item(value).as_string())


def settings_help(path: Path) -> str:
    """The settings for `ctxtui --help`: each with what it does, its default and what it allows."""
    lines = [f"settings (precedence: flags > CTXTUI_<FIELD> > {path} > defaults):"]
    table: str | None = None
    for item in SETTINGS:
        if item.table != table:
            table = item.table
            lines.append(f"  [{table}] (also CTXTUI_<FIELD> and --set FIELD=VALUE):")
        also = f"; also {item.also()}" if item.also() else ""
        lines.append(f"  {item.name:<30} {item.help} (default {_toml(item.default)}; {item.allowed()}{also})")
    return "\n".join(lines) + "\n"


def settings_table_markdown() -> str:
    """The README's tables of every setting (what stands between its `<!-- settings:start -->` and
    `<!-- settings:end -->` markers; `ctxtui config --markdown` prints it)."""

    def row(item: Setting) -> str:
        also = item.also(lambda name: f"`{name}`")
        what = item.help + (f"; also {also}" if also else "")
        cells = (f"`{item.name}`", f"`{_toml(item.default)}`", item.allowed(), what)
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    blocks = []
    for table in (None, *TABLES):
        title = "Top level" if table is None else f"In the `[{table}]` table"
        rows = [row(item) for item in SETTINGS if item.table == table]
        header = ["| setting | default | allowed | what it does |", "| --- | --- | --- | --- |"]
        blocks.append("\n".join([f"{title}:", "", *header, *rows]))
    return "\n\n".join(blocks) + "\n"


# CTXTUI_* names that are not settings: the run tag of a tool's processes (core/tools/processes.py),
# and the start-up check's escape hatch for an unchecked Textual (tui/textual_private.py).
OTHER_VARIABLES = frozenset({"CTXTUI_TOOL_RUN", "CTXTUI_ALLOW_UNCHECKED_TEXTUAL"})


def did_you_mean(word: str, choices: Any) -> str:
    """` (did you mean X?)` for the choice closest to a misspelled `word`, or "" when none is close."""
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _unknown_key_hint(key: tuple[str, ...]) -> str:
    """Why a key of the config file is not a setting, and what was probably meant (one clause)."""
    name = key[-1]
    meant = _BY_NAME.get(name)
    if len(key) > 1:
        table = key[0]
        if meant is not None and meant.table is None:
            return f" (it is a top-level setting: put it above [{table}])"
        if meant is not None:
            return f" (it is a [{meant.table}] setting: put it under [{meant.table}])"
        names = [item.name for item in SETTINGS if item.table == table]
        return did_you_mean(name, names) + f" (known: {', '.join(names)})"
    if meant is not None:
        return f" (it is a {meant.table} setting: put it under [{meant.table}])"
    tables = [f"[{table}]" for table in TABLES]
    return (
        did_you_mean(name, (*TOP_LEVEL_FIELDS, *TABLES))
        + f" (known: {', '.join([*TOP_LEVEL_FIELDS, *tables])})"
    )


class ConfigError(ValueError):
    """A setting that cannot be used: one line naming where it came from, the key and what is expected."""


def _validate_layer(values: Mapping[str, Any], where: str, key_name: Any) -> dict[str, Any]:
    """One layer's values converted to their fields' types (e.g. "80000" -> 80000); ConfigError names
    the layer, the first key (in the layer's order) that is not a setting or cannot be converted, and
    what it needs."""
    checked: dict[str, Any] = {}
    for name, value in values.items():
        if name in TABLES:
            if not isinstance(value, Mapping):
                raise ConfigError(f"{where}: {key_name((name,))} needs a table")
            checked[name] = {
                inner: _converted((name, inner), item, where, key_name) for inner, item in value.items()
            }
        else:
            checked[name] = _converted((name,), value, where, key_name)
    return checked


def _converted(key: tuple[str, ...], value: Any, where: str, key_name: Any) -> Any:
    declared_at = setting_of(key)
    if declared_at is None:
        raise ConfigError(f"{where}: {key_name(key)} is not a setting{_unknown_key_hint(key)}")
    try:
        return declared_at.convert(value)
    except NotAllowed as error:
        raise ConfigError(f"{where}: {key_name(key)} {error}") from None


def _walk(values: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    items: list[tuple[tuple[str, ...], Any]] = []
    for key, value in values.items():
        if isinstance(value, Mapping):
            items.extend(_walk(value, (*prefix, key)))
        else:
            items.append(((*prefix, key), value))
    return items


# --- the layers -------------------------------------------------------------------------------------


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CONFIG_HOME/ctxtui/config.toml`, else the platform's user config dir (~/.config/ctxtui)."""
    environ = os.environ if environ is None else environ
    xdg = environ.get("XDG_CONFIG_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / APP_NAME / CONFIG_FILE
    import platformdirs

    return platformdirs.user_config_path(APP_NAME, appauthor=False) / CONFIG_FILE


def read_config_file(path: Path) -> dict[str, Any]:
    """The file layer (empty when there is no file), validated; ConfigError names the file and the key."""
    if not path.is_file():
        return {}
    try:
        with path.open("rb") as stream:
            raw = tomllib.load(stream)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"config file {path}: not valid TOML: {error}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"config file {path}: cannot be read: {error}") from None
    return _validate_layer(dict(raw), f"config file {path}", lambda key: ".".join(key))


def env_name(key: tuple[str, ...]) -> str:
    """The variable that sets a key: CTXTUI_<FIELD> for top-level and compaction fields alike."""
    return ENV_PREFIX + key[-1].upper()


def _layer_of(items: list[tuple[Setting, Any]]) -> dict[str, Any]:
    """Settings and their raw values as a layer: top-level keys, and each table's keys in its table."""
    values: dict[str, Any] = {}
    for item, raw in items:
        target = values if item.table is None else values.setdefault(item.table, {})
        target[item.name] = raw
    return values


def read_environment(environ: Mapping[str, str]) -> tuple[dict[str, Any], dict[tuple[str, ...], str]]:
    """The environment layer (each setting's variables: `CTXTUI_<FIELD>`, then the ones it also reads,
    such as ANTHROPIC_MODEL below CTXTUI_MODEL), with the variable of each key. A value that is not
    text is read without the blanks around it."""
    found: list[tuple[Setting, Any]] = []
    names: dict[tuple[str, ...], str] = {}
    for item in SETTINGS:
        variable = next((name for name in item.env if environ.get(name)), None)
        if variable is not None:
            raw = environ[variable]
            found.append((item, raw if item.is_text else raw.strip()))
            names[item.key] = variable
    validated = _validate_layer(_layer_of(found), "environment", lambda key: names.get(key, env_name(key)))
    return validated, names


def unknown_environment(environ: Mapping[str, str]) -> list[str]:
    """The `CTXTUI_*` variables (in any case) that set nothing, each with what was probably meant:
    a misspelled variable used to be ignored without a word."""
    known = {name for item in SETTINGS for name in item.env if name.startswith(ENV_PREFIX)}
    found = []
    for name in sorted(environ):
        if name.upper().startswith(ENV_PREFIX) and name not in known and name not in OTHER_VARIABLES:
            found.append(name + did_you_mean(name.upper(), known))
    return found


def parse_overrides(overrides: list[str]) -> dict[str, Any]:
    """`--set FIELD=VALUE` items as a layer (any setting; a table's may be written `TABLE.FIELD`)."""
    found: list[tuple[Setting, Any]] = []
    for item in overrides:
        key, sep, raw = item.partition("=")
        key = key.strip().replace("-", "_")
        for table in TABLES:
            key = key.removeprefix(f"{table}.")
        if not sep:
            raise ConfigError(f"--set {item}: takes FIELD=VALUE, e.g. --set context_char_limit=80000")
        if key not in _BY_NAME:
            raise ConfigError(
                f"--set {key}: not a setting{did_you_mean(key, setting_names())}; "
                f"FIELD is one of: {', '.join(setting_names())}"
            )
        found.append((_BY_NAME[key], raw.strip()))
    return _validate_layer(_layer_of(found), "--set", lambda key: key[-1])


def read_flags(flags: Mapping[str, Any]) -> dict[str, Any]:
    """The flags layer: the settings that declare a flag (`--model`), by name; None is a flag not given."""
    found: list[tuple[Setting, Any]] = []
    for name, value in flags.items():
        item = _BY_NAME.get(name)
        if item is None or item.flag is None:
            raise ValueError(f"{name} is not a setting with a flag")
        if value is not None:
            found.append((item, value))
    return _validate_layer(_layer_of(found), "flag", lambda key: _BY_NAME[key[-1]].flag)


# --- merging, with the source of every value ---------------------------------------------------------


@dataclass
class ResolvedConfig:
    """The effective values of every configurable key and where each came from."""

    path: Path
    top: dict[str, Any]
    compaction: CompactionSettings
    sources: dict[tuple[str, ...], str]  # ("compaction", "context_char_limit") -> "file /x/config.toml"
    warnings: tuple[str, ...] = ()  # one line each, for stderr: what was set but sets nothing

    def source(self, *key: str) -> str:
        return self.sources.get(key, "default")

    def value(self, item: Setting) -> Any:
        return self.top[item.name] if item.table is None else getattr(self.compaction, item.name)


def resolve_config(
    flags: Mapping[str, Any] | None = None,
    overrides: list[str] | None = None,
    environ: Mapping[str, str] | None = None,
    path: Path | None = None,
) -> ResolvedConfig:
    """Merge flags (and `--set`) > environment > file > defaults; ConfigError on any bad value."""
    environ = os.environ if environ is None else environ
    path = config_path(environ) if path is None else path
    layers: list[tuple[dict[str, Any], Any]] = []
    file_values = read_config_file(path)
    layers.append((file_values, lambda key: f"file {path}"))
    env_values, env_names = read_environment(environ)
    layers.append((env_values, lambda key: f"env {env_names.get(key, env_name(key))}"))
    set_values = parse_overrides(list(overrides or []))
    layers.append((set_values, lambda key: "flag --set"))
    flag_values = read_flags(flags or {})
    layers.append((flag_values, lambda key: f"flag {_BY_NAME[key[-1]].flag}"))

    merged = {item.key: item.default for item in SETTINGS}
    sources: dict[tuple[str, ...], str] = {}
    for values, label in layers:
        for key, value in _walk(values):
            merged[key] = value
            sources[key] = label(key)
    timeout, most = ("bash_timeout",), ("max_bash_timeout",)
    if timeout not in sources and _above(merged[timeout], merged[most]):
        merged[timeout] = merged[most]  # only max_bash_timeout was set: the default follows it
        sources[timeout] = "default, lowered to max_bash_timeout"
    for item in SETTINGS:
        refused = item.refusal(merged[item.key], sources.get(item.key, "default"))
        if refused is not None:
            raise ConfigError(refused)
    if merged[timeout] > merged[most]:
        raise ConfigError(
            f"bash_timeout = {merged[timeout]!r} ({sources.get(timeout, 'default')}) is above "
            f"max_bash_timeout = {merged[most]!r} ({sources.get(most, 'default')}): "
            "a command may not run longer than the most any command may ask for"
        )
    top = {key[0]: value for key, value in merged.items() if len(key) == 1}
    compaction = {key[1]: value for key, value in merged.items() if key[:1] == ("compaction",)}
    unknown = unknown_environment(environ)
    warnings = (
        (f"ignored {', '.join(unknown)}: not a setting of ctxtui (ctxtui config lists them)",)
        if unknown
        else ()
    )
    return ResolvedConfig(path, top, check_compaction(compaction, sources), sources, warnings)


def _above(value: Any, limit: Any) -> bool:
    """`value` is a number above `limit`, itself a valid max_bash_timeout."""
    allowed = _BY_NAME["max_bash_timeout"].range
    return allowed is not None and allowed.holds(limit) and isinstance(value, int | float) and value > limit


def check_compaction(
    values: dict[str, Any], sources: Mapping[tuple[str, ...], str] | None = None
) -> CompactionSettings:
    """CompactionSettings from values, refusing combinations that make a step meaningless (one line why)."""
    sources = sources or {}

    def named(*names: str) -> str:
        return ", ".join(f"{name} ({sources.get(('compaction', name), 'default')})" for name in names)

    try:
        settings = CompactionSettings(**values)
    except ValueError as error:
        raise ConfigError(f"compaction settings: {error}") from None
    problems = [
        (
            settings.fit_preview_chars >= settings.micro_target_chars,
            "fit_preview_chars must be below the micro target (context_char_limit x micro_target_ratio)"
            " or fit_tool_results cannot reach it",
            ("fit_preview_chars", "context_char_limit", "micro_target_ratio"),
        ),
        (
            settings.persisted_preview_chars >= settings.large_result_char_limit,
            "persisted_preview_chars must be below large_result_char_limit or a persisted result is not shorter",
            ("persisted_preview_chars", "large_result_char_limit"),
        ),
        (
            settings.large_result_char_limit > settings.tool_result_batch_char_limit,
            "large_result_char_limit must not exceed tool_result_batch_char_limit or the budget step never persists",
            ("large_result_char_limit", "tool_result_batch_char_limit"),
        ),
        (
            settings.micro_min_chars >= settings.context_char_limit,
            "micro_min_chars must be below context_char_limit or micro_compact never shortens anything",
            ("micro_min_chars", "context_char_limit"),
        ),
    ]
    for failed, reason, names in problems:
        if failed:
            raise ConfigError(f"compaction settings: {reason}; now {named(*names)}")
    return settings


# --- writing the file ---------------------------------------------------------------------------------


def save_setting(key: str, value: Any, path: Path | None = None) -> Path:
    """Set one key (`theme`, `model`, `compaction.context_char_limit`) in the config file, keeping the
    other keys and the comments; checked first (type, range and rule), written atomically. A config
    file that is a symlink (dotfiles kept in a repository) is written through: the file it points to is
    replaced, the link stays, and the file keeps its mode. Returns the path written."""
    import tomlkit

    path = config_path() if path is None else path
    parts = tuple(key.split("."))
    converted = _converted(parts, value, f"save_setting {key}", lambda item: ".".join(item))
    refused = _BY_KEY[parts].refusal(converted, f"save_setting {key}")
    if refused is not None:
        raise ConfigError(refused)
    target = Path(os.path.realpath(path))  # through any symlink, to the file itself
    document = tomlkit.parse(target.read_text(encoding="utf-8")) if target.is_file() else tomlkit.document()
    if len(parts) == 1:
        document[parts[0]] = converted
    else:
        table = document.get(parts[0])
        if table is None:
            table = tomlkit.table()
            document[parts[0]] = table
        table[parts[1]] = converted
    _replace_file(target, tomlkit.dumps(document))
    return target


def _replace_file(target: Path, text: str) -> None:
    """Write `text` to a temporary file beside `target`, with `target`'s mode when it exists, and rename
    it over `target` (a reader sees the old file or the new one, never half of it)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = None
    handle, temporary = tempfile.mkstemp(prefix=".config-", suffix=".toml", dir=target.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            if mode is not None:
                os.fchmod(stream.fileno(), mode)
            stream.write(text)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def effective_toml(config: ResolvedConfig) -> str:
    """The effective settings as TOML, each value with a comment naming its source."""
    lines = [
        f"# ctxtui settings in effect; config file: {config.path}"
        + ("" if config.path.is_file() else " (not present)"),
        "# precedence: flag > env CTXTUI_* > file > default",
    ]
    rendered = [(item, f"{item.name} = {_toml(config.value(item))}") for item in SETTINGS]
    width = max(len(text) for _, text in rendered)
    table: str | None = None
    lines.append("")
    for item, text in rendered:
        if item.table != table:
            table = item.table
            lines.extend(["", f"[{table}]"])
        lines.append(f"{text.ljust(width)}  # {config.source(*item.key)}")
    return "\n".join(lines) + "\n"


def apply_config(settings: Settings, config: ResolvedConfig) -> Settings:
    """`settings` with the resolved top-level values and compaction settings."""
    return replace(settings, compaction=config.compaction, **config.top)


__all__ = [
    "COMPACTION_FIELDS",
    "DEFAULT_MODEL",
    "ENV_PREFIX",
    "SETTINGS",
    "TOP_LEVEL_FIELDS",
    "ConfigError",
    "ResolvedConfig",
    "Settings",
    "api_key_configured",
    "apply_config",
    "check_compaction",
    "config_path",
    "default_model",
    "did_you_mean",
    "effective_toml",
    "resolve_config",
    "save_setting",
    "setting_names",
    "setting_of",
    "settings_help",
    "settings_table_markdown",
    "unknown_environment",
]
