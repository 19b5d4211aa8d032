"""Step 1 of resolution: does a claim keep its field's contract; what is its normalized value."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from claimwatch.core.claim import Claim, memo_of
from claimwatch.core.limits import clip, describe
from claimwatch.core.normalize import ABSENT, NormalizationError
from claimwatch.core.policy import FieldRule
from claimwatch.models.durations import format_duration
from claimwatch.models.statuses import EVIDENCE_STATUSES, STATUSES


@dataclass(slots=True)
class ContractCheck:
    """The contract check of one claim: an error, or whether it is evidence and its canon.

    Never changed once made. Not declared frozen: a check makes one for every claim of a
    fact at every decision, and a frozen dataclass sets each field through
    `object.__setattr__`, which makes it slower to build.
    """

    error: str | None = None
    evidence: bool = False
    canon: Hashable = None


NO_EVIDENCE = ContractCheck()


def check(claim: Claim, rule: FieldRule, now_us: int, memo: bool = False) -> ContractCheck:
    """Validate and normalize one claim against its field's rule at time `now_us`.

    With `memo`, the part of the check that does not depend on the clock (the contract
    version, the status and the normalized value) is kept in the claim's `memo` and reused
    by later checks against the same rule: a live claim is checked at every decision of its
    fact. The verdict is the same either way.
    """
    if claim.arrival_error is not None:
        return ContractCheck(error=claim.arrival_error)
    if rule.refusal is not None:  # a field the policy does not name
        return ContractCheck(error=rule.refusal)
    if claim.time_error is not None or claim.observed_us is None:
        return ContractCheck(error=claim.time_error or "missing `observed_at`")
    status = claim.status
    if not isinstance(status, str) or status not in STATUSES:
        allowed = ", ".join(sorted(STATUSES))
        return ContractCheck(error=f"`status` must be one of {allowed}, got {describe(status)}")
    if claim.contract_error is not None:
        return ContractCheck(error=claim.contract_error)
    if claim.observed_us - now_us > rule.clock_skew_us:
        ahead = format_duration(claim.observed_us - now_us)
        skew = format_duration(rule.clock_skew_us)
        return ContractCheck(error=f"observed {ahead} in the future (allowed skew {skew})")
    if not memo:
        return _timeless(claim, rule, status)
    kept = memo_of(claim)
    if kept.rule is rule and kept.verdict is not None:
        return kept.verdict
    verdict = _timeless(claim, rule, status)
    kept.rule, kept.verdict = rule, verdict
    return verdict


def _timeless(claim: Claim, rule: FieldRule, status: str) -> ContractCheck:
    """The checks that come after the clock's: contract version, evidence, the value."""
    expected = rule.contract_version
    sent = claim.envelope.get("contract_version")
    if expected is not None and sent is not None and sent != expected:
        return ContractCheck(
            error=f"contract_version {clip(repr(sent))} differs from the policy's {expected!r} "
            "(schema conflict)"
        )
    if status not in EVIDENCE_STATUSES:
        return NO_EVIDENCE
    if status == "not_found":
        return ContractCheck(evidence=True, canon=ABSENT)
    if not claim.has_value:
        return ContractCheck(error="status ok without a `value`")
    try:
        return ContractCheck(evidence=True, canon=rule.normalizer.canon(claim.value))
    except NormalizationError as exc:
        return ContractCheck(error=f"`value`: {exc}")
