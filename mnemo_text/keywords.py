"""Keywords and keyphrases with a confidence, and the tags and titles built from them."""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from mnemo_text.words import _BOUNDARY, _CJK_RE, _KEY, _SURFACE, _UPPER, _words_of


class _Candidate:
    """One keyword or keyphrase and the evidence for it."""

    __slots__ = (
        "keys",
        "count",
        "first",
        "text_hits",
        "capitalised",
        "surfaces",
        "mass",
        "score",
        "current",
        "whole_run",
    )

    def __init__(
        self,
        keys: tuple[str, ...],
        first: int,
        count: int,
        mass: float,
        capitalised: int,
        surfaces: dict[str, int],
        whole_run: bool,
    ) -> None:
        self.keys = keys
        self.count = count
        self.first = first
        self.text_hits = 1  # in how many texts it occurs
        self.capitalised = capitalised
        self.surfaces = surfaces
        self.mass = mass  # occurrences weighted by how noun-like each one looked
        self.score = 0.0
        self.current = 0.0  # the score while ranking (lowered as better candidates are picked)
        self.whole_run = whole_run  # a phrase that was once a complete run of 2-3 content words


# keys, first occurrence (position among the text's occurrences), count, weights in text order,
# capitalised count, {surface: count} in first-seen order, ever a whole run
_Evidence = tuple[tuple[str, ...], int, int, list[float], int, dict[str, int], bool]
# A phrase lifted out of a long run and seen once: keys, first occurrence, weight, surface
_OneOff = tuple[tuple[str, ...], int, float, str]


def _add_phrase(
    grouped: dict,
    singles: dict,
    keys: tuple[str, ...],
    position: int,
    surface: str,
    weight: float,
    whole: bool,
) -> None:
    """One phrase occurrence. A phrase seen once and not as a whole run waits in ``singles``
    as (position, surface): most n-grams of long runs never repeat, and this way they cost
    one small tuple instead of an evidence entry."""
    entry = grouped.get(keys)
    if entry is not None:
        entry[1].append(weight)
        surfaces = entry[3]
        surfaces[surface] = surfaces.get(surface, 0) + 1
        if whole:
            entry[4] = True
        return
    seen = singles.pop(keys, None) if singles else None
    if seen is None:
        if whole:
            grouped[keys] = [position, [weight], 0, {surface: 1}, True]
        else:  # phrases that are not whole runs always weigh 1.0
            singles[keys] = (position, surface)
        return
    first, first_surface = seen
    surfaces = {first_surface: 1}
    surfaces[surface] = surfaces.get(surface, 0) + 1
    grouped[keys] = [first, [1.0, weight], 0, surfaces, whole]


def _add_run_phrases(
    grouped: dict, singles: dict, position: int, run: list[tuple], verbs: list[bool]
) -> int:
    """The phrase occurrences of one run of two or more content words (cached words and
    their verb-like flags); returns the position after them."""
    size = len(run)
    keys_of = [word[_KEY] for word in run]
    surface_of = [word[_SURFACE] for word in run]
    if size <= 3:
        if size == 3:
            # Sub-phrases of "Japan Rail Pass" merge with their occurrences elsewhere.
            first, second, third = keys_of
            _add_phrase(
                grouped,
                singles,
                (first, second),
                position,
                f"{surface_of[0]} {surface_of[1]}",
                1.0,
                False,
            )
            _add_phrase(
                grouped,
                singles,
                (second, third),
                position + 1,
                f"{surface_of[1]} {surface_of[2]}",
                1.0,
                False,
            )
            position += 2
        weight = 0.6 if verbs[0] or verbs[-1] else 1.0
        _add_phrase(grouped, singles, tuple(keys_of), position, " ".join(surface_of), weight, True)
        return position + 1
    # Capitalised names of two or three words ("The Japan Rail Pass costs").
    start = -1
    for index in range(size + 1):
        if index < size and run[index][_UPPER] and not verbs[index]:
            if start < 0:
                start = index
        elif start >= 0:
            if 2 <= index - start <= 3:
                _add_phrase(
                    grouped,
                    singles,
                    tuple(keys_of[start:index]),
                    position,
                    " ".join(surface_of[start:index]),
                    1.0,
                    True,
                )
                position += 1
            start = -1
    for index in range(size - 1):
        _add_phrase(
            grouped,
            singles,
            (keys_of[index], keys_of[index + 1]),
            position,
            f"{surface_of[index]} {surface_of[index + 1]}",
            1.0,
            False,
        )
        position += 1
    for index in range(size - 2):
        _add_phrase(
            grouped,
            singles,
            (keys_of[index], keys_of[index + 1], keys_of[index + 2]),
            position,
            f"{surface_of[index]} {surface_of[index + 1]} {surface_of[index + 2]}",
            1.0,
            False,
        )
        position += 1
    return position


@lru_cache(maxsize=1024)
def _text_evidence(text: str) -> tuple[int, tuple[_Evidence, ...], tuple[_OneOff, ...]]:
    """(number of candidate occurrences, evidence per distinct candidate, one-offs) of a text.

    The text is cut into runs of adjacent content words (split at stop-words and punctuation;
    a content word is verb-like when it is not capitalised mid-fragment and follows "I", "to"...
    or precedes "the", "my"...; CJK text gives one run per character bigram). Occurrences, in
    text order per run: each content word; for a run of three, its two bigrams; a run of 2-3
    words as a whole; in a longer run, its capitalised names ("The Japan Rail Pass costs") and
    then all its bigrams and trigrams (which count only if they repeat: those seen once are
    listed apart as one-offs, which most of them stay). They are folded per
    candidate once and cached per text (the importer ranks a turn's user text twice and its
    reply twice), so ranking merges a few dozen aggregates instead of replaying every
    occurrence. Weights stay in text order so the merged mass is the same float sum as adding
    occurrence by occurrence. One walk over the cached words does the tokenizing and the
    counting (this is the importer's hottest loop: fields are read by position).
    """
    # keys -> [first position, weights, capitalised count, {surface: count}, whole run]
    grouped: dict[tuple[str, ...], list] = {}
    singles: dict[tuple[str, ...], tuple[int, str]] = {}  # phrases seen once so far
    get = grouped.get
    position = 0
    words = _words_of(text)
    run_start = -1  # index of the current run's first word
    verbs: list[bool] = []  # verb-like flags of the run's words
    previous_preceder = False
    fragment_start = True
    for index, word in enumerate(words):
        # word: lower, surface, key, key1, upper, ed, preceder, determiner, bigrams
        key1 = word[3]
        if key1 is not None:
            if word[4] and not fragment_start:  # capitalised mid-fragment: never verb-like
                verb_like = False
                weight = 1.0
                capitalised = 1
            else:
                # The next word exists: the list ends with a boundary (no determiner).
                verb_like = previous_preceder or words[index + 1][7]
                weight = 0.5 if verb_like or word[5] else 1.0
                capitalised = 0
            entry = get(key1)
            if entry is None:
                grouped[key1] = [position, [weight], capitalised, {word[1]: 1}, False]
            else:
                entry[1].append(weight)
                entry[2] += capitalised
                surfaces = entry[3]
                surface = word[1]
                surfaces[surface] = surfaces.get(surface, 0) + 1
            position += 1
            if run_start < 0:
                run_start = index
                verbs = [verb_like]
            else:
                verbs.append(verb_like)
        else:
            if run_start >= 0:
                if index - run_start > 1:
                    position = _add_run_phrases(
                        grouped, singles, position, words[run_start:index], verbs
                    )
                run_start = -1
            if word is _BOUNDARY:
                previous_preceder = False
                fragment_start = True
                continue
            if word[8]:
                for bigram in word[8]:
                    entry = get((bigram,))
                    if entry is None:
                        grouped[(bigram,)] = [position, [1.0], 0, {bigram: 1}, False]
                    else:
                        entry[1].append(1.0)
                        surfaces = entry[3]
                        surfaces[bigram] = surfaces.get(bigram, 0) + 1
                    position += 1
        if word[0]:
            previous_preceder = word[6]
        fragment_start = False
    evidence = tuple(
        (keys, first, len(weights), weights, capitalised, surfaces, whole)
        for keys, (first, weights, capitalised, surfaces, whole) in grouped.items()
    )
    one_offs = tuple((keys, first, 1.0, surface) for keys, (first, surface) in singles.items())
    return position, evidence, one_offs


def _collect_candidates(
    texts: Iterable[str], first_text_weight: float = 1.0
) -> tuple[dict[tuple[str, ...], _Candidate], int]:
    """Candidates of the texts, merged. A phrase lifted out of a long run and seen once so far
    waits in ``pending`` (it can only rank if it repeats); most such n-grams never do, so
    they never cost a candidate, and the one-offs of the last text are only looked up (nothing
    after it could repeat them). Only candidates that can enter ``_ranked``'s pool are
    returned: every candidate is a single word, a phrase seen at least twice or a whole run.

    A text repeated right after itself (the importer counts a user's words twice) is merged
    copy after copy per candidate in one pass. Masses are summed weight by weight in text
    order, so they are the same floats whichever way the evidence was grouped."""
    candidates: dict[tuple[str, ...], _Candidate] = {}
    pending: dict[tuple[str, ...], tuple[int, float, str]] = {}
    valid = [text for text in texts if isinstance(text, str) and text.strip()]
    groups: list[list] = []  # [text, copies in a row]
    for text in valid:
        if groups and (groups[-1][0] is text or groups[-1][0] == text):
            groups[-1][1] += 1
        else:
            groups.append([text, 1])
    position = 0
    last = len(groups) - 1
    for number, (text, copies) in enumerate(groups):
        boost = first_text_weight if number == 0 else 1.0
        occurrences, evidence, one_offs = _text_evidence(text)
        every_copy = (boost,) + (1.0,) * (copies - 1)  # the boost of each copy
        for keys, first, count, weights, capitalised, surfaces, whole in evidence:
            candidate = candidates.get(keys)
            boosts = every_copy
            if candidate is None and pending and keys in pending:
                # Seen once in an earlier text, now again: the one-off becomes a candidate.
                earlier_position, earlier_mass, earlier_surface = pending.pop(keys)
                candidate = candidates[keys] = _Candidate(
                    keys, earlier_position, 1, 0.0 + earlier_mass, 0, {earlier_surface: 1}, False
                )
            elif candidate is None:
                mass = 0.0
                if boost == 1.0:
                    for weight in weights:
                        mass += weight
                else:
                    for weight in weights:
                        mass += weight * boost
                candidate = candidates[keys] = _Candidate(
                    keys, position + first, count, mass, capitalised, dict(surfaces), whole
                )
                if copies == 1:
                    continue
                boosts = every_copy[1:]
            for copy_boost in boosts:
                candidate.text_hits += 1
                candidate.count += count
                mass = candidate.mass
                if copy_boost == 1.0:
                    for weight in weights:
                        mass += weight
                else:
                    for weight in weights:
                        mass += weight * copy_boost
                candidate.mass = mass
                known = candidate.surfaces
                for surface, seen in surfaces.items():
                    known[surface] = known.get(surface, 0) + seen
                candidate.capitalised += capitalised
                if whole:
                    candidate.whole_run = True
        if number == last and copies == 1 and not pending and len(candidates) == len(evidence):
            # Every candidate is one of this text's own entries (always so for a single text)
            # and nothing comes after it: none of its one-offs can repeat.
            break
        for keys, first, weight, surface in one_offs:
            candidate = candidates.get(keys)
            later = copies - 1  # copies merged after the first
            if candidate is None:
                waiting = pending.pop(keys, None)
                if waiting is None:
                    if copies == 1:
                        if number < last:
                            pending[keys] = (position + first, weight * boost, surface)
                        continue
                    # The first copy waits, the second makes it a candidate.
                    candidate = candidates[keys] = _Candidate(
                        keys, position + first, 1, 0.0 + weight * boost, 0, {surface: 1}, False
                    )
                    for _ in range(later):
                        candidate.text_hits += 1
                        candidate.count += 1
                        candidate.mass += weight
                        candidate.surfaces[surface] += 1
                    continue
                earlier_position, earlier_mass, earlier_surface = waiting
                candidate = candidates[keys] = _Candidate(
                    keys, earlier_position, 1, 0.0 + earlier_mass, 0, {earlier_surface: 1}, False
                )
            candidate.text_hits += 1
            candidate.count += 1
            candidate.mass += weight * boost
            known = candidate.surfaces
            known[surface] = known.get(surface, 0) + 1
            for _ in range(later):
                candidate.text_hits += 1
                candidate.count += 1
                candidate.mass += weight
                known[surface] = known.get(surface, 0) + 1
        position += occurrences * copies
    return candidates, len(valid)


def _display(candidate: _Candidate, *, lowercase: bool) -> str:
    """The form shown to people: the singular if the text uses it, else the commonest form."""
    surfaces = candidate.surfaces
    if len(surfaces) == 1:  # the usual case: one spelling
        (only,) = surfaces
        return only.lower() if lowercase else only
    by_lower: dict[str, int] = {}
    for surface, count in surfaces.items():
        folded = surface.lower()
        by_lower[folded] = by_lower.get(folded, 0) + count
    joined_keys = " ".join(candidate.keys)
    if joined_keys in by_lower:
        chosen_lower = joined_keys
    else:
        chosen_lower = min(by_lower, key=lambda form: (-by_lower[form], form))
    if lowercase:
        return chosen_lower
    cased = [form for form in surfaces if form.lower() == chosen_lower]
    return min(cased, key=lambda form: (-surfaces[form], form))


@lru_cache(maxsize=100_000)
def _tail_capitalised(surface: str) -> bool:
    """Every word after the first starts upper-case: "Japan Rail Pass", "Markthalle Neun"."""
    return all(word[:1].isupper() for word in surface.split()[1:])


@lru_cache(maxsize=100_000)
def _word_weight(key: str) -> float:
    return 0.6 if len(key) <= 3 and not _CJK_RE.search(key) else 1.0


def _ranked(
    texts: Sequence[str], k: int, *, first_text_weight: float = 1.0
) -> list[tuple[_Candidate, float]]:
    candidates, text_count = _collect_candidates(texts, first_text_weight)
    if not candidates or k <= 0:
        return []
    # Every candidate is in the pool: a phrase lifted out of a long run is kept only if it
    # repeats, and _collect_candidates never makes a candidate of a one-off.
    pool = candidates.values()
    heap = []
    phrases: list[_Candidate] = []
    for candidate in pool:
        spread = 0.5 + 0.5 * candidate.text_hits / text_count
        keys = candidate.keys
        if len(keys) == 1:
            weight = _word_weight(keys[0])
            if candidate.capitalised * 2 >= candidate.count:
                weight *= 1.25  # names of people, places and products
            score = candidate.mass * weight * spread
        else:
            phrase_weight = 1.4 if len(keys) == 2 else 1.6
            surfaces = candidate.surfaces
            common = max(surfaces, key=surfaces.__getitem__) if len(surfaces) > 1 else ""
            common = common or next(iter(surfaces))
            if _tail_capitalised(common):
                phrase_weight *= 1.2  # "Japan Rail Pass", "Markthalle Neun"
            score = candidate.mass * phrase_weight * spread
            phrases.append(candidate)
        candidate.score = candidate.current = score
        heap.append((-score, candidate.first, keys, candidate))
    # Scores only ever go down, so a lazy max-heap gives the same greedy order as re-sorting.
    # (Entries never compare their candidates: keys are unique.)
    heapq.heapify(heap)
    remaining: dict[str, float] = {}
    chosen: list[_Candidate] = []
    picked_scores: list[float] = []
    while heap and len(chosen) < k:
        negative_score, first, keys, best = heapq.heappop(heap)
        if -negative_score != best.current:
            heapq.heappush(heap, (-best.current, first, keys, best))
            continue
        if best.current <= 0:
            break
        if len(keys) > 1:
            if any(_contains(chosen_one.keys, keys) for chosen_one in chosen):
                continue
            # Mentions covered by the phrase no longer count for its words.
            for key in keys:
                unigram = candidates.get((key,))
                left = remaining.get(key)
                if left is None:
                    left = float(unigram.count) if unigram is not None else 0.0
                left = remaining[key] = left - best.count
                if unigram is not None:
                    unigram.current = min(
                        unigram.current, unigram.score * max(left, 0.0) / max(unigram.count, 1)
                    )
        else:
            word = keys[0]
            for phrase in phrases:
                if word in phrase.keys:
                    phrase.current *= 0.7
        chosen.append(best)
        picked_scores.append(best.current)
    top = max(picked_scores, default=1.0) or 1.0
    ranked = []
    for candidate, score in zip(chosen, picked_scores, strict=True):
        evidence = 1.0 - math.exp(-0.5 * score)
        ranked.append((candidate, round(min(1.0, evidence * (0.5 + 0.5 * score / top)), 3)))
    return ranked


def _contains(outer: tuple[str, ...], inner: tuple[str, ...]) -> bool:
    if len(inner) > len(outer):
        return False
    return any(outer[i : i + len(inner)] == inner for i in range(len(outer) - len(inner) + 1))


def keywords(texts: list[str], *, k: int = 8) -> list[tuple[str, float]]:
    """Salient lowercase keywords and keyphrases (1-3 words) with a confidence in [0, 1].

    Best first; ties break on first appearance, so the result is deterministic. Stop-words
    (English, chat filler, a small multilingual list), numbers, placeholders like ``[EMAIL]``,
    URLs, code blocks and words shorter than three letters (except acronyms) never appear.
    A word repeated across several texts outranks one said once; a phrase outranks its words.
    Confidence = (1 - exp(-score / 2)) * (0.5 + 0.5 * score / best score), where the score is
    the (noun-weighted) count times how widely it is spread over the texts: one mention in one
    text gives about 0.4, a topic repeated in every text approaches 1. Non-increasing with rank.
    """
    if isinstance(texts, str):
        texts = [texts]
    return [(_display(c, lowercase=True), conf) for c, conf in _ranked(list(texts or []), k)]


_NON_WORD_RE = re.compile(r"[^\w]+")


def _kebab(phrase: str) -> str:
    return _NON_WORD_RE.sub("-", phrase.lower()).strip("-_")


def tags(texts: list[str], *, k: int = 3) -> list[str]:
    """Up to ``k`` lowercase kebab-case topic tags (default 1-3), best first.

    A tag whose words are all inside a better tag is skipped ("japan" after "japan-rail-pass").
    Empty or content-free input gives an empty list.
    """
    if isinstance(texts, str):
        texts = [texts]
    return _tags(list(texts or []), k)


def _tags(texts: list[str], k: int, first_text_weight: float = 1.0) -> list[str]:
    if k <= 0:
        return []
    chosen: list[str] = []
    chosen_words: list[set[str]] = []
    ranked = _ranked(texts, max(k * 3, 6), first_text_weight=first_text_weight)
    for candidate, _confidence in ranked:
        tag = _kebab(_display(candidate, lowercase=True))[:40].strip("-")
        if not tag or tag in chosen:
            continue
        words = set(tag.split("-"))
        if any(words <= earlier for earlier in chosen_words):
            continue
        chosen.append(tag)
        chosen_words.append(words)
        if len(chosen) == k:
            break
    return chosen


def _title_word(word: str) -> str:
    if any(ch.isupper() for ch in word):
        return word  # keep "iPhone", "API", "PostgreSQL" as written
    return "-".join(part[:1].upper() + part[1:] for part in word.split("-"))


def title(texts: list[str]) -> str:
    """A readable 2-5 word Title Case title: the conversation's main phrase, or two of them
    joined by "and" ("Japan Rail Pass and Kyoto"), never a run of unrelated keywords.

    The opening message counts 1.5x (it usually states what the conversation is for). A second
    phrase is added only when it is nearly as salient as the first (3/4 of its confidence) and
    shares no word with it. Phrases keep the casing the user wrote ("API", "iPhone") and appear
    in conversation order. One or two words become "Notes on X"; with no salient phrase the title
    is "Untitled Conversation". Markup and code tokens never qualify (see ``words``).
    """
    if isinstance(texts, str):
        texts = [texts]
    ranked = _ranked(list(texts or []), 8, first_text_weight=1.5)
    if not ranked:
        return "Untitled Conversation"
    first, first_confidence = ranked[0]
    if len(first.keys) == 1:
        # "Japan" with "Japan Rail Pass" close behind: the phrase says more.
        for candidate, confidence in ranked[1:]:
            if first.keys[0] in candidate.keys and confidence >= 0.5 * first_confidence:
                first, first_confidence = candidate, confidence
                break
    picked = [first]
    first_words = {word.lower() for word in _display(first, lowercase=False).split()}
    for candidate, confidence in ranked[1:]:
        if confidence < 0.75 * first_confidence:
            break
        words = _display(candidate, lowercase=False).split()
        if (
            candidate.count < 2  # a second topic must recur, not be one passing phrase
            or {word.lower() for word in words} & first_words
            or len(first_words) + len(words) > 4
        ):
            continue
        picked.append(candidate)
        break
    picked.sort(key=lambda c: c.first)
    phrases = [
        " ".join(_title_word(word) for word in _display(candidate, lowercase=False).split())
        for candidate in picked
    ]
    result = " and ".join(phrases)
    if len(result.split()) < 3:
        result = f"Notes on {result}"
    return result
