"""The policy file (SPEC section 3): sources, per-field rules, defaults, alerts and signing."""

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
    model_config = ConfigDict(extra="forbid", frozen=True)


class Tolerance(_Strict):
    """Numeric tolerance: values agree when max - min is within abs or rel x the largest |value|."""

    abs: float | None = Field(default=None, ge=0)
    rel: float | None = Field(default=None, ge=0)


class Defaults(_Strict):
    """Values every field inherits unless it sets its own."""

    freshness: Freshness = 5 * 60 * 1_000_000
    on_conflict: OnConflict = OnConflict.BLOCK
    clock_skew: Duration = 5 * 1_000_000
    settle: Duration = 2 * 1_000_000
    max_delay: Duration = 10 * 1_000_000
    grace: Duration = 30 * 1_000_000
    max_lineages: int = Field(default=32, ge=1)
    unknown_fields: Literal["reject", "decide"] = Field(
        default="reject",
        description="a claim on a field the policy does not name: `reject` it (a reason names "
        "the policy version), or `decide` it under these defaults as a `json` field",
    )


class SourceEntry(_Strict):
    """A registered source: its authority class and upstream lineage."""

    authority: Authority = Authority.DERIVED
    lineage: str | None = None


class FieldPolicy(_Strict):
    """The rules of one field: type, normalization, freshness, conflict handling, ownership."""

    type: FieldType = FieldType.JSON
    values: list[str] | None = None
    currency: str | None = None
    unit: str | None = None
    tolerance: Tolerance | None = None
    case: Literal["preserve", "fold"] = "preserve"
    whitespace: Literal["preserve", "trim", "collapse"] = "trim"
    nullable: bool = False
    freshness: Freshness | None = None
    on_conflict: OnConflict | None = None
    consequential: bool = False
    owner: str | None = None
    authority: dict[str, Authority] = Field(default_factory=dict)
    contract_version: str | None = None
    settle: Duration | None = None
    max_delay: Duration | None = None

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
    min_count: int = Field(default=5, ge=1)
    alpha: float = Field(default=0.001, gt=0, lt=1)
    resolve_after: int = Field(default=3, ge=1)
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
    min_samples: int = Field(default=5, ge=1)
    silent_min_decisions: int = Field(
        default=20,
        ge=1,
        description="decisions of the field since a source's last claim before it counts as silent",
    )


class Alerts(_Strict):
    """Alert detector settings; every key has a default."""

    conflict_spike: ConflictSpikeAlert = Field(default_factory=ConflictSpikeAlert)
    replica_lag: ReplicaLagAlert = Field(default_factory=ReplicaLagAlert)


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
    file: str | None = None

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
    env: str | None = None
    file: str | None = None
    keys: list[SigningKey] = Field(default_factory=list)

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
    """Arguments of one kind attack arguments of another (SPEC section 10)."""

    attacker_kind: str = Field(min_length=1)
    attacked_kind: str = Field(min_length=1)
    type: Literal["rebut", "undercut", "undermine"]


class Argumentation(_Strict):
    """Policy verdicts: attack rules, the checks a request waits for, timeout and semantics."""

    attack_rules: list[AttackRule] = Field(default_factory=list)
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
    defaults: Defaults = Field(default_factory=Defaults)
    sources: dict[str, SourceEntry] = Field(default_factory=dict)
    fields: dict[str, FieldPolicy] = Field(default_factory=dict)
    alerts: Alerts = Field(default_factory=Alerts)
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


def _check_currency(code: str) -> None:
    from babel.numbers import list_currencies

    if code not in list_currencies():
        raise ValueError(f"{code!r} is not an ISO 4217 currency code known to babel")


def _check_unit(unit: str) -> None:
    try:
        check_unit(unit)
    except UnitError as exc:
        raise ValueError(str(exc)) from exc
