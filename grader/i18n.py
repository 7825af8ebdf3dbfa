"""Message catalogues: every user-facing string lives in grader/templates/i18n/<lang>/*.toml."""

from __future__ import annotations

import string
import tomllib
from functools import cache, lru_cache
from typing import Any

from grader.resources import TEMPLATES_DIR

LANGUAGES = ("en", "zh")


class _Lenient(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


class Catalog:
    def __init__(self, lang: str):
        if lang not in LANGUAGES:
            raise ValueError(f"unknown language {lang!r}; choose one of {', '.join(LANGUAGES)}")
        self.lang = lang
        self.messages = _load(lang)
        self.fallback = _load("en")

    def has(self, key: str) -> bool:
        return _lookup(self.messages, key) is not None or _lookup(self.fallback, key) is not None

    def t(self, key: str, **params: Any) -> str:
        """The message for `key`, formatted with `params`; unknown keys come back as the key itself."""
        return _message(self.lang, key, tuple((name, _show(value)) for name, value in params.items()))

    __call__ = t


@lru_cache(maxsize=16384)
def _message(lang: str, key: str, values: tuple[tuple[str, str], ...]) -> str:
    """A formatted message, once per language, key and parameter values (reports repeat them a lot)."""
    text = _lookup(_load(lang), key)
    if text is None:
        text = _lookup(_load("en"), key)
    if not isinstance(text, str):
        return key
    return string.Formatter().vformat(text, (), _Lenient(dict(values))).strip()


def _show(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(_show(v) for v in value) + ")"
    return str(value)


@cache
def _load(lang: str) -> dict:
    """All catalogue files of a language (templates/i18n/<lang>/*.toml), merged."""
    merged: dict = {}
    for file in sorted((TEMPLATES_DIR / "i18n" / lang).glob("*.toml")):
        with open(file, "rb") as handle:
            _merge(merged, tomllib.load(handle), file.name)
    return merged


def _merge(into: dict, new: dict, source: str, path: str = "") -> None:
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value, source, f"{path}{key}.")
        elif key in into:
            raise ValueError(f"message {path}{key} is defined twice (again in {source})")
        else:
            into[key] = value


def section_key(section: str) -> str:
    """Catalogue key of a section title: "3.5" -> "sections.3_5", "ex3.1" -> "sections.ex3_1"."""
    return "sections." + section.replace(".", "_")


def _lookup(messages: dict, key: str) -> Any:
    node: Any = messages
    for part in _split(key):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _split(key: str) -> list[str]:
    """`tests.sec3_5_causal_attention::test_x.title` -> ["tests", "sec3_5_causal_attention::test_x", "title"]."""
    if "::" in key:
        head, _, rest = key.partition(".")
        test_id, _, field = rest.rpartition(".")
        return [head, test_id, field] if test_id else [head, rest]
    return key.split(".")
