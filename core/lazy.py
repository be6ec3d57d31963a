"""Lazy re-exports for a package's `__init__` (PEP 562): a contract name is imported on first use.

A package such as `core.compaction` re-exports its contract names (DESIGN.md) so callers can write
`from core.compaction import Compactor`. Importing them eagerly made every import of any submodule
(`core.compaction.settings`, say) load the whole package first: the app's first frame paid for the
pipeline it does not run yet. With `lazy_exports` the package module stays empty until a name is
asked for; the name then comes from its own module, once (it is cached on the package).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], object]:
    """A module `__getattr__` for `package` that imports each name of `exports` (name -> module) on first use."""

    def __getattr__(name: str) -> object:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
