"""Character-level text preparation for the passage comparator: folding, scripts, the scanner."""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Final

LATIN: Final = "latin"
TAMIL: Final = "tamil"
TELUGU: Final = "telugu"
ARABIC: Final = "arabic"
CJK: Final = "cjk"
OTHER: Final = "other"

#: Kanji/hanzi (with the iteration marks 々 and 〆), hiragana and katakana.
_HAN: Final = "\u3005\u3006\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
_HIRAGANA: Final = "\u3041-\u309f"
_KATAKANA: Final = "\u30a1-\u30fa\u30fc-\u30ff\u31f0-\u31ff"
_CJK_CLASS: Final = f"[{_HAN}{_HIRAGANA}{_KATAKANA}]"
_HAN_RE: Final = re.compile(f"[{_HAN}]")
_KATAKANA_RE: Final = re.compile(f"[{_KATAKANA}]")

#: Arabic marks that do not change a word for comparison: harakat, dagger alef, tatweel.
_ARABIC_DROP: Final = dict.fromkeys([*range(0x064B, 0x0660), 0x0670, 0x0640])
_ARABIC_UNIFY: Final = str.maketrans(
    {"\u0623": "\u0627", "\u0625": "\u0627", "\u0622": "\u0627", "\u0671": "\u0627",
     "\u0649": "\u064a", "\u0629": "\u0647"}
)  # fmt: skip


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return (
        0x3005 <= code <= 0x3006
        or 0x3041 <= code <= 0x30FF
        or 0x31F0 <= code <= 0x31FF
        or 0x3400 <= code <= 0x4DBF
        or 0x4E00 <= code <= 0x9FFF
        or 0xF900 <= code <= 0xFAFF
        or 0x20000 <= code <= 0x2FA1F
    )


def _ranges(codes: list[int]) -> str:
    """A regex character-class body for a sorted list of code points."""
    parts: list[str] = []
    start = prev = codes[0]
    for code in [*codes[1:], -1]:
        if code == prev + 1:
            prev = code
            continue
        parts.append(re.escape(chr(start)) + ("" if start == prev else "-" + re.escape(chr(prev))))
        start = prev = code
    return "".join(parts)


@functools.cache
def _tables() -> tuple[dict[int, str], re.Pattern[str]]:
    """The digit translation table and the scanner, built once from the Unicode database."""
    digits: dict[int, str] = {}
    word: list[int] = []
    for code in range(0x80, 0x10000):
        ch = chr(code)
        category = unicodedata.category(ch)
        if category == "Nd":
            digits[code] = str(unicodedata.decimal(ch))
        elif category[0] in "LM" and not _is_cjk(ch):
            word.append(code)
    letters = "a-z" + _ranges(word)
    scanner = re.compile(
        r"(?P<num>\d+(?:[.,]\d+)*)"
        rf"|(?P<word>[{letters}](?:[{letters}0-9]|'(?=[{letters}]))*)"
        rf"|(?P<cjk>{_CJK_CLASS}+)"
        r"|(?P<end>[.!?;\u3002\u061f\u061b\u0964]+)"
        r"|(?P<sym>[%$€£¥₹/\u066a])"
    )
    digits.update({0x2019: "'", 0x2018: "'", 0x02BC: "'"})
    return digits, scanner


def fold(text: str) -> str:
    """NFKC, casefold, every decimal digit as ASCII, typographic apostrophes as '."""
    digits, _ = _tables()
    folded = unicodedata.normalize("NFKC", text).casefold().translate(digits)
    if "°" in folded:
        folded = folded.replace("°c", " celsius").replace("°f", " fahrenheit")
        folded = folded.replace("°", " degree")
    return folded


def scanner() -> re.Pattern[str]:
    """Numbers, words, CJK runs, sentence ends and unit symbols, in a folded text."""
    return _tables()[1]


def script_of(word: str) -> str:
    """The script of a word, judged by its first character."""
    if not word:
        return OTHER
    code = ord(word[0])
    if code < 0x250 or 0x1E00 <= code <= 0x1EFF:
        return LATIN
    if 0x0B80 <= code <= 0x0BFF:
        return TAMIL
    if 0x0C00 <= code <= 0x0C7F:
        return TELUGU
    if 0x0600 <= code <= 0x08FF or 0xFB50 <= code <= 0xFDFF or 0xFE70 <= code <= 0xFEFF:
        return ARABIC
    if _is_cjk(word[0]):
        return CJK
    return OTHER


def arabic(word: str) -> str:
    """An Arabic word without harakat and tatweel; alef forms, alef maqsura, ta marbuta unified."""
    return word.translate(_ARABIC_DROP).translate(_ARABIC_UNIFY)


def is_han(ch: str) -> bool:
    """Whether a character is a kanji/hanzi."""
    return _HAN_RE.match(ch) is not None


def is_katakana(ch: str) -> bool:
    """Whether a character is katakana (or the long-vowel mark)."""
    return _KATAKANA_RE.match(ch) is not None
