"""Units known from before: checked and converted without asking pint, the rest as always."""

from __future__ import annotations

import pytest
from claimwatch import units


def _pint_refuses(*_args: object) -> None:
    raise AssertionError("pint was asked")


def test_known_units_and_scales_are_not_asked_of_pint(
    fresh_unit_memory: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A unit and a conversion given by `know` are answered from memory alone."""
    units.know(["furlong"], {("furlong", "m"): (201.168, 0.0)}, lambda: None)
    monkeypatch.setattr(units, "_parse", _pint_refuses)
    monkeypatch.setattr(units, "_scale_and_offset", _pint_refuses)

    units.check_unit("furlong")
    assert 402.336 == units.converter("furlong", "m")(2.0)


def test_what_pint_says_anew_is_remembered_and_reported(fresh_unit_memory: list[str]) -> None:
    """A new unit and a new conversion are asked of pint once, then known; `learned` is told."""
    units.know([], {}, lambda: fresh_unit_memory.append("learned"))
    units.check_unit("kg")
    to_kg = units.converter("g", "kg")

    assert (0.25, ["kg"], {("g", "kg"): (0.001, 0.0)}, ["learned", "learned"]) == (
        to_kg(250.0),
        units.known()[0],
        units.known()[1],
        fresh_unit_memory,
    )


@pytest.mark.parametrize(
    ("unit", "reason"),
    [("parsec_per_fortnight_x", "unknown unit"), ("2 kg", "is not a unit pint can parse")],
)
def test_refusals_are_never_remembered(
    fresh_unit_memory: list[str], unit: str, reason: str
) -> None:
    """A unit pint refuses is refused every time, and nothing is learned from it."""
    for _ in range(2):
        with pytest.raises(units.UnitError, match=reason):
            units.check_unit(unit)
    assert ([], []) == (units.known()[0], fresh_unit_memory)


def test_an_offset_conversion_is_kept_whole(fresh_unit_memory: list[str]) -> None:
    """Affine conversions (degC to degF) keep their offset in memory and in use."""
    assert 212.0 == pytest.approx(units.converter("degC", "degF")(100.0))
    scale, offset = units.known()[1][("degC", "degF")]
    units.converter.cache_clear()
    assert (1.8, 32.0, 212.0) == (
        pytest.approx(scale),
        pytest.approx(offset),
        pytest.approx(units.converter("degC", "degF")(100.0)),
    )
