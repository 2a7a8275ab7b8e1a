"""Characters that impersonate others where a person reads a tool's text.

A path in `results.md` is read by eye: `src/Мoney.cs` with a Cyrillic `М`, `src/Money.cs` with a
Hangul filler after it, `src/Money.cs` with a combining overlay on the `/`, or `src∕Money.cs`
with a division slash all read as the correct path. `marked(s)` gives the positions of the
characters of `s` that must be shown as escapes instead (`untrusted.text.visible` does), so a
lookalike never reads as the real thing:

- **blank fillers**: every space separator but the ASCII space, and the characters that render
  as nothing or as a blank without being one (Hangul fillers, the Braille blank, Khmer's
  inherent vowels, the combining grapheme joiner);
- **compatibility forms**: a character whose NFKC form is ASCII (fullwidth `ｓｒｃ`, mathematical
  `𝐬𝐫𝐜`, ligatures, superscripts, the one-dot leader);
- **punctuation lookalikes** of what structures a path (`/`, `.`, `:`, `-`) that NFKC leaves
  alone (division and fraction slashes, ideographic full stop, ratio, modifier colons);
- **combining marks** on an ASCII character, on a marked character, or at the start (an overlay
  on a path's `/` or letter); a mark on a letter of a script that uses marks stays;
- **letters that look like Latin ones** (`LATIN_LOOKALIKES`: Cyrillic, Greek, Armenian,
  Cherokee and a few Latin ones) in a word that also holds ASCII letters (mixed script), or in a
  word made of nothing but such letters (`рос` reads as `poc`). A word in Russian or Greek with
  any other letter reads as what it is and stays.

Linear in the length of the text, and a pure function of it: documents stay byte-identical.
"""

from __future__ import annotations

import unicodedata

# Hangul choseong/jungseong fillers, Hangul filler, halfwidth Hangul filler, Braille blank,
# Khmer inherent vowels, the combining grapheme joiner: they draw nothing, or a blank.
_BLANK_FILLERS = frozenset({0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x17B4, 0x17B5, 0x034F})
# Lookalikes of `/`, `.`, `:` and `-` that NFKC leaves as they are.
_PUNCTUATION_LOOKALIKES = frozenset({
    0x2215, 0x2044, 0x29F8, 0x2571, 0x1735, 0x2CC6,             # slashes
    0x0589, 0x00B7, 0x2027, 0x0701, 0x0702, 0xA60E, 0x06D4,     # full stops and dots
    0x2236, 0x02D0, 0xA789, 0x0703, 0x0704, 0x16EC, 0x1803,     # colons
    0x2010, 0x2011, 0x2012, 0x2212, 0x02D7, 0x2043,             # hyphens and minus
})
# Letters drawn like a Latin letter or digit in common fonts (after Unicode's confusables
# table, kept to the close ones).
LATIN_LOOKALIKES = frozenset(map(ord, (
    "аеорсухѕіјԁһӏԛԝѵүкАВЕКМНОРСТХЅІЈҮԚԜӀЗ"      # Cyrillic
    "οαινρκυΑΒΕΖΗΙΚΜΝΟΡΤΥΧ"                      # Greek
    "օսհոզ"                                     # Armenian
    "ᎪᏴᏟᎬᎻᎫᏦᏞᎷᏢᏚᎢᏔᏃᎠᏀᎥ"                          # Cherokee
    "ıɑɡǀɩƖ"                                    # Latin letters that are not ASCII ones
)))


def _letter_or_mark(ch: str) -> bool:
    return ch.isalnum() or unicodedata.category(ch)[0] == "M"


def _by_itself(ch: str) -> bool:
    """Whether `ch` impersonates another character wherever it stands."""
    code = ord(ch)
    if code in _BLANK_FILLERS or code in _PUNCTUATION_LOOKALIKES:
        return True
    if unicodedata.category(ch) == "Zs":
        return True  # ASCII space never gets here
    folded = unicodedata.normalize("NFKC", ch)
    return folded != ch and folded.isascii()


def _overlay(s: str, i: int, found: set[int]) -> bool:
    """Whether `s[i]` is a combining mark drawn over an ASCII character, over a marked one,
    or over nothing (the start of the text)."""
    return unicodedata.category(s[i])[0] == "M" and (
        i == 0 or s[i - 1].isascii() or (i - 1) in found)


def marked(s: str) -> set[int]:
    """Positions of the characters of `s` (non-ASCII ones only) that impersonate others."""
    found: set[int] = set()
    word: list[int] = []  # positions of the current word's letters, digits and marks
    for i, ch in enumerate(s):
        if ch.isascii():
            if ch.isalnum():
                word.append(i)
            else:
                _judge_word(s, word, found)
                word = []
            continue
        if _by_itself(ch) or _overlay(s, i, found):
            found.add(i)
        if _letter_or_mark(ch):
            word.append(i)
        else:
            _judge_word(s, word, found)
            word = []
    _judge_word(s, word, found)
    return found


def _judge_word(s: str, word: list[int], found: set[int]) -> None:
    """Mark the Latin lookalikes of a word that mixes them with ASCII letters, or that is made
    of nothing but them."""
    lookalikes = [i for i in word if ord(s[i]) in LATIN_LOOKALIKES]
    if not lookalikes:
        return
    ascii_letters = any(s[i].isascii() and s[i].isalpha() for i in word)
    other_letters = any(not s[i].isascii() and s[i].isalpha()
                        and ord(s[i]) not in LATIN_LOOKALIKES for i in word)
    if ascii_letters or not other_letters:
        found.update(lookalikes)
