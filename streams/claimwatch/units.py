"""Physical units (pint): unit checks and cached plain-float converters for quantity fields."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = [
    "UnitError",
    "build_registry_with",
    "check_unit",
    "convert_uncached",
    "converter",
    "know",
    "known",
    "registry",
]


class UnitError(ValueError):
    """An unknown unit or an impossible conversion; str(exc) is the reason."""


def _plain_registry() -> Any:
    import pint

    return pint.UnitRegistry()


#: What builds the process's registry: pint's own, unless the edge gives another way to
#: build the same registry (say, from pint's parsed definitions cached on disk).
_build: Callable[[], Any] = _plain_registry


def build_registry_with(build: Callable[[], Any]) -> None:
    """Have `registry()` built by `build` (pint's default registry, however it is made).

    Takes effect when the registry is not built yet; a built one is kept.
    """
    global _build
    _build = build


@functools.cache
def registry() -> Any:
    """The one pint UnitRegistry of the process, built on first use (it takes a moment)."""
    return _build()


def _parse(unit: str) -> Any:
    """Parse a unit expression, turning every pint/tokenizer failure into a UnitError."""
    if not isinstance(unit, str):
        raise UnitError(f"a unit must be a string such as 'kg' or 'm/s', got {unit!r}")
    if not unit.strip():
        raise UnitError("the unit is empty: write a unit such as 'kg', 'min' or 'm/s'")
    import pint

    ureg = registry()
    try:
        return ureg.parse_units(unit)
    except pint.UndefinedUnitError:
        raise UnitError(f"unknown unit {unit!r}: pint does not define it") from None
    except Exception as exc:  # tokenizer errors, scaling factors ("2 kg"), syntax errors
        raise UnitError(f"{unit!r} is not a unit pint can parse ({exc})") from None


#: What pint said in earlier processes, as the edge gives it (`know`): the units it parses,
#: and the scale and offset from one unit to another. Looked up before pint is asked, so a
#: process whose policy and claims use only such units never imports pint nor builds
#: its registry. Only successes are kept: a refusal always asks pint.
_known_units: set[str] = set()
_known_scales: dict[tuple[str, str], tuple[float, float]] = {}


def _nothing_new() -> None:
    """What `know` calls when pint said something new, until the edge says otherwise."""


_learned: Callable[[], None] = _nothing_new


def know(
    units: Iterable[str],
    scales: Mapping[tuple[str, str], tuple[float, float]],
    learned: Callable[[], None],
) -> None:
    """Take what pint said before; `learned()` is called each time pint says something new.

    The caller vouches that it comes from the same pint (the same definitions).
    """
    global _learned
    _known_units.update(units)
    _known_scales.update(scales)
    _learned = learned


def known() -> tuple[list[str], dict[tuple[str, str], tuple[float, float]]]:
    """What is known now (given by `know` or said by pint since): units, and scales."""
    return sorted(_known_units), dict(_known_scales)


def check_unit(unit: str) -> None:
    """Raise UnitError with a human reason when pint does not know `unit`."""
    if isinstance(unit, str) and unit in _known_units:
        return
    _parse(unit)
    _known_units.add(unit)
    _learned()


def _snap(x: float) -> float:
    """Round away float noise of the conversion (31.999999999999936 -> 32.0), keep true ratios."""
    if x == 0.0 or not math.isfinite(x):
        return x + 0.0
    snapped = float(f"{x:.12g}")
    return snapped if abs(snapped - x) <= 1e-13 * abs(x) else x


def _identity(x: float) -> float:
    return x


def _incompatible(from_unit: str, to_unit: str) -> UnitError:
    # the dimensions of the parsed units: pint's `get_dimensionality` parses a unit text
    # again with its expression parser, which fails with an AssertionError on `%`
    src = str(_parse(from_unit).dimensionality)
    dst = str(_parse(to_unit).dimensionality)
    return UnitError(
        f"cannot convert {from_unit} to {to_unit}: incompatible dimensions ({src} vs {dst})"
    )


@functools.lru_cache(maxsize=1024)
def converter(from_unit: str, to_unit: str) -> Callable[[float], float]:
    """A plain-float function converting values in `from_unit` to `to_unit` (pint runs once).

    Scale and offset come from converting 0 and 1, so affine units such as degC work;
    units that are not affine (logarithmic ones such as dBm) are refused. A pair known
    from before (`know`) is not asked of pint again.
    """
    scales = _known_scales.get((from_unit, to_unit))
    if scales is None:
        scales = _scale_and_offset(from_unit, to_unit)
        _known_scales[(from_unit, to_unit)] = scales
        _learned()
    scale, offset = scales
    if offset == 0.0:
        if scale == 1.0:
            return _identity
        return lambda x: x * scale
    return lambda x: x * scale + offset


def _scale_and_offset(from_unit: str, to_unit: str) -> tuple[float, float]:
    """The scale and offset pint converts one unit to another with (see `converter`)."""
    import pint

    _parse(from_unit)
    _parse(to_unit)
    ureg = registry()
    try:
        zero = float(ureg.Quantity(0.0, from_unit).to(to_unit).magnitude)
        one = float(ureg.Quantity(1.0, from_unit).to(to_unit).magnitude)
        two = float(ureg.Quantity(2.0, from_unit).to(to_unit).magnitude)
    except pint.DimensionalityError:
        raise _incompatible(from_unit, to_unit) from None
    except Exception as exc:
        raise UnitError(f"cannot convert {from_unit} to {to_unit} ({exc})") from None
    offset = _snap(zero)
    scale = _snap(one - zero)
    if not (math.isfinite(offset) and math.isfinite(scale)) or not math.isclose(
        two, offset + 2.0 * scale, rel_tol=1e-9, abs_tol=1e-12
    ):
        raise UnitError(
            f"cannot convert {from_unit} to {to_unit} by a fixed scale and offset "
            "(logarithmic units are not supported)"
        )
    return scale, offset


def convert_uncached(value: float, from_unit: str, to_unit: str) -> float:
    """Convert with pint on every call: the slow baseline the benchmark compares against."""
    import pint

    ureg = registry()
    try:
        return float(ureg.Quantity(value, from_unit).to(to_unit).magnitude)
    except pint.UndefinedUnitError:
        _parse(from_unit)
        _parse(to_unit)
        raise
    except pint.DimensionalityError:
        raise _incompatible(from_unit, to_unit) from None
