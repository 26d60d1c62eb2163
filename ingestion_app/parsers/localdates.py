"""Dates as Google Takeout prints them in the account's locale, converted to UTC.

Takeout HTML writes ``May 1, 2024, 2:03:04 PM CEST`` (en), ``1. 1. 2026 10:00:00 SEČ`` (cs),
``01.05.2024, 14:03:04 MESZ`` (de) and so on. The zone is an abbreviation, often localized;
the table below maps the common ones to fixed offsets. An unknown zone is read as UTC and
reported by the caller as a warning rather than guessed.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

_MONTHS = {
    # en
    "jan": 1, "january": 1, "feb": 2, "february": 2, "mar": 3, "march": 3, "apr": 4,
    "april": 4, "may": 5, "jun": 6, "june": 6, "jul": 7, "july": 7, "aug": 8, "august": 8,
    "sep": 9, "sept": 9, "september": 9, "oct": 10, "october": 10, "nov": 11, "november": 11,
    "dec": 12, "december": 12,
    # de
    "januar": 1, "jänner": 1, "februar": 2, "märz": 3, "mär": 3, "mai": 5, "juni": 6,
    "juli": 7, "okt": 10, "oktober": 10, "dez": 12, "dezember": 12,
    # fr
    "janv": 1, "janvier": 1, "févr": 2, "février": 2, "mars": 3, "avr": 4, "avril": 4,
    "juin": 6, "juil": 7, "juillet": 7, "août": 8, "sept.": 9, "septembre": 9,
    "octobre": 10, "novembre": 11, "déc": 12, "décembre": 12,
    # es / pt / it
    "ene": 1, "enero": 1, "febrero": 2, "marzo": 3, "abr": 4, "abril": 4, "mayo": 5,
    "junio": 6, "julio": 7, "ago": 8, "agosto": 8, "septiembre": 9, "setiembre": 9,
    "octubre": 10, "noviembre": 11, "dic": 12, "diciembre": 12, "janeiro": 1,
    "fevereiro": 2, "março": 3, "maio": 5, "junho": 6, "julho": 7, "setembro": 9,
    "outubro": 10, "dezembro": 12, "gennaio": 1, "febbraio": 2, "aprile": 4, "maggio": 5,
    "giugno": 6, "luglio": 7, "settembre": 9, "ottobre": 10, "dicembre": 12,
    # nl
    "januari": 1, "februari": 2, "maart": 3, "mei": 5, "augustus": 8,
    # cs (genitive, as used in dates)
    "ledna": 1, "února": 2, "března": 3, "dubna": 4, "května": 5, "června": 6,
    "července": 7, "srpna": 8, "září": 9, "října": 10, "listopadu": 11, "prosince": 12,
    # pl (genitive)
    "stycznia": 1, "lutego": 2, "marca": 3, "kwietnia": 4, "maja": 5, "czerwca": 6,
    "lipca": 7, "sierpnia": 8, "września": 9, "października": 10, "listopada": 11,
    "grudnia": 12,
}  # fmt: skip

_ZONES_HOURS = {
    "utc": 0, "gmt": 0, "z": 0, "wet": 0, "west": 1, "bst": 1, "ist": 1, "cet": 1,
    "cest": 2, "mez": 1, "mesz": 2, "seč": 1, "selč": 2, "sec": 1, "selc": 2, "hec": 1,
    "hae": 2, "eet": 2, "eest": 3, "oez": 2, "oesz": 3, "msk": 3, "est": -5, "edt": -4,
    "cst": -6, "cdt": -5, "mst": -7, "mdt": -6, "pst": -8, "pdt": -7, "akst": -9,
    "akdt": -8, "hst": -10, "jst": 9, "kst": 9, "hkt": 8, "sgt": 8, "awst": 8,
    "acst": 9.5, "acdt": 10.5, "aest": 10, "aedt": 11, "nzst": 12, "nzdt": 13, "brt": -3,
    "art": -3, "ict": 7, "wib": 7, "pht": 8,
}  # fmt: skip

_TIME = re.compile(
    r"(?P<h>\d{1,2}):(?P<m>\d{2})(?::(?P<s>\d{2}))?(?:[.,]\d+)?\s*"
    r"(?P<ampm>[AaPp]\.?\s?[Mm]\.?)?"
)
_OFFSET = re.compile(r"(?:GMT|UTC)\s*(?P<sign>[+-−])\s*(?P<h>\d{1,2})(?::?(?P<m>\d{2}))?")
_ISO_DATE = re.compile(r"(?P<y>\d{4})-(?P<mo>\d{1,2})-(?P<d>\d{1,2})")
_NUMERIC_DATE = re.compile(r"(?P<a>\d{1,2})\s*[./]\s*(?P<b>\d{1,2})\s*[./]\s*(?P<y>\d{4})")
_WORD = re.compile(r"[^\W\d_]+\.?", re.UNICODE)


def parse_local_datetime(text: str) -> tuple[datetime | None, bool]:
    """Parse a Takeout date line. Returns (UTC datetime or None, zone_was_understood)."""
    cleaned = text.replace("\u202f", " ").replace("\xa0", " ").strip()
    time_match = _TIME.search(cleaned)
    if not time_match:
        return None, False
    date_part = cleaned[: time_match.start()]
    zone_part = cleaned[time_match.end() :].strip(" ,")
    ymd = _parse_date(date_part)
    if ymd is None:
        return None, False
    hour = int(time_match.group("h"))
    minute = int(time_match.group("m"))
    second = int(time_match.group("s") or 0)
    ampm = (time_match.group("ampm") or "").lower().replace(".", "").replace(" ", "")
    if ampm == "pm" and hour < 12:
        hour += 12
    elif ampm == "am" and hour == 12:
        hour = 0
    zone, understood = _parse_zone(zone_part)
    try:
        local = datetime(*ymd, hour, minute, second, tzinfo=zone)
    except ValueError:
        return None, False
    return local.astimezone(UTC), understood


def _parse_date(text: str) -> tuple[int, int, int] | None:
    match = _ISO_DATE.search(text)
    if match:
        return int(match.group("y")), int(match.group("mo")), int(match.group("d"))
    match = _NUMERIC_DATE.search(text)
    if match:
        first, second, year = int(match.group("a")), int(match.group("b")), int(match.group("y"))
        if "/" in match.group(0) and first <= 12 < second:
            return year, first, second  # US month/day/year
        if "/" in match.group(0) and first <= 12 and second <= 12:
            return year, first, second  # ambiguous slash dates: Takeout en-US order
        return year, second, first  # day.month.year
    month = None
    for word in _WORD.findall(text.lower()):
        key = word.rstrip(".")
        if key in _MONTHS:
            month = _MONTHS[key]
            break
        if word in _MONTHS:
            month = _MONTHS[word]
            break
    year_match = re.search(r"\b(\d{4})\b", text)
    if month is None or year_match is None:
        return None
    remainder = text.replace(year_match.group(1), " ")
    day_match = re.search(r"\b(\d{1,2})\b", remainder)
    if day_match is None:
        return None
    return int(year_match.group(1)), month, int(day_match.group(1))


def _parse_zone(text: str) -> tuple[timezone, bool]:
    if not text:
        return UTC, False
    match = _OFFSET.search(text)
    if match:
        sign = -1 if match.group("sign") in "-−" else 1
        delta = timedelta(hours=int(match.group("h")), minutes=int(match.group("m") or 0))
        return timezone(sign * delta), True
    token = text.split()[0].strip(",.()").lower()
    if token in _ZONES_HOURS:
        return timezone(timedelta(hours=_ZONES_HOURS[token])), True
    return UTC, False
