"""string, enum and bool values: NFKC, whitespace and case rules; allowed spellings."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Hashable
from typing import Final

from claimwatch.core.limits import clip
from claimwatch.core.values.base import NormalizationError, _Base, _describe, _fold
from claimwatch.models.policy import FieldPolicy

_WS_RUN: Final = re.compile(r"\s+")


class _StringNormalizer(_Base):
    """string and text: NFKC, then whitespace policy, then case policy."""

    #: Bound on the remembered values, and on the length of a value worth remembering.
    _MAX_REMEMBERED: Final = 4096
    _MAX_REMEMBERED_LENGTH: Final = 256

    def __init__(self, field: FieldPolicy) -> None:
        super().__init__(field)
        self.fold = field.case == "fold"
        self.whitespace = field.whitespace
        #: canonical forms already worked out (short values repeat: addresses, names)
        self.seen: dict[str, str] = {}

    def _canon(self, value: object) -> Hashable:
        if type(value) is str:
            known = self.seen.get(value)
            if known is not None:
                return known
            text = self._normalized(value)
            if len(self.seen) < self._MAX_REMEMBERED and len(value) <= self._MAX_REMEMBERED_LENGTH:
                self.seen[value] = text
            return text
        return self._normalized(value)

    def _normalized(self, value: object) -> str:
        if not isinstance(value, str):
            raise NormalizationError(f"expected a string, got {_describe(value)}")
        text = unicodedata.normalize("NFKC", value)
        if self.fold:
            text = _fold(text)
        if self.whitespace == "trim":
            text = text.strip()
        elif self.whitespace == "collapse":
            text = _WS_RUN.sub(" ", text).strip()
        return text


class _EnumNormalizer(_Base):
    """enum: a string among the field's `values`; canon is the value as the policy writes it."""

    #: Bound on the remembered spellings (policy values plus accepted variants).
    _MAX_SPELLINGS: Final = 1024

    def __init__(self, field: FieldPolicy) -> None:
        super().__init__(field)
        self.fold = field.case == "fold"
        self.values: tuple[str, ...] = tuple(field.values or ())
        self.allowed = ", ".join(self.values)
        lookup: dict[str, str] = {}
        for allowed in self.values:
            lookup.setdefault(self._key(allowed), allowed)  # first spelling wins on collision
        self.lookup = lookup
        #: The policy's own spellings, looked up before any normalization work.
        self.exact = {allowed: lookup[self._key(allowed)] for allowed in self.values}

    def _key(self, text: str) -> str:
        key = unicodedata.normalize("NFKC", text).strip()
        return _fold(key).strip() if self.fold else key

    def _canon(self, value: object) -> Hashable:
        if not isinstance(value, str):
            raise NormalizationError(
                f"expected one of the allowed values ({self.allowed}) as a string, "
                f"got {_describe(value)}"
            )
        found = self.exact.get(value)
        if found is None:
            found = self.lookup.get(self._key(value))
            if found is not None and len(self.exact) < self._MAX_SPELLINGS:
                self.exact[value] = found  # remember this spelling (bounded)
        if found is None:
            raise NormalizationError(
                f"{clip(repr(value))} is not one of the allowed values: {self.allowed}"
            )
        return found


class _BoolNormalizer(_Base):
    """bool: JSON true/false, or the strings "true"/"false" in any case."""

    _WORDS: Final = {"true": True, "false": False}

    def _canon(self, value: object) -> Hashable:
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            found = self._WORDS.get(value.strip().lower())
            if found is not None:
                return found
        raise NormalizationError(f"expected true or false, got {_describe(value)}")
