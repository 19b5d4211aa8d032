"""The resolve baseline: docs/concepts.md#decide written plainly, as an engineer would.

Policy read once with PyYAML and compiled into dicts, stdlib `json`, one dict of claims per
fact, the decision record's fields. It covers the field types of the benchmark workload
(enum, money, number, string, quantity) and nothing claimwatch adds beyond the spec
(no lineage cap, no signing, no contract versions, no text passages).

`python -m bench.plain_resolve POLICY FILE NOW` writes one decision per fact to stdout.
"""

from __future__ import annotations

import hashlib
import json
import sys
import unicodedata
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import yaml

RANK = {"asserted": 0, "derived": 1, "cached": 2, "system_of_record": 3}
EVIDENCE = {"ok", "not_found"}
STATUSES = {"ok", "not_found", "forbidden", "unavailable", "error"}
UNITS = {"kg": Decimal(1), "g": Decimal("0.001"), "lb": Decimal("0.45359237")}
MINOR = {"USD": 2, "EUR": 2, "JPY": 0}


def seconds(text: str | None, default: float) -> float:
    """A duration like 60s, 5m, 6h, 500ms (None: the default; until_edited: forever)."""
    if text is None:
        return default
    if text == "until_edited":
        return float("inf")
    for suffix, scale in (("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400)):
        if text.endswith(suffix) and text[: -len(suffix)].replace(".", "").isdigit():
            return float(text[: -len(suffix)]) * scale
    raise ValueError(f"bad duration {text!r}")


def parse_time(text: Any) -> float:
    """RFC 3339 to POSIX seconds (ValueError when it is not one)."""
    if not isinstance(text, str) or "T" not in text:
        raise ValueError("observed_at is not an RFC 3339 time")
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError("observed_at has no offset")
    return moment.timestamp()


def compile_policy(path: str) -> dict[str, Any]:
    """The policy as plain dicts, with durations in seconds."""
    with open(path, encoding="utf-8") as handle:
        raw = yaml.safe_load(handle)
    defaults = raw.get("defaults", {})
    fields = {}
    for name, spec in raw["fields"].items():
        fields[name] = {
            **spec,
            "freshness_s": seconds(spec.get("freshness"), seconds(defaults.get("freshness"), 300)),
            "on_conflict": spec.get("on_conflict", defaults.get("on_conflict", "block")),
            "authority": spec.get("authority", {}),
        }
    return {
        "version": raw["policy_version"],
        "skew_s": seconds(defaults.get("clock_skew"), 5),
        "sources": raw.get("sources", {}),
        "fields": fields,
    }


def normalize(spec: dict[str, Any], value: Any) -> Any:
    """The comparable form of a value of the field (ValueError when it does not fit)."""
    kind = spec["type"]
    if kind == "enum":
        if value not in spec["values"]:
            raise ValueError(f"{value!r} is not one of {spec['values']}")
        return value
    if kind == "money":
        if not isinstance(value, dict) or value.get("currency") != spec["currency"]:
            raise ValueError(f"money in {spec['currency']} expected")
        digits = MINOR[spec["currency"]]
        amount = Decimal(str(value["amount"]))
        minor = amount if value.get("minor_units") else amount.scaleb(digits)
        if minor != minor.to_integral_value():
            raise ValueError("amount has more digits than the currency")
        return {"minor": int(minor), "currency": spec["currency"]}
    if kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError("number expected")
        return float(value)
    if kind == "string":
        if not isinstance(value, str):
            raise ValueError("string expected")
        text = unicodedata.normalize("NFKC", value)
        if spec.get("case") == "fold":
            text = text.casefold()
        if spec.get("whitespace") == "collapse":
            text = " ".join(text.split())
        return text
    if kind == "quantity":
        if not isinstance(value, dict) or value.get("unit") not in UNITS:
            raise ValueError("quantity with a known unit expected")
        base = Decimal(str(value["value"])) * UNITS[value["unit"]] / UNITS[spec["unit"]]
        return {"value": float(base), "unit": spec["unit"]}
    raise ValueError(f"type {kind} is not covered by the baseline")


def same(spec: dict[str, Any], values: list[Any]) -> bool:
    """Whether the normalized values agree (numbers within the field's tolerance)."""
    if spec["type"] == "number":
        tolerance = spec.get("tolerance", {})
        spread = max(values) - min(values)
        limit = max(tolerance.get("abs", 0.0), tolerance.get("rel", 0.0) * max(map(abs, values)))
        return spread <= max(limit, 1e-9 * max(map(abs, values), default=0.0))
    first = json.dumps(values[0], sort_keys=True)
    return all(json.dumps(v, sort_keys=True) == first for v in values[1:])


def registry(policy: dict[str, Any], field: dict[str, Any], source: str) -> tuple[str, str, bool]:
    """(authority class, lineage, whether the policy names the source) for a field."""
    base = source.split("@", 1)[0]
    entry = policy["sources"].get(source) or policy["sources"].get(base)
    authority = field["authority"].get(source) or field["authority"].get(base)
    registered = authority is not None or entry is not None
    entry = entry or {}
    authority = authority or entry.get("authority", "derived")
    return authority, entry.get("lineage") or source, registered


def check(policy: dict[str, Any], claim: dict[str, Any], now: float) -> dict[str, Any]:
    """The claim with its authority, lineage, time and normalized value (or its error)."""
    field = policy["fields"].get(claim.get("field"))
    out = dict(claim)
    try:
        if field is None:
            raise ValueError(f"no policy for field {claim.get('field')!r}")
        out["_at"] = parse_time(claim.get("observed_at"))
        if out["_at"] > now + policy["skew_s"]:
            raise ValueError("observed in the future")
        if claim.get("status") not in STATUSES:
            raise ValueError("unknown status")
        if claim["status"] == "ok":
            out["_norm"] = normalize(field, claim.get("value"))
        authority, lineage, out["_registered"] = registry(policy, field, claim["source"])
        out["authority"], out["lineage"] = authority, claim.get("lineage") or lineage
    except (ValueError, KeyError, TypeError, ArithmeticError) as exc:
        out["disposition"], out["error"] = "rejected", str(exc)
    return out


def newest_first(claim: dict[str, Any]) -> tuple[float, str]:
    """Sort key: newest first, then the smallest claim id."""
    return (-claim["_at"], claim["claim_id"])


def value_key(claim: dict[str, Any]) -> Any:
    """What two claims agree on: absence, or the normalized value."""
    return None if claim["status"] == "not_found" else claim["_norm"]


def agree(spec: dict[str, Any], a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two evidence claims say the same thing."""
    if (a["status"] == "not_found") != (b["status"] == "not_found"):
        return False
    return a["status"] == "not_found" or same(spec, [a["_norm"], b["_norm"]])


def decide(policy: dict[str, Any], key: str, claims: list[dict[str, Any]], now: float) -> Any:
    """The decision record of one fact."""
    subject, field_name = key.split("|", 1)
    spec = policy["fields"].get(field_name, {"type": "?", "on_conflict": "block"})
    live = [c for c in claims if "disposition" not in c]
    evidence = []
    for c in live:
        if c["status"] not in EVIDENCE:
            c["disposition"] = "no_evidence"
        elif now - c["_at"] > spec["freshness_s"]:
            c["disposition"] = "stale"
        else:
            evidence.append(c)
    outcome, winner, kind, alternatives, reason = "insufficient", None, None, [], ""
    if not live:
        outcome, reason = "rejected", f"all {len(claims)} claims rejected"
    elif not evidence:
        stale = sum(c["disposition"] == "stale" for c in live)
        reason = f"all {stale} claims exceeded the freshness budget" if stale else "no evidence"
    else:
        heads = {}
        for c in sorted(evidence, key=lambda c: (-RANK[c["authority"]], *newest_first(c))):
            head = heads.setdefault(c["lineage"], c)
            if head is not c:
                c["disposition"] = "same_lineage" if agree(spec, head, c) else "outranked"
                if c["disposition"] == "outranked":
                    c["dissent"] = True
        top = max(RANK[c["authority"]] for c in heads.values())
        strongest = sorted(
            (c for c in heads.values() if RANK[c["authority"]] == top), key=newest_first
        )
        found = [c for c in strongest if c["status"] == "ok"]
        groups: list[list[dict[str, Any]]] = []
        for c in strongest:
            for g in groups:
                if agree(spec, g[0], c):
                    g.append(c)
                    break
            else:
                groups.append([c])
        if len(groups) == 1:
            outcome, winner = "resolved", groups[0][0]
        elif found and len(found) < len(strongest):
            outcome, kind = "conflict", "existence"
        else:
            kind = "value"
            policy_choice = spec["on_conflict"]
            owner = [c for c in strongest if c["source"].split("@")[0] == spec.get("owner")]
            if policy_choice in ("prefer_recent", "present_with_timestamp"):
                outcome, winner = "resolved", strongest[0]
            elif policy_choice == "prefer_primary" and owner:
                outcome, winner = "resolved", owner[0]
            else:
                outcome = "conflict"
        shown = outcome == "conflict" or spec["on_conflict"] == "present_with_timestamp"
        if len(groups) > 1 and shown:
            alternatives = [
                {
                    "value": c.get("value"),
                    "canonical": c.get("_norm"),
                    "exists": c["status"] == "ok",
                    "source": c["source"],
                    "claim_id": c["claim_id"],
                    "observed_at": c["observed_at"],
                }
                for c in strongest
            ]
        for c in heads.values():
            if winner is None:
                c["disposition"] = "contradicting" if RANK[c["authority"]] == top else "outranked"
            elif c is winner:
                c["disposition"] = "won"
            elif agree(spec, winner, c):
                c["disposition"] = "corroborating"
            else:
                c["disposition"] = "outranked"
                c["dissent"] = True
        for c in evidence:
            if c["disposition"] == "outranked":
                c.setdefault("dissent", False)
                c["temporal"] = winner is not None and c["_at"] < winner["_at"]
        if winner is not None:
            agreeing = sum(c["disposition"] in ("won", "corroborating") for c in heads.values())
            reason = f"value from {winner['source']} ({winner['authority']}); {agreeing} agree"
            kind = None
        else:
            reason = f"{len(groups)} values among the strongest sources"
    resolved = outcome == "resolved"
    consequential = spec.get("consequential", False)
    # a value that only unregistered sources of the winner's class vouch for is unverified
    unverified = winner is not None and not any(
        c["_registered"]
        for c in heads.values()
        if c["disposition"] in ("won", "corroborating") and c["authority"] == winner["authority"]
    )
    if resolved and winner is not None and winner["authority"] != "asserted" and not unverified:
        action = "proceed"
    else:
        action = "escalate" if consequential else "degrade"
    pairs = sorted((c["claim_id"], c["disposition"]) for c in claims)
    digest = hashlib.sha256(json.dumps([policy["version"], key, pairs]).encode()).hexdigest()
    absent = winner is not None and winner["status"] == "not_found"
    return {
        "decision_id": "dec_" + digest[:32],
        "subject": subject,
        "field": field_name,
        "policy_version": policy["version"],
        "outcome": outcome,
        "value": winner.get("value") if resolved and winner and not absent else None,
        "canonical": winner.get("_norm") if resolved and winner and not absent else None,
        "exists": (not absent) if resolved else None,
        "conflict_kind": kind,
        "reason": reason,
        "action": action,
        "corroboration": sum(c.get("disposition") in ("won", "corroborating") for c in claims),
        "alternatives": alternatives,
        "decided_at": datetime.fromtimestamp(now, UTC).isoformat().replace("+00:00", "Z"),
        "claims": [{k: v for k, v in c.items() if not k.startswith("_")} for c in claims],
    }


def main(policy_path: str, path: str, now_text: str) -> None:
    """Resolve a claims file: one decision per fact, sorted by fact key."""
    policy = compile_policy(policy_path)
    now = parse_time(now_text)
    facts: dict[str, dict[str, dict[str, Any]]] = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            claim = json.loads(line)
            key = f"{claim['subject']}|{claim['field']}"
            facts.setdefault(key, {}).setdefault(claim["claim_id"], claim)  # repeats once
    out = sys.stdout
    for key in sorted(facts, key=lambda k: tuple(k.split("|", 1))):
        checked = [check(policy, c, now) for c in facts[key].values()]
        out.write(json.dumps(decide(policy, key, checked, now)) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:4])
