"""EDA (Wei & Zou 2019) as PaSeR uses it (methods/paser.py, Sec. 3.1.3, Table 4), on a sentence as a list of
[text, locked] units, where a locked unit is a mask that EDA never replaces, swaps or deletes:
  sr   synonym replacement from WordNet (EDA's lemma cleaning; PaSeR's README: alpha_sr = 0.5)
  rs   random swap of two unlocked units, n = max(1, int(alpha_rs * #units)) times (the paper's "token
       reordering"; EDA's default 0.1)
  rd   random deletion of each unlocked unit with probability p_rd (EDA's default 0.1), one survives
Ops are drawn from the `random.Random` given; WordNet and the stopwords are read from NLTK's data path (the
caller holds corpora.nltk_data). mask_units turns a sentence's words and the spans to mask into units.
"""
from __future__ import annotations

import random
from functools import lru_cache


@lru_cache(maxsize=None)
def synonyms(word: str) -> tuple[str, ...]:
    """EDA's WordNet synonyms of a word: every lemma of every synset, '_' and '-' to spaces, letters only,
    the word itself left out; sorted so that a seeded draw is the same in every process."""
    from nltk.corpus import wordnet

    found = set()
    for synset in wordnet.synsets(word):
        for lemma in synset.lemmas():
            text = lemma.name().replace("_", " ").replace("-", " ").lower()
            text = "".join(c for c in text if c in " qwertyuiopasdfghjklzxcvbnm")
            if text.strip():
                found.add(" ".join(text.split()))
    found.discard(word.lower())
    return tuple(sorted(found))


@lru_cache(maxsize=1)
def stopwords() -> frozenset:
    from nltk.corpus import stopwords as nltk_stopwords

    return frozenset(nltk_stopwords.words("english"))


def synonym_replacement(units: list[list], alpha: float, rng: random.Random) -> list[list]:
    """EDA's SR on [text, locked] units: n = max(1, int(alpha * #units)) distinct alphabetic non-stopwords,
    in random order, each replaced (every unlocked occurrence) by a random WordNet synonym."""
    n = max(1, int(alpha * len(units)))
    candidates = list(dict.fromkeys(t.lower() for t, locked in units
                                    if not locked and t.isalpha() and t.lower() not in stopwords()))
    rng.shuffle(candidates)
    replaced = 0
    for word in candidates:
        options = synonyms(word)
        if options:
            choice = rng.choice(options)
            units = [[choice, False] if not locked and t.lower() == word else [t, locked] for t, locked in units]
            replaced += 1
        if replaced >= n:
            break
    return units


def random_swap(units: list[list], alpha: float, rng: random.Random) -> list[list]:
    """EDA's RS: n = max(1, int(alpha * #units)) swaps of two random unlocked units (masks stay in place)."""
    units = [list(u) for u in units]
    free = [i for i, (_, locked) in enumerate(units) if not locked]
    if len(free) < 2:
        return units
    for _ in range(max(1, int(alpha * len(units)))):
        i, j = rng.sample(free, 2)
        units[i], units[j] = units[j], units[i]
    return units


def random_deletion(units: list[list], p: float, rng: random.Random) -> list[list]:
    """EDA's RD: each unlocked unit deleted with probability p; one unlocked unit survives at least."""
    free = [i for i, (_, locked) in enumerate(units) if not locked]
    if len(free) <= 1:
        return units
    gone = {i for i in free if rng.random() < p}
    if len(gone) == len(free):
        gone.discard(rng.choice(free))
    return [u for i, u in enumerate(units) if i not in gone]


def augment(units: list[list], how: str, cfg: dict, rng: random.Random) -> list[list]:
    """`how`: "none" or ops joined by "+" ("sr+rd"), applied in that order with cfg's alpha_sr, alpha_rs, p_rd."""
    for op in ([] if how == "none" else how.split("+")):
        if op == "sr":
            units = synonym_replacement(units, cfg["alpha_sr"], rng)
        elif op == "rs":
            units = random_swap(units, cfg["alpha_rs"], rng)
        elif op == "rd":
            units = random_deletion(units, cfg["p_rd"], rng)
    return units


def mask_units(tokens: list[str], spans: list[tuple[int, int]], unit: str, tokenizer) -> list[list]:
    """[text, locked] units of the masked copy: each masked word (or phrase occurrence, `unit=phrase`)
    becomes one locked unit of [MASK]s (as many as its wordpieces, `unit=wordpiece`; one, `word`/`phrase`)."""
    masked = [False] * len(tokens)
    for start, end in spans:
        masked[start:end] = [True] * (end - start)
    mask = tokenizer.mask_token
    units, i = [], 0
    while i < len(tokens):
        if not masked[i]:
            units.append([tokens[i], False])
            i += 1
        elif unit == "phrase":
            j = i
            while j < len(tokens) and masked[j]:
                j += 1
            units.append([mask, True])
            i = j
        else:
            count = len(tokenizer.tokenize(tokens[i])) if unit == "wordpiece" else 1
            units.append([" ".join([mask] * count), True])
            i += 1
    return units


def text_of(units: list[list]) -> str:
    return " ".join(t for t, _ in units)
