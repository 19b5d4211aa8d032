"""RFC 3339 parsing and rendering: offsets, fractions, leap seconds and refusals."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from claimwatch.core.timeutil import TimestampError, as_rfc3339, format_rfc3339, parse_rfc3339
from hypothesis import given
from hypothesis import strategies as st

# (case id, RFC 3339 text, expected rendering in UTC)
ACCEPTED = [
    ("utc_z", "2016-12-31T23:59:59Z", "2016-12-31T23:59:59Z"),
    ("offset", "2017-01-01T01:00:00+01:00", "2017-01-01T00:00:00Z"),
    ("fraction", "2016-12-31T23:59:59.25Z", "2016-12-31T23:59:59.250Z"),
    ("leap_second", "2016-12-31T23:59:60Z", "2016-12-31T23:59:59.999999Z"),
    ("leap_second_fraction", "2016-12-31T23:59:60.5Z", "2016-12-31T23:59:59.999999Z"),
    ("leap_second_lowercase_t", "2016-12-31t23:59:60Z", "2016-12-31T23:59:59.999999Z"),
    ("leap_second_negative_offset", "2016-12-31T18:59:60-05:00", "2016-12-31T23:59:59.999999Z"),
    ("leap_second_june", "2015-06-30T23:59:60Z", "2015-06-30T23:59:59.999999Z"),
]

# (case id, text, words the error must contain)
REFUSED = [
    ("second_61", "2016-12-31T23:59:61Z", ["not an RFC 3339 time"]),
    ("leap_second_not_at_minute_59", "2016-12-31T23:58:60Z", ["second 60", "minute 59"]),
    ("leap_second_without_offset", "2016-12-31T23:59:60", ["no UTC offset"]),
    ("leap_second_bad_offset", "2016-12-31T23:59:60+25:00", ["not an RFC 3339 time"]),
    ("leap_second_trailing_junk", "2016-12-31T23:59:60Zjunk", ["not an RFC 3339 time"]),
    ("leap_second_empty_fraction", "2016-12-31T23:59:60.Z", ["not an RFC 3339 time"]),
    ("no_offset", "2016-12-31T23:59:59", ["no UTC offset"]),
    ("not_a_time", "yesterday", ["not an RFC 3339 time"]),
]


@pytest.mark.parametrize(
    ("raw", "expected"), [case[1:] for case in ACCEPTED], ids=[case[0] for case in ACCEPTED]
)
def test_accepted_times_parse_to_utc(raw: str, expected: str) -> None:
    """Each valid RFC 3339 time parses to the instant that renders as the expected UTC time."""
    assert expected == format_rfc3339(parse_rfc3339(raw))


@pytest.mark.parametrize(
    ("raw", "words"), [case[1:] for case in REFUSED], ids=[case[0] for case in REFUSED]
)
def test_refused_times_raise_timestamp_error(raw: str, words: list[str]) -> None:
    """Each invalid time raises TimestampError naming the text and the problem."""
    with pytest.raises(TimestampError) as caught:
        parse_rfc3339(raw)
    assert repr(raw) in str(caught.value)
    for word in words:
        assert word in str(caught.value)


@pytest.mark.parametrize(
    ("before", "leap", "after"),
    [
        ("2016-12-31T23:59:59Z", "2016-12-31T23:59:60Z", "2017-01-01T00:00:00Z"),
        ("2016-12-31T23:59:59.999998Z", "2016-12-31T23:59:60.9Z", "2017-01-01T00:00:00Z"),
    ],
    ids=["whole_seconds", "fractions"],
)
def test_leap_second_sorts_between_its_neighbours(before: str, leap: str, after: str) -> None:
    """A leap second lands after second 59 of its minute and before the next minute."""
    assert True is (parse_rfc3339(before) < parse_rfc3339(leap) < parse_rfc3339(after))


def test_non_string_is_refused() -> None:
    """A time that is not a string is refused with its type."""
    with pytest.raises(TimestampError) as caught:
        parse_rfc3339(1_483_228_799)
    assert "int" in str(caught.value)


#: instants from year 0001 to 9998, in microseconds
INSTANTS = st.integers(min_value=-62_135_596_800_000_000, max_value=253_370_764_799_999_999)


def spellings(us: int) -> list[str]:
    """Texts that all parse to `us`: the canonical one and others a producer may send."""
    canonical = format_rfc3339(us)
    head, tail = canonical[:19], canonical[19:-1]
    fraction = f"{us % 1_000_000:06d}"
    return [
        canonical,
        canonical[:-1] + "z",
        canonical[:-1] + "+00:00",
        head.replace("T", " ") + tail + "Z",
        head.replace("T", "t") + tail + "Z",
        f"{head}.{fraction}Z",
        f"{head}.{fraction}000Z",
        f"{head},{fraction}Z",
    ]


@given(INSTANTS)
def test_as_rfc3339_is_the_canonical_rendering_of_any_spelling(us: int) -> None:
    """Whatever spelling of an instant was sent, the record shows its canonical text."""
    for raw in spellings(us):
        try:
            parsed = parse_rfc3339(raw)
        except TimestampError:
            continue  # a spelling this Python does not parse is not kept either
        assert format_rfc3339(parsed) == as_rfc3339(raw, parsed)


@given(INSTANTS)
def test_a_canonical_time_is_kept_as_sent(us: int) -> None:
    """The canonical text is returned as the very string sent (nothing re-rendered)."""
    raw = "".join(format_rfc3339(us))  # a string of its own, not the renderer's cached one
    assert raw is as_rfc3339(raw, parse_rfc3339(raw))


def datetime_rendering(us: int) -> str:
    """The RFC 3339 text of an instant as `datetime` writes it (fractions only when present)."""
    moment = datetime(1970, 1, 1) + timedelta(microseconds=us)
    if moment.microsecond == 0:
        return moment.isoformat(timespec="seconds") + "Z"
    if moment.microsecond % 1000 == 0:
        return moment.isoformat(timespec="milliseconds") + "Z"
    return moment.isoformat(timespec="microseconds") + "Z"


@given(
    st.one_of(
        INSTANTS,
        INSTANTS.map(lambda us: us - us % 1000),
        INSTANTS.map(lambda us: us - us % 1_000_000),
    )
)
def test_format_rfc3339_writes_what_datetime_writes(us: int) -> None:
    """Rendered from its whole second and its fraction, an instant reads as datetime writes it."""
    assert datetime_rendering(us) == format_rfc3339(us)
