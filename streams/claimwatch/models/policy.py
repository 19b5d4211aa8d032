"""The policy file (docs/reference/policy.md): sources, per-field rules, defaults, alerts, signing.

Each key's docstring is its description in the JSON Schema and in the policy reference page.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from claimwatch.models.durations import Duration, Freshness
from claimwatch.units import UnitError, check_unit


class Authority(StrEnum):
    """Authority classes, weakest first."""

    ASSERTED = "asserted"
    DERIVED = "derived"
    CACHED = "cached"
    SYSTEM_OF_RECORD = "system_of_record"


#: Rank of each class: a higher rank outranks a lower one.
RANK: Final = {
    Authority.ASSERTED: 0,
    Authority.DERIVED: 1,
    Authority.CACHED: 2,
    Authority.SYSTEM_OF_RECORD: 3,
}


class OnConflict(StrEnum):
    """What to do when the strongest class disagrees."""

    BLOCK = "block"
    PREFER_RECENT = "prefer_recent"
    PREFER_PRIMARY = "prefer_primary"
    PRESENT_WITH_TIMESTAMP = "present_with_timestamp"


class FieldType(StrEnum):
    """Value types a field can have."""

    ENUM = "enum"
    STRING = "string"
    BOOL = "bool"
    INTEGER = "integer"
    NUMBER = "number"
    MONEY = "money"
    QUANTITY = "quantity"
    TIMESTAMP = "timestamp"
    TEXT = "text"
    JSON = "json"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class Tolerance(_Strict):
    """Numeric tolerance: values agree when max - min is within abs or rel x the largest |value|."""

    abs: float | None = Field(default=None, ge=0)
    """Largest absolute difference between values that still agree."""
    rel: float | None = Field(default=None, ge=0)
    """Largest difference relative to the largest absolute value that still agrees."""


class Defaults(_Strict):
    """Values every field inherits unless it sets its own."""

    freshness: Freshness = 5 * 60 * 1_000_000
    """How old a claim may be (by `observed_at`) and still vote; older is `stale`."""
    on_conflict: OnConflict = OnConflict.BLOCK
    """What to do when the strongest authority class disagrees."""
    clock_skew: Duration = 5 * 1_000_000
    """How far ahead of the partition clock a claim may be observed; beyond it is rejected."""
    settle: Duration = 2 * 1_000_000
    """A fact's decision window closes this long after its last claim (`0`: every claim)."""
    max_delay: Duration = 10 * 1_000_000
    """... or this long after the window opened, whichever comes first."""
    grace: Duration = 30 * 1_000_000
    """Live claims are kept this long past their freshness budget."""
    max_lineages: int = Field(default=32, ge=1)
    """Lineages kept per fact; beyond it the oldest lineage is dropped."""
    unknown_fields: Literal["reject", "decide"] = Field(
        default="reject",
        description="a claim on a field the policy does not name: `reject` it (a reason names "
        "the policy version), or `decide` it under these defaults as a `json` field",
    )


class SourceEntry(_Strict):
    """A registered source: its authority class and upstream lineage."""

    authority: Authority = Authority.DERIVED
    """The source's authority class (`asserted` < `derived` < `cached` < `system_of_record`)."""
    lineage: str | None = None
    """The upstream it copies: claims of one lineage are one vote (default: the source)."""


class FieldPolicy(_Strict):
    """The rules of one field: type, normalization, freshness, conflict handling, ownership."""

    type: FieldType = FieldType.JSON
    """The value type: how claims are validated, normalized and compared."""
    values: list[str] | None = None
    """The allowed values of an `enum` field (required for enums, only for them)."""
    currency: str | None = None
    """ISO 4217 currency of a `money` field (required for money, only for it)."""
    unit: str | None = None
    """Unit of a `quantity` field, e.g. `kg` (required for quantities, only for them)."""
    tolerance: Tolerance | None = None
    """When two `number` or `quantity` values agree: `{abs: ...}` and/or `{rel: ...}`."""
    case: Literal["preserve", "fold"] = "preserve"
    """`fold` compares strings without case; `preserve` keeps it."""
    whitespace: Literal["preserve", "trim", "collapse"] = "trim"
    """Strings: `trim` the ends, `collapse` every run of spaces, or `preserve` them."""
    nullable: bool = False
    """Whether `null` is a value of the field."""
    freshness: Freshness | None = None
    """The field's freshness budget (default `defaults.freshness`); `until_edited`: never."""
    on_conflict: OnConflict | None = None
    """The field's conflict rule (default: `defaults.on_conflict`)."""
    consequential: bool = False
    """Acting on a wrong value is costly: anything but a verified resolution escalates."""
    owner: str | None = None
    """The primary source (`prefer_primary`, lag); default: the field's one system of record."""
    authority: dict[str, Authority] = Field(default_factory=dict)
    """Per-field authority classes by source, over the `sources` registry."""
    contract_version: str | None = None
    """The field's semantics version; a claim naming another one is rejected."""
    settle: Duration | None = None
    """The field's settle window (default: `defaults.settle`)."""
    max_delay: Duration | None = None
    """The field's longest window (default: `defaults.max_delay`)."""

    @field_validator("currency")
    @classmethod
    def _known_currency(cls, code: str | None) -> str | None:
        if code is not None:
            _check_currency(code)
        return code

    @field_validator("unit")
    @classmethod
    def _known_unit(cls, unit: str | None) -> str | None:
        if unit is not None:
            _check_unit(unit)
        return unit

    @model_validator(mode="after")
    def _type_needs(self) -> FieldPolicy:
        if self.type is FieldType.ENUM and not self.values:
            raise ValueError("an enum field needs `values` (the allowed values)")
        if self.type is not FieldType.ENUM and self.values is not None:
            raise ValueError("`values` is only for enum fields")
        if self.type is FieldType.MONEY:
            if not self.currency:
                raise ValueError("a money field needs `currency` (ISO 4217 code, e.g. USD)")
        elif self.currency is not None:
            raise ValueError("`currency` is only for money fields")
        if self.type is FieldType.QUANTITY:
            if not self.unit:
                raise ValueError("a quantity field needs `unit` (e.g. kg, m, s)")
        elif self.unit is not None:
            raise ValueError("`unit` is only for quantity fields")
        if self.tolerance is not None and self.type not in (FieldType.NUMBER, FieldType.QUANTITY):
            raise ValueError("`tolerance` is only for number and quantity fields")
        return self


class ConflictSpikeAlert(_Strict):
    """Thresholds of the conflict-spike detector."""

    window: Duration = 60 * 1_000_000
    """Length of the tumbling window conflicts are counted in."""
    min_count: int = Field(default=5, ge=1)
    """Fewest conflicts in a window that can fire."""
    alpha: float = Field(default=0.001, gt=0, lt=1)
    """Fire when the count's tail probability under the expected count is below this."""
    resolve_after: int = Field(default=3, ge=1)
    """Quiet windows after which a firing alert is resolved."""
    baseline_half_life: Duration = Field(
        default=30 * 60 * 1_000_000,
        description="half-life of the exponentially weighted conflict rate per decision",
    )
    baseline_floor: float = Field(
        default=0.01,
        gt=0,
        lt=1,
        description="lowest conflict rate per decision the expected count assumes",
    )


class ReplicaLagAlert(_Strict):
    """Thresholds of the replica-lag detector."""

    evaluation: Duration = 5 * 60 * 1_000_000
    """The window a source's lag status is judged over; no claim in it is `silent`."""
    min_samples: int = Field(default=5, ge=1)
    """Fewest lag samples before a source can be `lagging`."""
    silent_min_decisions: int = Field(
        default=20,
        ge=1,
        description="decisions of the field since a source's last claim before it counts as silent",
    )


class Alerts(_Strict):
    """Alert detector settings; every key has a default."""

    conflict_spike: ConflictSpikeAlert = Field(default_factory=ConflictSpikeAlert)
    """The conflict-spike detector."""
    replica_lag: ReplicaLagAlert = Field(default_factory=ReplicaLagAlert)
    """The replica-lag detector."""


#: What a key id (`kid`) may look like: it travels in claims and in DLQ reasons.
KID_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$"
#: The fewest bytes a signing key may have (HMAC-SHA256's output size).
MIN_KEY_BYTES: Final = 32


class SigningKey(_Strict):
    """One HMAC key: where it comes from (an environment variable or a file, never the policy).

    `kid` names the key; a claim signed with it carries the same `kid`, so the verifier
    picks the key by it and keys can rotate with the old and the new one both accepted.
    """

    kid: str | None = Field(
        default=None,
        pattern=KID_PATTERN,
        description="key id a claim names in its `kid` (none: claims without `kid`)",
    )
    env: str | None = None
    """Environment variable holding the key (at least 32 bytes)."""
    file: str | None = None
    """File holding the key, relative to the policy file's directory."""

    @model_validator(mode="after")
    def _one_place(self) -> SigningKey:
        if (self.env is None) == (self.file is None):
            raise ValueError("name exactly one of `env` or `file` for a signing key")
        return self


class SigningEntry(_Strict):
    """The keys a source signs with: one key (`env`/`file`, optional `kid`) or `keys: [...]`.

    During a rotation `keys` lists the old key and the new one; claims name theirs by
    `kid`. At most one key may have no `kid` (it checks claims that carry none).
    """

    kid: str | None = Field(default=None, pattern=KID_PATTERN)
    """Key id of the single key (claims name it in `kid`)."""
    env: str | None = None
    """Environment variable holding the single key."""
    file: str | None = None
    """File holding the single key, relative to the policy file."""
    keys: list[SigningKey] = Field(default_factory=list)
    """Several keys, each with its `kid` (during a rotation)."""

    @model_validator(mode="after")
    def _one_form(self) -> SigningEntry:
        single = self.env is not None or self.file is not None
        if self.keys and (single or self.kid is not None):
            raise ValueError("give one key (`env` or `file`, and `kid`) or `keys`, not both")
        if not self.keys:
            if (self.env is None) == (self.file is None):
                raise ValueError("name exactly one of `env` or `file` for a signing key")
            return self
        kids = [k.kid for k in self.keys]
        if kids.count(None) > 1:
            raise ValueError("at most one key of a source may have no `kid`")
        repeated = sorted({k for k in kids if k is not None and kids.count(k) > 1})
        if repeated:
            raise ValueError(f"key id {repeated[0]!r} is given twice: each `kid` names one key")
        return self

    def all_keys(self) -> list[tuple[tuple[str | int, ...], SigningKey]]:
        """Every key with its place in the entry: `()` for one key, `("keys", i)` in a list."""
        if self.keys:
            return [(("keys", i), key) for i, key in enumerate(self.keys)]
        return [((), SigningKey(kid=self.kid, env=self.env, file=self.file))]


class AttackRule(_Strict):
    """Arguments of one kind attack another's (docs/conflict-kinds.md#policy-verdicts)."""

    attacker_kind: str = Field(min_length=1)
    """The argument kind that attacks."""
    attacked_kind: str = Field(min_length=1)
    """The argument kind it attacks."""
    type: Literal["rebut", "undercut", "undermine"]
    """How it attacks: `rebut`, `undercut` or `undermine`."""


class Argumentation(_Strict):
    """Policy verdicts: attack rules, the checks a request waits for, timeout and semantics."""

    attack_rules: list[AttackRule] = Field(default_factory=list)
    """Who attacks whom among the checks' arguments."""
    expected_checks: list[str] | dict[str, list[str]] = Field(
        default_factory=list,
        description="check names every request waits for, or per request type ('*' for others)",
    )
    timeout: Duration = Field(
        default=10 * 1_000_000,
        gt=0,
        description="after this long on the event clock a request missing checks is undecided",
    )
    semantics: Literal["grounded", "complete", "preferred", "stable"] = "grounded"
    """The extension that decides: `grounded` (default), `complete`, `preferred` or `stable`."""
    remember: Duration = Field(
        default=10 * 60 * 1_000_000,
        description="how long a decided request id is kept, so late signals are dropped",
    )

    @model_validator(mode="after")
    def _one_rule_per_pair(self) -> Argumentation:
        seen: set[tuple[str, str]] = set()
        for rule in self.attack_rules:
            pair = (rule.attacker_kind, rule.attacked_kind)
            if pair in seen:
                raise ValueError(f"two attack rules for {pair[0]} -> {pair[1]}: keep one")
            seen.add(pair)
        return self


class Policy(_Strict):
    """A whole, versioned policy file."""

    policy_version: str = Field(min_length=1)
    """The policy's name and version; it is part of every decision id."""
    defaults: Defaults = Field(default_factory=Defaults)
    """Values every field inherits unless it sets its own."""
    sources: dict[str, SourceEntry] = Field(default_factory=dict)
    """The source registry: each source's authority class and lineage."""
    fields: dict[str, FieldPolicy] = Field(default_factory=dict)
    """The rules of each field, by field name."""
    alerts: Alerts = Field(default_factory=Alerts)
    """Thresholds of the alert detectors."""
    signing: dict[str, SigningEntry] = Field(
        default_factory=dict,
        description="sources whose claims must be signed, and their keys; a bare name covers "
        "every @region of the source, an exact id (name@region) only itself and takes "
        "precedence over the bare name's keys for it",
    )
    signing_exempt: list[str] = Field(
        default_factory=list,
        description="systems of record and field owners a policy with `signing` accepts "
        "unsigned on purpose (without this, such a policy is refused at load)",
    )
    argumentation: Argumentation = Field(default_factory=Argumentation)
    """Policy verdicts: attack rules, expected checks, timeout, semantics."""


def _check_currency(code: str) -> None:
    from babel.numbers import list_currencies

    if code not in list_currencies():
        raise ValueError(f"{code!r} is not an ISO 4217 currency code known to babel")


def _check_unit(unit: str) -> None:
    try:
        check_unit(unit)
    except UnitError as exc:
        raise ValueError(str(exc)) from exc
