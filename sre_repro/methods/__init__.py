"""Methods are plug-ins: one file each, defining a `Method` subclass named METHOD (see common.py)."""
from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from ..errors import SreError


def available() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if m.name != "common")


def get_method(name: str):
    if name not in available():
        raise SreError(f"unknown method {name!r}: choose from {', '.join(available())}")
    return importlib.import_module(f"{__name__}.{name}").METHOD
