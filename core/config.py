"""Run-time settings: where to work, which model, how patient to be, and the pipeline's thresholds.

Settings come from four layers, the first that sets a value wins: command-line flags, `CTXTUI_*`
environment variables, the config file (`$XDG_CONFIG_HOME/ctxtui/config.toml`, default
`~/.config/ctxtui/config.toml`, read with tomllib), and the defaults. Every layer is validated
by one pydantic model, so an error names its layer, the key and what the key expects, in one line;
`resolve_config` also remembers where each value came from, which `ctxtui config` prints.

pydantic is imported only when a layer needs it: an empty layer, and one whose values already have
their field's exact type (what a TOML file usually holds), are checked without it, so a start
without `CTXTUI_*` variables or `--set` (the TUI's first frame) does not pay for importing it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import stat
import tempfile
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from functools import cache
from pathlib import Path
from typing import Any, Literal, get_args, get_origin, get_type_hints

from core.compaction.settings import CompactionSettings
from core.config_ranges import RangeError, check_engine, check_ranges, check_text, range_of

DEFAULT_MODEL = "claude-sonnet-5-5"  # the newest Sonnet the installed SDK lists
DEFAULT_THEME = "textual-dark"
ENV_PREFIX = "CTXTUI_"
APP_NAME = "ctxtui"
CONFIG_FILE = "config.toml"


def default_model() -> str:
    """ANTHROPIC_MODEL if set, else a current Sonnet model."""
    return os.environ.get("ANTHROPIC_MODEL") or DEFAULT_MODEL


def api_key_configured() -> bool:
    return bool(os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN"))


@dataclass
class Settings:
    """Everything the agent needs to start."""

    workdir: Path = field(default_factory=Path.cwd)
    model: str = field(default_factory=default_model)
    offline: bool = False
    yes: bool = False
    resume: bool = False
    resume_id: str | None = None  # `--resume ID`: that session instead of the newest valid one
    max_tokens: int = 8_000
    bash_timeout: float = 120.0
    max_bash_timeout: float = 600.0  # the most a model-chosen bash timeout is clamped to
    tool_output_limit: int = 200_000
    spill_byte_limit: int = 50_000_000  # bytes of long bash output spilled to a file at most
    glob_time_budget: float = 10.0  # seconds a glob may walk before it stops and says so
    read_line_limit: int = 2_000
    request_timeout: float = 120.0
    max_retries: int = 2
    retry_after_cap: float = 10.0
    offline_chunk_delay: float = 0.0
    theme: str = DEFAULT_THEME
    summary_instructions: str = ""  # added to every summary request
    auto_compact: bool = True  # False starts with automatic compaction paused (the TUI toggles it)
    undo_depth: int = 20  # compactions undo can reverse, newest first (each keeps the history before it)
    cache_ttl: Literal["5m", "1h"] = "5m"  # the prompt cache's TTL (cache_control ttl)
    compaction_timing: Literal["eager", "cache-aware"] = "eager"
    cache_ceiling_tokens: int = (
        0  # cache-aware: waiting steps run at this request size (0: 80% of the window)
    )
    thinking: Literal["off", "adaptive"] = "adaptive"
    engine: Literal["client", "server-clear", "server-compact"] = (
        "client"  # who manages the context (core/engines/)
    )
    clear_trigger_tokens: int = 100_000  # server-clear: clear once the request reaches this many input tokens
    clear_keep_tool_uses: int = 3  # server-clear: the newest tool uses kept
    clear_at_least_tokens: int = 0  # server-clear: clear only when at least this many tokens go (0: not sent)
    clear_exclude_tools: str = ""  # server-clear: tool names (comma-separated) whose uses are never cleared
    clear_tool_inputs: bool = False  # server-clear: clear the tool_use inputs too
    clear_thinking_keep: int = (
        1  # server-clear with thinking: assistant turns whose thinking is kept (0: all)
    )
    compact_trigger_tokens: int = (
        150_000  # server-compact: compact once the request reaches this many input tokens
    )
    compact_instructions: str = ""  # server-compact: instructions for the server's summary (empty: its own)
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    # `ctxtui proxy`'s bounds (core/proxy/limits.py): what one exchange may hold in memory and on disk
    proxy_request_limit: int = 256 * 1024 * 1024  # bytes of a request body as sent; a larger one gets a 413
    proxy_body_limit: int = 32 * 1024 * 1024  # bytes of a request body recorded (inflated at most this far)
    proxy_reply_limit: int = 32 * 1024 * 1024  # bytes of a reply kept for the recording and the live view

    @property
    def use_offline(self) -> bool:
        """Offline when asked to, or when no API key is configured."""
        return self.offline or not api_key_configured()

    @property
    def state_dir(self) -> Path:
        """Where sessions are kept (inside the workdir)."""
        return self.workdir / ".ctxtui"


# --- what the config file and the environment may set ---------------------------------------------

TOP_LEVEL_HELP: dict[str, str] = {
    "model": "model name (ANTHROPIC_MODEL is read too, below CTXTUI_MODEL)",
    "theme": "the Textual theme of the TUI (the palette saves it here)",
    "bash_timeout": "seconds a bash command may run",
    "max_bash_timeout": "the most seconds a bash command may ask for (its timeout is clamped to this)",
    "spill_byte_limit": "bytes of long bash output written to the spill file at most",
    "glob_time_budget": "seconds a glob may walk before it stops and says so",
    "tool_output_limit": "characters of tool output kept in a result",
    "read_line_limit": "lines read_file returns at most",
    "max_tokens": "max_tokens of each model call",
    "summary_instructions": "text added to every summary request",
    "auto_compact": "false starts with automatic compaction paused (reactive compaction still guards the API)",
    "undo_depth": "how many compactions undo can reverse, newest first (each keeps the history from before it)",
    "cache_ttl": 'the prompt cache\'s TTL, "5m" or "1h" (1h writes cost 2x input instead of 1.25x)',
    "compaction_timing": '"eager" (every step before every call) or "cache-aware" (steps that would break '
    "a warm cached prefix wait for it to go cold, the ceiling, or a compact)",
    "cache_ceiling_tokens": "cache-aware: the request size in tokens at which waiting steps run anyway "
    "(0: 80% of the model's window)",
    "thinking": '"adaptive" (where the Models API says the model supports it) or "off"',
    "engine": 'who manages the context: "client" (this pipeline), "server-clear" (the API clears old tool '
    'results) or "server-compact" (the API compacts)',
    "clear_trigger_tokens": "server-clear: the request's input tokens at which the API clears old tool results",
    "clear_keep_tool_uses": "server-clear: how many of the newest tool uses the API keeps",
    "clear_at_least_tokens": "server-clear: the API clears only when at least this many tokens go (0: not sent)",
    "clear_exclude_tools": "server-clear: tool names, comma-separated, whose uses the API never clears",
    "clear_tool_inputs": "server-clear: the API clears the tool calls' inputs too",
    "clear_thinking_keep": "server-clear with thinking on: assistant turns whose thinking the API keeps (0: all)",
    "compact_trigger_tokens": "server-compact: the request's input tokens at which the API compacts (at least 50,000)",
    "compact_instructions": "server-compact: instructions for the API's summary (empty: the API's own prompt)",
    "proxy_request_limit": "ctxtui proxy: bytes of a request body as sent; a larger one is refused with a 413",
    "proxy_body_limit": "ctxtui proxy: bytes of a request body recorded, once inflated; a larger one is forwarded "
    "as sent and recorded without its body",
    "proxy_reply_limit": "ctxtui proxy: bytes of a reply kept for the recording and the live view; past it the "
    "client still gets every byte and the recording says where it was cut",
}
TOP_LEVEL_FIELDS: tuple[str, ...] = tuple(TOP_LEVEL_HELP)
COMPACTION_FIELDS: tuple[str, ...] = tuple(item.name for item in fields(CompactionSettings))


def compaction_defaults() -> dict[str, Any]:
    return dataclasses.asdict(CompactionSettings())


def top_level_defaults() -> dict[str, Any]:
    base = Settings(workdir=Path("."), model=DEFAULT_MODEL)
    return {name: getattr(base, name) for name in TOP_LEVEL_FIELDS}


@cache
def _models() -> tuple[Any, Any]:
    """The pydantic models of one layer (every key optional, unknown keys refused); built lazily."""
    from pydantic import ConfigDict, create_model

    strict_config = ConfigDict(extra="forbid")
    hints = get_type_hints(CompactionSettings)
    compaction = create_model(  # type: ignore[call-overload]
        "CompactionConfig",
        __config__=strict_config,
        **{name: (hints[name] | None, None) for name in COMPACTION_FIELDS},
    )
    top_hints = get_type_hints(Settings)
    top = create_model(  # type: ignore[call-overload]
        "FileConfig",
        __config__=strict_config,
        compaction=(compaction | None, None),
        **{name: (top_hints[name] | None, None) for name in TOP_LEVEL_FIELDS},
    )
    return top, compaction


# CTXTUI_* names that are not settings: the run tag of a tool's processes (core/tools/processes.py),
# and the start-up check's escape hatch for an unchecked Textual (tui/textual_private.py).
OTHER_VARIABLES = frozenset({"CTXTUI_TOOL_RUN", "CTXTUI_ALLOW_UNCHECKED_TEXTUAL"})


def did_you_mean(word: str, choices: Any) -> str:
    """` (did you mean X?)` for the choice closest to a misspelled `word`, or "" when none is close."""
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def setting_names() -> tuple[str, ...]:
    """Every setting the config file, `CTXTUI_*` and `--set` take, top-level first."""
    return (*TOP_LEVEL_FIELDS, *COMPACTION_FIELDS)


def _unknown_key_hint(key: tuple[str, ...]) -> str:
    """Why a key of the config file is not a setting, and what was probably meant (one clause)."""
    name = key[-1]
    if key[:1] == ("compaction",):
        if name in TOP_LEVEL_FIELDS:
            return " (it is a top-level setting: put it above [compaction])"
        return did_you_mean(name, COMPACTION_FIELDS) + f" (known: {', '.join(COMPACTION_FIELDS)})"
    if name in COMPACTION_FIELDS:
        return " (it is a compaction setting: put it under [compaction])"
    return (
        did_you_mean(name, (*TOP_LEVEL_FIELDS, "compaction"))
        + f" (known: {', '.join(TOP_LEVEL_FIELDS)}, [compaction])"
    )


class ConfigError(ValueError):
    """A setting that cannot be used: one line naming where it came from, the key and what is expected."""


def _expected(error: Mapping[str, Any]) -> str:
    kind = str(error.get("type", ""))
    got = error.get("input")
    if kind == "extra_forbidden":
        return "is not a setting"
    if kind.startswith("int") or kind == "int_type":
        return f"needs a whole number, got {got!r}"
    if kind.startswith("float") or kind == "float_type":
        return f"needs a number, got {got!r}"
    if kind.startswith("string") or kind == "str_type":
        return f"needs a string, got {got!r}"
    if kind in ("model_type", "dict_type"):
        return "needs a table"
    if kind == "literal_error":
        return f"needs one of {error.get('ctx', {}).get('expected', '')}, got {got!r}"
    return f"{error.get('msg', 'is not valid')}, got {got!r}"


_NOT_EXACT = object()


def _exact_scalar(kind: Any, value: Any) -> Any:
    """`value` as the pydantic model would return it, if it already has the field's type, else _NOT_EXACT."""
    if get_origin(kind) is Literal:
        return value if type(value) is str and value in get_args(kind) else _NOT_EXACT
    if kind is bool:
        return value if isinstance(value, bool) else _NOT_EXACT
    if kind is int:
        return value if type(value) is int else _NOT_EXACT
    if kind is float:
        return float(value) if type(value) in (int, float) else _NOT_EXACT
    if kind is str:
        return value if type(value) is str else _NOT_EXACT
    return _NOT_EXACT


@cache
def _field_types() -> tuple[dict[str, Any], dict[str, Any]]:
    """(top-level field -> type, compaction field -> type) of the configurable keys."""
    top_hints, compaction_hints = get_type_hints(Settings), get_type_hints(CompactionSettings)
    return (
        {name: top_hints[name] for name in TOP_LEVEL_FIELDS},
        {name: compaction_hints[name] for name in COMPACTION_FIELDS},
    )


def _exact_layer(values: Mapping[str, Any]) -> dict[str, Any] | None:
    """The layer as `_validate_layer` returns it when every key is known and every value already has its
    field's type (no conversion, nothing to refuse); None when pydantic has to decide."""
    top_types, compaction_types = _field_types()
    checked: dict[str, Any] = {}
    for key, value in values.items():
        if key == "compaction":
            if not isinstance(value, Mapping):
                return None
            table: dict[str, Any] = {}
            for name, item in value.items():
                converted = _exact_scalar(compaction_types.get(name), item)
                if converted is _NOT_EXACT:
                    return None
                table[name] = converted
            checked[key] = table
            continue
        converted = _exact_scalar(top_types.get(key), value)
        if converted is _NOT_EXACT:
            return None
        checked[key] = converted
    return checked


def _validate_layer(values: dict[str, Any], where: str, key_name: Any) -> dict[str, Any]:
    """Validate one layer's values; returns them converted (e.g. "80000" -> 80000)."""
    exact = _exact_layer(values)
    if exact is not None:
        return exact  # nothing to convert or refuse: the pydantic model would return the same
    return _validate_with_pydantic(values, where, key_name)


def _validate_with_pydantic(values: dict[str, Any], where: str, key_name: Any) -> dict[str, Any]:
    """The full check: pydantic converts what it can and names the first key it refuses."""
    from pydantic import ValidationError

    top, _ = _models()
    hints = {**get_type_hints(Settings), **get_type_hints(CompactionSettings)}
    for key, value in _walk(values):
        if isinstance(value, bool) and hints.get(key[-1]) in (int, float):  # pydantic would take true for 1
            kind = "int" if hints[key[-1]] is int else "float"
            raise ConfigError(f"{where}: {key_name(key)} {_expected({'type': kind, 'input': value})}")
    try:
        validated = top.model_validate(values)
    except ValidationError as error:
        first = error.errors()[0]
        key = tuple(str(part) for part in first.get("loc", ()))
        hint = _unknown_key_hint(key) if first.get("type") == "extra_forbidden" else ""
        raise ConfigError(f"{where}: {key_name(key)} {_expected(first)}{hint}") from None
    return validated.model_dump(exclude_none=True, exclude_unset=True)


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


def read_environment(environ: Mapping[str, str]) -> tuple[dict[str, Any], dict[tuple[str, ...], str]]:
    """The environment layer (`CTXTUI_<FIELD>`, and ANTHROPIC_MODEL below CTXTUI_MODEL), with the variable of each key."""
    values: dict[str, Any] = {}
    names: dict[tuple[str, ...], str] = {}
    for name in TOP_LEVEL_FIELDS:
        raw = environ.get(env_name((name,)))
        if raw:
            values[name] = raw
            names[(name,)] = env_name((name,))
    if "model" not in values and environ.get("ANTHROPIC_MODEL"):
        values["model"] = environ["ANTHROPIC_MODEL"]
        names[("model",)] = "ANTHROPIC_MODEL"
    for name in COMPACTION_FIELDS:
        raw = environ.get(env_name((name,)))
        if raw:
            values.setdefault("compaction", {})[name] = raw.strip()
            names[("compaction", name)] = env_name((name,))
    validated = _validate_layer(values, "environment", lambda key: names.get(key, env_name(key)))
    return validated, names


def unknown_environment(environ: Mapping[str, str]) -> list[str]:
    """The `CTXTUI_*` variables (in any case) that set nothing, each with what was probably meant:
    a misspelled variable used to be ignored without a word."""
    known = {env_name((name,)) for name in setting_names()}
    found = []
    for name in sorted(environ):
        if name.upper().startswith(ENV_PREFIX) and name not in known and name not in OTHER_VARIABLES:
            found.append(name + did_you_mean(name.upper(), known))
    return found


def parse_overrides(overrides: list[str]) -> dict[str, Any]:
    """`--set FIELD=VALUE` items as a layer (compaction fields, and the top-level settings too)."""
    values: dict[str, Any] = {}
    for item in overrides:
        key, sep, raw = item.partition("=")
        key = key.strip().replace("-", "_").removeprefix("compaction.")
        if not sep:
            raise ConfigError(f"--set {item}: takes FIELD=VALUE, e.g. --set context_char_limit=80000")
        if key not in setting_names():
            raise ConfigError(
                f"--set {key}: not a setting{did_you_mean(key, setting_names())}; "
                f"FIELD is one of: {', '.join(setting_names())}"
            )
        if key in COMPACTION_FIELDS:
            values.setdefault("compaction", {})[key] = raw.strip()
        else:
            values[key] = raw.strip()
    return _validate_layer(values, "--set", lambda key: key[-1])


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
    flag_values = {key: value for key, value in (flags or {}).items() if value is not None}
    layers.append((flag_values, lambda key: f"flag --{key[-1].replace('_', '-')}"))

    top = top_level_defaults()
    compaction = compaction_defaults()
    sources: dict[tuple[str, ...], str] = {}
    for values, label in layers:
        for key, value in _walk(values):
            target = compaction if key[0] == "compaction" else top
            target[key[-1]] = value
            sources[key] = label(key)
    if ("bash_timeout",) not in sources and _above(top["bash_timeout"], top["max_bash_timeout"]):
        top["bash_timeout"] = top["max_bash_timeout"]  # only max_bash_timeout was set: the default follows it
        sources[("bash_timeout",)] = "default, lowered to max_bash_timeout"
    try:
        check_ranges(top, compaction, sources)
        check_engine(top, sources)
        check_text(top, sources)
    except RangeError as error:
        raise ConfigError(str(error)) from None
    unknown = unknown_environment(environ)
    warnings = (
        (f"ignored {', '.join(unknown)}: not a setting of ctxtui (ctxtui config lists them)",)
        if unknown
        else ()
    )
    return ResolvedConfig(path, top, check_compaction(compaction, sources), sources, warnings)


def _above(value: Any, limit: Any) -> bool:
    """`value` is a number above `limit`, itself a valid max_bash_timeout."""
    allowed = range_of(("max_bash_timeout",))
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
    other keys and the comments; validated first (type and range), written atomically. A config file
    that is a symlink (dotfiles kept in a repository) is written through: the file it points to is
    replaced, the link stays, and the file keeps its mode. Returns the path written."""
    import tomlkit

    path = config_path() if path is None else path
    parts = key.split(".")
    layer: dict[str, Any] = {parts[0]: value} if len(parts) == 1 else {parts[0]: {parts[1]: value}}
    checked = _validate_layer(layer, f"save_setting {key}", lambda item: ".".join(item))
    for item, converted in _walk(checked):
        allowed = range_of(item)
        if allowed is not None and not allowed.holds(converted):
            raise ConfigError(
                f"save_setting {key}: {converted!r} is out of range: it must be {allowed.describe()}"
            )
    try:
        check_text(
            {name: value for name, value in checked.items() if name != "compaction"},
            {(name,): f"save_setting {key}" for name in checked},
        )
    except RangeError as error:
        raise ConfigError(str(error)) from None
    target = Path(os.path.realpath(path))  # through any symlink, to the file itself
    document = tomlkit.parse(target.read_text(encoding="utf-8")) if target.is_file() else tomlkit.document()
    if len(parts) == 1:
        document[parts[0]] = value
    else:
        table = document.get(parts[0])
        if table is None:
            table = tomlkit.table()
            document[parts[0]] = table
        table[parts[1]] = value
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
    import tomlkit

    lines = [
        f"# ctxtui settings in effect; config file: {config.path}"
        + ("" if config.path.is_file() else " (not present)"),
        "# precedence: flag > env CTXTUI_* > file > default",
        "",
    ]
    width = 0
    rendered: list[tuple[str, str] | None] = []
    for name in TOP_LEVEL_FIELDS:
        rendered.append((f"{name} = {tomlkit.item(config.top[name]).as_string()}", config.source(name)))
    rendered.append(None)
    for name in COMPACTION_FIELDS:
        value = getattr(config.compaction, name)
        rendered.append((f"{name} = {tomlkit.item(value).as_string()}", config.source("compaction", name)))
    width = max(len(item[0]) for item in rendered if item is not None)
    for item in rendered:
        if item is None:
            lines.extend(["", "[compaction]"])
            continue
        text, source = item
        lines.append(f"{text.ljust(width)}  # {source}")
    return "\n".join(lines) + "\n"


def apply_config(settings: Settings, config: ResolvedConfig) -> Settings:
    """`settings` with the resolved top-level values and compaction settings."""
    return replace(settings, compaction=config.compaction, **config.top)


__all__ = [
    "COMPACTION_FIELDS",
    "DEFAULT_MODEL",
    "ENV_PREFIX",
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
    "unknown_environment",
]
