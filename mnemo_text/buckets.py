"""Knowledge bucket of a text without a model: PERSONAL_LIFE, CREATOR, PROJECTS or OTHER.

The rag-pipeline reference files every memory in a domain bucket: PERSONAL_LIFE (health,
relationships, finances, pets, home, travel), CREATOR (code, design, research, writing) and
PROJECTS (a named project and its plans). Here each bucket has a small cue-word list; entity
types count too (a named pet or relative -> PERSONAL_LIFE, a named project -> PROJECTS). The
bucket with the most cues wins, ties in the order PROJECTS, CREATOR, PERSONAL_LIFE; no cue at
all gives OTHER. Deterministic and cheap (one pass over the words).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

PERSONAL_LIFE = "PERSONAL_LIFE"
CREATOR = "CREATOR"
PROJECTS = "PROJECTS"
OTHER = "OTHER"

_WORD_RE = re.compile(r"[a-z][a-z'-]*")

_CUES = {
    PROJECTS: frozenset(
        """
        project projects roadmap milestone milestones sprint deadline deadlines launch launched
        release released rollout client clients deliverable deliverables mvp stakeholder
        stakeholders backlog kickoff prototype startup investors pitch funding okr okrs
        migration refactor hackathon
        """.split()
    ),
    CREATOR: frozenset(
        """
        code coding bug bugs debug function functions api apis database databases python
        javascript typescript rust java sql deploy deployed server servers backend frontend
        compile script scripts algorithm algorithms git repo commit framework library docker
        kubernetes design designing designed figma sketch prototype ui ux research paper
        papers thesis draft article articles essay novel blog newsletter podcast writing
        wrote write chapter manuscript painting drawing photography music song songs album
        recording composing video editing data model models dataset training
        """.split()
    ),
    PERSONAL_LIFE: frozenset(
        """
        family sister brother mom mum mother dad father wife husband partner girlfriend
        boyfriend son daughter kids kid children child baby grandma grandmother grandpa
        grandfather aunt uncle cousin niece nephew friend friends wedding married marriage
        divorce birthday anniversary dating date health doctor dentist therapist therapy
        sick ill illness pain hospital surgery medicine medication sleep tired stress anxiety
        anxious depressed exercise gym run running workout diet weight allergic allergy
        money rent salary budget savings debt loan mortgage taxes bank bills house home
        apartment flat move moving moved dog puppy cat kitten pet pets vet vacation holiday
        trip travel travelling traveling flight dinner lunch breakfast cook cooking recipe
        feel feeling felt love lonely happy sad hobby hobbies garden church school
        """.split()
    ),
}
_ENTITY_BUCKETS = {
    "person": PERSONAL_LIFE,
    "pet": PERSONAL_LIFE,
    "place": PERSONAL_LIFE,
    "event": PERSONAL_LIFE,
    "project": PROJECTS,
    "product": CREATOR,
    "concept": CREATOR,
}
_TIE_ORDER = (PROJECTS, CREATOR, PERSONAL_LIFE)
# Each cue word (as bytes) with the buckets it counts for: one lookup per word of the text
# (imports classify every chunk and passage).
_CUE_BUCKETS = {
    word.encode(): tuple(bucket for bucket in _TIE_ORDER if word in _CUES[bucket])
    for word in frozenset().union(*_CUES.values())
}
# Bytes outside _WORD_RE's alphabet become spaces, so ``split()`` yields its runs.
_RUN_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyz'-")
_TO_RUNS = bytes(byte if byte in _RUN_BYTES else 32 for byte in range(256))


def _words(text: str) -> list[bytes]:
    """The matches of ``_WORD_RE`` in the lower-cased text, as ASCII bytes, in order.

    Imports classify every chunk and passage, and the regular expression was most of that
    cost: after lower-casing, every non-ASCII character is a separator for ``_WORD_RE``, so
    the text is encoded to ASCII (each of them becomes "?"), every byte outside ``[a-z'-]``
    becomes a space and the runs are split off in C. A match starts at a letter, so the ' and
    - a run starts with are blanked first (a run of them alone then disappears).
    """
    data = text.lower().encode("ascii", "replace").translate(_TO_RUNS)
    if b"'" in data or b"-" in data:
        data = b" " + data
        while b" '" in data or b" -" in data:
            data = data.replace(b" '", b"  ").replace(b" -", b"  ")
    return data.split()


def bucket_classify(text: str, *, entity_types: Iterable[str] = ()) -> str:
    """The bucket whose cue words (and entity types) ``text`` holds most; OTHER for none."""
    scores = dict.fromkeys(_TIE_ORDER, 0.0)
    # Only the cue words reach this loop (most words are not).
    for buckets in filter(None, map(_CUE_BUCKETS.get, _words((text or "")[:4000]))):
        for bucket in buckets:
            scores[bucket] += 1
    for kind in entity_types:
        bucket = _ENTITY_BUCKETS.get(kind)
        if bucket:
            # Half a cue: "I met Sarah at PyCon" is about the conference more than Sarah.
            scores[bucket] += 0.5
    best = max(_TIE_ORDER, key=lambda bucket: scores[bucket])
    return best if scores[best] > 0 else OTHER
