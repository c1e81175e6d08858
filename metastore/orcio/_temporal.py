"""Time rules the ORC reader needs: writer time zones (IANA, via zoneinfo) and the hybrid Julian calendar.

Time zones: ORC ``timestamp`` seconds are stored relative to 2015-01-01 00:00:00 *in the writer's zone*
(StripeFooter.writerTimezone); the value a writer meant is its wall clock, i.e. the UTC instant plus the zone's
UTC offset at that instant. :func:`utc_offsets` computes those offsets for whole arrays: it asks zoneinfo once per
distinct day and only looks at single values on days that contain a transition.

Calendar: ORC Java writes days/seconds counted in the hybrid Julian/Gregorian calendar (``java.sql.Date``)
unless it marks the file PROLEPTIC_GREGORIAN; before 1582-10-15 the two calendars name different days.
:func:`hybrid_to_proleptic_days` converts such day numbers so that the date keeps its year-month-day.
"""

from __future__ import annotations

import datetime as dt
import functools
import zoneinfo

import numpy as np

from ._errors import OrcError

#: First day of the Gregorian calendar (1582-10-15) as days since 1970-01-01; identical in both calendars.
GREGORIAN_CUTOVER_DAYS = -141427
_SECONDS_PER_DAY = 86400
_UTC_NAMES = frozenset({"UTC", "GMT", "Z", "Etc/UTC", "Etc/GMT", "Etc/UCT", "UCT", "Etc/Universal", "Universal",
                        "Etc/Zulu", "Zulu", "GMT0", "Etc/GMT0", "Etc/GMT+0", "Etc/GMT-0", "Greenwich",
                        "Etc/Greenwich"})
_MIN_SECONDS = int((dt.datetime(1, 1, 2, tzinfo=dt.UTC) - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)).total_seconds())
_MAX_SECONDS = int((dt.datetime(9999, 12, 30, tzinfo=dt.UTC) - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)).total_seconds())


def is_utc(zone_name: str | None) -> bool:
    """True for the names of zones that are always UTC."""
    return zone_name is not None and zone_name in _UTC_NAMES


@functools.lru_cache(maxsize=64)
def zone(zone_name: str) -> zoneinfo.ZoneInfo:
    """The zoneinfo zone of an IANA name; OrcError for an unknown one."""
    try:
        return zoneinfo.ZoneInfo(zone_name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise OrcError(f"unknown writer time zone {zone_name!r}") from None


def _offset_at(z: zoneinfo.ZoneInfo, seconds: int) -> int:
    clamped = min(max(seconds, _MIN_SECONDS), _MAX_SECONDS)
    off = dt.datetime.fromtimestamp(clamped, tz=z).utcoffset()
    return int(off.total_seconds()) if off is not None else 0


@functools.lru_cache(maxsize=64)
def epoch_2015(zone_name: str) -> int:
    """UTC seconds of 2015-01-01 00:00:00 wall clock in the zone (the base of ORC timestamp seconds)."""
    if is_utc(zone_name):
        return 1420070400
    return int(dt.datetime(2015, 1, 1, tzinfo=zone(zone_name)).timestamp())


def utc_offsets(zone_name: str, instants: np.ndarray) -> np.ndarray:
    """UTC offset in seconds of the zone at each UTC instant (int64 seconds since the epoch)."""
    instants = np.asarray(instants, dtype=np.int64)
    if is_utc(zone_name) or len(instants) == 0:
        return np.zeros(len(instants), dtype=np.int64)
    z = zone(zone_name)
    days = np.floor_divide(instants, _SECONDS_PER_DAY)
    unique_days, inverse = np.unique(days, return_inverse=True)
    day_offsets = np.empty(len(unique_days), dtype=np.int64)
    mixed: list[int] = []
    for i, d in enumerate(unique_days.tolist()):
        start = _offset_at(z, d * _SECONDS_PER_DAY)
        end = _offset_at(z, d * _SECONDS_PER_DAY + _SECONDS_PER_DAY - 1)
        day_offsets[i] = start
        if start != end:
            mixed.append(i)
    out = day_offsets[inverse]
    if mixed:
        # a transition inside the day: look those values up one by one
        needs = np.isin(inverse, np.asarray(mixed))
        idx = np.flatnonzero(needs)
        out[idx] = [_offset_at(z, t) for t in instants[idx].tolist()]
    return out


def wall_clock_seconds(zone_name: str, instants: np.ndarray) -> np.ndarray:
    """The zone's wall clock at each UTC instant, expressed as seconds since 1970-01-01 00:00:00."""
    return np.asarray(instants, dtype=np.int64) + utc_offsets(zone_name, instants)


# ------------------------------------------------------------------------------------------- calendar


def _julian_civil_from_jdn(jdn: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    c = jdn + 32082
    d = (4 * c + 3) // 1461
    e = c - (1461 * d) // 4
    m = (5 * e + 2) // 153
    day = e - (153 * m + 2) // 5 + 1
    month = m + 3 - 12 * (m // 10)
    year = d - 4800 + m // 10
    return year, month, day


def _gregorian_days_from_civil(year: np.ndarray, month: np.ndarray, day: np.ndarray) -> np.ndarray:
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    mp = np.where(month > 2, month - 3, month + 9)
    doy = (153 * mp + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def hybrid_to_proleptic_days(days: np.ndarray) -> np.ndarray:
    """Re-express hybrid-calendar day numbers as proleptic Gregorian ones (same Y-M-D; only days before
    1582-10-15 change)."""
    days = np.asarray(days, dtype=np.int64)
    old = days < GREGORIAN_CUTOVER_DAYS
    if not old.any():
        return days
    out = days.copy()
    jdn = days[old] + 2440588
    y, m, d = _julian_civil_from_jdn(jdn)
    out[old] = _gregorian_days_from_civil(y, m, d)
    return out


def hybrid_to_proleptic_seconds(seconds: np.ndarray) -> np.ndarray:
    """:func:`hybrid_to_proleptic_days` for seconds since the epoch (the time of day is kept)."""
    seconds = np.asarray(seconds, dtype=np.int64)
    limit = GREGORIAN_CUTOVER_DAYS * _SECONDS_PER_DAY
    old = seconds < limit
    if not old.any():
        return seconds
    out = seconds.copy()
    days, rest = np.divmod(seconds[old], _SECONDS_PER_DAY)
    out[old] = hybrid_to_proleptic_days(days) * _SECONDS_PER_DAY + rest
    return out
