"""Names drawn alike: Unicode's confusables (UTS #39) as names need them (see grader.intake.names).

`looks(text)` is what a text looks like: Unicode's skeleton of its compatibility form, where each
character Unicode draws like ASCII text reads as that text (`grader.intake.confusables`, generated
from confusables.txt): Cyrillic а, Greek ο, Armenian օ, Cherokee Ꭺ and Latin ɑ read as a, o, o, A
and a; I, 1 and | as l. `alike(shown)` groups the names of a class that look alike: the same look,
or one name drawn like another in every letter but one, with letters of another script drawn like
ASCII in it (confusables.txt is not exhaustive: Cherokee Ꮖ is not in it, yet "ᎪᏞᏆᏟᎬ" passes for
"ALICE"). Standard library only (the student bundle ships a copy of intake/).
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict

from grader.intake.confusables import ASCII_PROTOTYPES, LOOKS_ASCII

_PROTOTYPES = {**ASCII_PROTOTYPES, **LOOKS_ASCII}  # Unicode's prototypes of ASCII's look-alikes
_SKELETON = str.maketrans(_PROTOTYPES)
MAX_NEAR = 64  # characters of a name compared letter by letter with classmates' (see _near_keys)


def is_latin(char: str) -> bool:
    return char.isalpha() and unicodedata.name(char, "").startswith("LATIN ")


def _base(char: str) -> str:
    return unicodedata.normalize("NFD", char)[:1]


def confusable(char: str) -> bool:
    """Unicode lists the character (its base letter, accents aside) as drawn like ASCII text."""
    return _base(char) in LOOKS_ASCII


def imitation(char: str) -> bool:
    """A letter or digit of another script than Latin drawn like ASCII (Cyrillic а, Armenian օ)."""
    base = _base(char)
    return base in LOOKS_ASCII and unicodedata.category(base)[0] in "LN" and not is_latin(base)


def mixes_scripts(raw: str) -> bool:
    """Latin letters and Latin-looking letters of another script in one name."""
    return any(imitation(c) for c in raw) and any(is_latin(c) for c in raw)


def looks(shown: str) -> str:
    """What a shown name looks like (Unicode's skeleton, UTS #39, of its compatibility form): each
    character as the prototype Unicode draws it like, where that is ASCII (Cyrillic а and Latin ɑ
    as a, I and 1 as l). Two names that look the same are drawn alike."""
    if shown.isascii():
        return shown.translate(_SKELETON)
    text = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", shown)).translate(_SKELETON)
    return unicodedata.normalize("NFC", text)


def drawn_as_itself(raw: str) -> bool:
    """No compatibility character, nothing NFC would change, no character drawn like ASCII that is
    not ASCII: nothing else looks like the name unless it is the name."""
    return unicodedata.normalize("NFKC", raw) == raw and not any(confusable(c) for c in raw)


def _near_keys(raw: str, text: str) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """(keys as an imitation, keys as the imitated) of a shown name, for names drawn like a
    classmate's in every letter but one that Unicode does not list (Cherokee Ꮖ for the I of ALICE:
    confusables.txt is not exhaustive). The name's characters are read as their prototypes (one
    each: m stays one letter). A name that uses letters of another script drawn like ASCII offers,
    for each of its letters that is not ASCII, its look with that letter unknown; every name offers
    the same for each of its ASCII letters and digits. An imitation key that meets an imitated one
    makes the two names look alike."""
    units = [_PROTOTYPES.get(c, c) for c in unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text))]
    if len(units) > MAX_NEAR:
        return [], []
    imitates = any(imitation(c) for c in raw) and not text.isascii()
    as_imitation, as_imitated = [], []
    for index, unit in enumerate(units):
        key = (*units[:index], "\0", *units[index + 1 :])
        if unit.isascii() and unit.isalnum():
            as_imitated.append(key)
        elif imitates and unit.isalpha():
            as_imitation.append(key)
    return as_imitation, as_imitated


def alike(shown: dict[str, str]) -> list[set[str]]:
    """Groups of names whose shown forms look alike: the same look, or one imitating the other."""
    same: dict[str, set[str]] = defaultdict(set)
    imitations: dict[tuple[str, ...], set[str]] = defaultdict(set)
    imitated: dict[tuple[str, ...], set[str]] = defaultdict(set)
    for raw, text in shown.items():
        same[looks(text)].add(raw)
        as_imitation, as_imitated = _near_keys(raw, text)
        for key in as_imitation:
            imitations[key].add(raw)
        for key in as_imitated:
            imitated[key].add(raw)
    groups = [group for group in same.values() if len(group) > 1]
    groups += [imitations[key] | imitated[key] for key in imitations.keys() & imitated.keys()]
    return [group for group in groups if len(group) > 1]
