"""A policy compiled for lookups: per-field rules, authority classes and lineages of sources."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, TypeAlias

from claimwatch.core.limits import clip
from claimwatch.core.normalize import Normalizer, normalizer_for
from claimwatch.models.durations import UNTIL_EDITED
from claimwatch.models.policy import RANK, Authority, FieldPolicy, FieldType, OnConflict, Policy

_UNKNOWN_FIELD: Final = FieldPolicy(type=FieldType.JSON)
#: Most cached rules and most cached source views (caches: answers never depend on them).
#: Field names and sources come from producers: unbounded, each new one would stay forever.
MAX_CACHED: Final = 16_384
#: The longest field name a spelling suggestion is looked for (the matcher is quadratic).
_MAX_SUGGESTED: Final = 128

#: The keys of one signing source by key id (`None`: the key of claims without `kid`).
KeyRing: TypeAlias = Mapping[str | None, bytes]


def base_source(source: str) -> str:
    """The service part of a source id: `reporting-replica@eu-west-1` -> `reporting-replica`."""
    return source.split("@", 1)[0]


def suggest(name: str, known: Mapping[str, object]) -> str | None:
    """The known name `name` is most likely a misspelling of (case, `_` and `-` aside first)."""
    if len(name) > _MAX_SUGGESTED or not known:
        return None
    folded = _fold(name)
    same = sorted(k for k in known if _fold(k) == folded)
    if same:
        return same[0]
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return close[0] if close else None


def _fold(name: str) -> str:
    return name.casefold().replace("_", "").replace("-", "")


def is_owner(rule: FieldRule, source: str) -> bool:
    """Whether a source is the field's owner (exact id, or its service part)."""
    owner = rule.owner
    if owner is None:
        return False
    if source == owner:  # the common case, before any split
        return True
    return "@" in source and base_source(source) == owner


@dataclass(frozen=True, slots=True)
class SourceView:
    """What the policy says about one source for one field."""

    authority: Authority
    rank: int
    lineage: str
    registered: bool


@dataclass(frozen=True, slots=True)
class FieldRule:
    """Everything resolution needs to know about one field, defaults applied."""

    name: str
    spec: FieldPolicy
    normalizer: Normalizer
    known: bool
    freshness_us: int
    on_conflict: OnConflict
    clock_skew_us: int
    settle_us: int
    max_delay_us: int
    grace_us: int
    consequential: bool
    owner: str | None
    contract_version: str | None
    #: why every claim of the field is rejected (a field the policy does not name), or None
    refusal: str | None
    #: how long a claim can still change a decision: freshness plus grace (capped at
    #: `until_edited`); an older claim is dropped from its fact (made once per field)
    horizon_us: int


class CompiledPolicy:
    """Policy lookups with their answers cached; immutable once built."""

    def __init__(
        self, policy: Policy, signing_keys: Mapping[str, bytes | KeyRing] | None = None
    ) -> None:
        """Compile `policy`; `signing_keys` are each `signing` entry's keys by kid.

        The keys are loaded at the edge; a bare `bytes` value is the entry's one key, for
        claims without `kid`.
        """
        self.policy = policy
        self.version = policy.policy_version
        self.signing_keys: dict[str, KeyRing] = {
            name: {None: keys} if isinstance(keys, bytes) else dict(keys)
            for name, keys in (signing_keys or {}).items()
        }
        #: services one of whose exact ids (`name@region`) signs while sharing the bare
        #: registry entry `name` with every other region of it, which so must sign too
        self.shared_signing = frozenset(
            base_source(name)
            for name in policy.signing
            if "@" in name and name not in policy.sources and base_source(name) in policy.sources
        )
        self._rules: dict[str, FieldRule] = {}
        self._views: dict[tuple[str, str], SourceView] = {}

    def rule(self, field: str) -> FieldRule:
        """The rule of a field; a field missing from the policy gets the defaults as `json`.

        Such a field's `refusal` rejects its every claim, naming the policy version and the
        likeliest field meant, unless the policy says `defaults.unknown_fields: decide`.
        """
        rule = self._rules.get(field)
        if rule is None:
            rule = self._compile(field)
            if len(self._rules) >= MAX_CACHED:
                self._rules.clear()
            self._rules[field] = rule
        return rule

    def source_view(self, field: str, source: str) -> SourceView:
        """Class and lineage of a source for a field: field map, then registry; else derived."""
        key = (field, source)
        view = self._views.get(key)
        if view is None:
            view = self._view(field, source)
            if len(self._views) >= MAX_CACHED:
                self._views.clear()
            self._views[key] = view
        return view

    def _compile(self, field: str) -> FieldRule:
        spec = self.policy.fields.get(field)
        known = spec is not None
        spec = spec if spec is not None else _UNKNOWN_FIELD
        defaults = self.policy.defaults
        freshness = spec.freshness if spec.freshness is not None else defaults.freshness
        return FieldRule(
            name=field,
            spec=spec,
            normalizer=normalizer_for(spec),
            known=known,
            freshness_us=freshness,
            on_conflict=spec.on_conflict or defaults.on_conflict,
            clock_skew_us=defaults.clock_skew,
            settle_us=spec.settle if spec.settle is not None else defaults.settle,
            max_delay_us=spec.max_delay if spec.max_delay is not None else defaults.max_delay,
            grace_us=defaults.grace,
            consequential=spec.consequential,
            owner=spec.owner or self._sole_system_of_record(spec),
            contract_version=spec.contract_version,
            refusal=None if known or defaults.unknown_fields == "decide" else self._refusal(field),
            horizon_us=min(freshness + defaults.grace, UNTIL_EDITED),
        )

    def _refusal(self, field: str) -> str:
        """Why a claim on a field the policy does not name is rejected, with a likely name."""
        reason = f"field {clip(field)!r} is not in policy {self.version}"
        guess = suggest(field, self.policy.fields)
        if guess is not None:
            reason += f" (did you mean {guess!r}?)"
        return reason

    def _sole_system_of_record(self, spec: FieldPolicy) -> str | None:
        owners = {s for s, a in spec.authority.items() if a is Authority.SYSTEM_OF_RECORD}
        owners |= {
            s
            for s, e in self.policy.sources.items()
            if e.authority is Authority.SYSTEM_OF_RECORD and s not in spec.authority
        }
        return next(iter(owners)) if len(owners) == 1 else None

    def _view(self, field: str, source: str) -> SourceView:
        spec = self.policy.fields.get(field)
        overrides = spec.authority if spec is not None else {}
        base = base_source(source)
        entry = self.policy.sources.get(source) or self.policy.sources.get(base)
        authority: Authority | None = overrides.get(source) or overrides.get(base)
        if authority is None and entry is not None:
            authority = entry.authority
        registered = authority is not None
        authority = authority or Authority.DERIVED
        lineage = (entry.lineage if entry is not None else None) or source
        return SourceView(authority, RANK[authority], lineage, registered)
