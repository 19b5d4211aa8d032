"""The `pii` check: e-mail addresses, phone numbers, card numbers and national ids in a call.

E-mails, cards (Luhn and issuer ranges), US SSNs and UK NINOs are found by the small,
tested pattern table below; phone numbers by `phonenumbers` (the port of Google's
libphonenumber, `Leniency.VALID`). A check argues exactly once: `block` when it found an
entity whose action is block, `mask` (with the spans to mask) when it found only entities
to mask, `clear` when it found nothing. See docs/gateway-checks.md.
"""

from __future__ import annotations

import asyncio
import bisect
import re
from collections import Counter
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import phonenumbers
from mcp.types import CallToolResult
from pydantic import BaseModel, ConfigDict, Field, field_validator

from claimwatch.gateway.config import ConfigSource
from claimwatch.gateway.governance.checks import (
    Argument,
    CallView,
    CheckEnv,
    CheckFailed,
    check_config,
)
from claimwatch.gateway.governance.targets import Mask, Span, Target, block_kind
from claimwatch.models.durations import US_PER_S, Duration

Entity = Literal["email", "phone", "card", "national_id"]
Action = Literal["mask", "block"]

#: The entities in the order claims list them.
ENTITIES: Final[tuple[Entity, ...]] = ("email", "phone", "card", "national_id")
#: What a masked entity becomes: `[EMAIL]`, `[PHONE]`, ...
LABELS: Final[dict[Entity, str]] = {e: e.upper() for e in ENTITIES}
#: The longest claim a verdict signal carries.
MAX_CLAIM: Final = 4096

EMAIL: Final = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9](?:[A-Za-z0-9._%+-]{0,62}[A-Za-z0-9])?"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}(?![\w-])"
)
#: A card number candidate; it is one only with one separator kind, 13-19 digits, an
#: issuer's prefix and length, and a valid Luhn check digit.
CARD: Final = re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")
#: (issuer, prefix pattern, lengths)
ISSUERS: Final = (
    ("amex", re.compile(r"3[47]"), {15}),
    ("visa", re.compile(r"4"), {13, 16, 19}),
    ("mastercard", re.compile(r"5[1-5]|2(?:2[2-9][1-9]|2[3-9]\d|[3-6]\d\d|7[01]\d|720)"), {16}),
    ("discover", re.compile(r"6011|65|64[4-9]"), {16, 19}),
    ("diners", re.compile(r"3(?:0[0-5]|[68])"), {14}),
    ("jcb", re.compile(r"35(?:2[89]|[3-8]\d)"), {16}),
)
#: A US social security number with separators (bare nine digits are everywhere).
US_SSN: Final = re.compile(
    r"(?<![\d-])(?!000|666|9\d\d)\d{3}([- ])(?!00)\d{2}\1(?!0000)\d{4}(?![\d-])"
)
#: A UK national insurance number.
UK_NINO: Final = re.compile(
    r"(?<![A-Z0-9])(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]"
    r" ?\d{2} ?\d{2} ?\d{2} ?[A-D](?![A-Za-z0-9])"
)
_NATIONAL_IDS: Final = (("us_ssn", US_SSN), ("uk_nino", UK_NINO))


@dataclass(frozen=True, slots=True)
class Finding:
    """One entity found: where (`pointer`, `start:end`) and what (`detail`: visa, us_ssn, GB)."""

    entity: Entity
    pointer: str
    start: int
    end: int
    detail: str


def luhn_valid(digits: str) -> bool:
    """Whether a string of digits ends in a valid Luhn check digit."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char) * (2 if position % 2 else 1)
        total += value - 9 if value > 9 else value
    return bool(digits) and total % 10 == 0


def card_issuer(candidate: str) -> str | None:
    """The issuer of a card number candidate, or None when it is no card number."""
    if " " in candidate and "-" in candidate:
        return None
    digits = candidate.replace(" ", "").replace("-", "")
    if not luhn_valid(digits):
        return None
    for issuer, prefix, lengths in ISSUERS:
        if len(digits) in lengths and prefix.match(digits):
            return issuer
    return None


def _patterns(target: Target, entities: Collection[Entity]) -> Iterator[Finding]:
    """The e-mails, cards and national ids of one target."""
    text, pointer = target.text, target.pointer
    if "email" in entities:
        for match in EMAIL.finditer(text):
            yield Finding("email", pointer, match.start(), match.end(), "email")
    if "card" in entities:
        for match in CARD.finditer(text):
            issuer = card_issuer(match.group())
            if issuer is not None:
                yield Finding("card", pointer, match.start(), match.end(), issuer)
    if "national_id" in entities:
        for detail, pattern in _NATIONAL_IDS:
            for match in pattern.finditer(text):
                yield Finding("national_id", pointer, match.start(), match.end(), detail)


def _phones(target: Target, regions: Sequence[str | None]) -> Iterator[Finding]:
    """The valid phone numbers of one target, read as numbers of each region in turn."""
    for region in regions:
        matcher = phonenumbers.PhoneNumberMatcher(
            target.text, region, leniency=phonenumbers.Leniency.VALID
        )
        for match in matcher:
            detail = phonenumbers.region_code_for_number(match.number) or region or "ZZ"
            yield Finding("phone", target.pointer, match.start, match.end, detail)


def _free_phones(phones: list[Finding], taken: Sequence[Finding]) -> list[Finding]:
    """The phone numbers overlapping neither `taken` nor each other (earliest, then longest).

    Sorted starts and a running maximum of ends make each test a bisection, so a text
    dense with findings costs n log n, not n².
    """
    ordered = sorted(taken, key=lambda f: f.start)
    starts = [f.start for f in ordered]
    reach: list[int] = []  # reach[i]: the furthest end among ordered[: i + 1]
    for finding in ordered:
        reach.append(max(finding.end, reach[-1] if reach else 0))
    kept: list[Finding] = []
    for phone in sorted(phones, key=lambda f: (f.start, -f.end)):
        before = bisect.bisect_left(starts, phone.end)  # the taken ones starting before its end
        if before and reach[before - 1] > phone.start:
            continue
        if kept and phone.start < kept[-1].end:
            continue
        kept.append(phone)
    return kept


def scan(
    targets: Sequence[Target], entities: Collection[Entity], phone_regions: Sequence[str]
) -> list[Finding]:
    """Every entity of `entities` in the targets, sorted by (pointer, start).

    Per target: e-mails, cards and national ids, then phone numbers. A phone number that
    overlaps anything found before it (an e-mail, a card's digits, an id) is not one.
    """
    regions: Sequence[str | None] = phone_regions or (None,)
    found: list[Finding] = []
    for target in targets:
        mine = list(_patterns(target, entities))
        if "phone" in entities:
            mine.extend(_free_phones(list(_phones(target, regions)), mine))
        found.extend(mine)
    return sorted(found, key=lambda f: (f.pointer, f.start, f.end))


class Strengths(BaseModel):
    """The strength each of the check's arguments carries (0..1; recorded, rules decide)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mask: float = Field(default=0.6, ge=0, le=1)
    block: float = Field(default=0.9, ge=0, le=1)
    clear: float = Field(default=0.3, ge=0, le=1)


class Kinds(BaseModel):
    """The argument kinds the policy's attack rules name."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mask: str = Field(default="pii_detected", min_length=1)
    block: str = Field(default="pii_critical", min_length=1)
    clear: str = Field(default="pii_clear", min_length=1)


def _default_entities() -> dict[Entity, Action]:
    return {"email": "mask", "phone": "mask", "card": "mask", "national_id": "block"}


class PiiConfig(BaseModel):
    """`governance.checks.<name>` of kind `pii`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["pii"]
    entities: dict[Entity, Action] = Field(default_factory=_default_entities, min_length=1)
    phone_regions: list[str] | None = Field(
        default=None,
        description="the regions whose national phone numbers to find, e.g. [US, GB] "
        "([] finds only numbers written in +CC form)",
    )
    unscannable: Literal["block", "ignore"] = "block"
    strength: Strengths = Field(default_factory=Strengths)
    kinds: Kinds = Field(default_factory=Kinds)
    timeout: Duration = 1 * US_PER_S

    @field_validator("phone_regions")
    @classmethod
    def _regions(cls, regions: list[str] | None) -> list[str] | None:
        for region in regions or ():
            if region not in phonenumbers.SUPPORTED_REGIONS:
                raise ValueError(
                    f"{region!r} is not a region libphonenumber knows: write an ISO 3166 "
                    "code in capitals, e.g. US, GB, DE (the UK is GB)"
                )
        return regions


def _counted(findings: Sequence[Finding]) -> str:
    """`email ×2, card ×1`, in the entities' order."""
    counts = Counter(f.entity for f in findings)
    return ", ".join(f"{e} ×{counts[e]}" for e in ENTITIES if counts[e])


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _unread(result: CallToolResult | None, pointers: Sequence[str]) -> str:
    """`/content/1 (image), /content/3 (audio)`."""
    if result is None:
        return ", ".join(pointers)
    return ", ".join(f"{p} ({block_kind(result, p)})" for p in pointers)


class PiiCheck:
    """One configured `pii` check."""

    def __init__(self, name: str, config: PiiConfig, max_scan_bytes: int) -> None:
        self.name = name
        self.config = config
        self.timeout_s = config.timeout / US_PER_S
        self.max_scan_bytes = max_scan_bytes

    @classmethod
    def from_config(
        cls, name: str, raw: Mapping[str, Any], source: ConfigSource, env: CheckEnv
    ) -> PiiCheck:
        config = check_config(PiiConfig, name, raw, source)
        if "phone" in config.entities and config.phone_regions is None:
            raise source.error(
                ("governance", "checks", name, "phone_regions"),
                "missing: a phone scan needs the regions whose national numbers it finds, "
                "e.g. [US, GB] ([] finds only numbers written in +CC form)",
            )
        return cls(name, config, env.max_scan_bytes)

    async def argue(self, call: CallView) -> Argument:
        if call.unscannable and self.config.unscannable == "block":
            raise CheckFailed(f"cannot scan {_unread(call.result, call.unscannable)}")
        size = sum(len(t.text.encode("utf-8", "surrogatepass")) for t in call.targets)
        if size > self.max_scan_bytes:
            raise CheckFailed(
                f"{size} bytes of text to scan, more than max_scan_bytes ({self.max_scan_bytes})"
            )
        config = self.config
        regions = config.phone_regions or ()
        findings = await asyncio.to_thread(scan, call.targets, tuple(config.entities), regions)
        return self.argument(findings, call)

    def argument(self, findings: Sequence[Finding], call: CallView) -> Argument:
        """The one argument of what the scan found."""
        config = self.config
        blocked = [f for f in findings if config.entities[f.entity] == "block"]
        unread = (
            f"; not scanned: {_unread(call.result, call.unscannable)}" if call.unscannable else ""
        )
        if blocked:
            claim = f"{_plural(len(blocked), 'critical PII item')} ({_counted(blocked)}) — blocked"
            return Argument(
                config.kinds.block, (claim + unread)[:MAX_CLAIM], config.strength.block, "deny"
            )
        if findings:
            claim = (
                f"{_plural(len(findings), 'PII item')} ({_counted(findings)}) — masking required"
            )
            spans = tuple(Span(f.pointer, f.start, f.end, LABELS[f.entity]) for f in findings)
            return Argument(
                config.kinds.mask,
                (claim + unread)[:MAX_CLAIM],
                config.strength.mask,
                "modify",
                Mask(spans=spans),
            )
        characters = sum(len(t.text) for t in call.targets)
        strings = _plural(len(call.targets), "string")
        claim = f"no PII in {strings} ({_plural(characters, 'character')})"
        return Argument(
            config.kinds.clear, (claim + unread)[:MAX_CLAIM], config.strength.clear, "allow"
        )

    async def aclose(self) -> None:
        return None
