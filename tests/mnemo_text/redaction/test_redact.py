"""Behaviour of the PII/secret redactor on a hand-labelled corpus and on its guarantees."""

from __future__ import annotations

import random

import pytest

from mnemo_text.redaction import PLACEHOLDERS, Finding, redact, redact_with_findings
from tests.mnemo_text.redaction.corpus import CASES, Case, expected_offsets


def _case_id(case: Case) -> str:
    return case.text[:40]


def _case_param(case: Case):
    marks = [pytest.mark.xfail(reason=case.known_limit, strict=True)] if case.known_limit else []
    return pytest.param(case, id=_case_id(case), marks=marks)


@pytest.mark.parametrize("case", [_case_param(case) for case in CASES])
def test_corpus_case_redacts_exactly_the_labelled_spans(case: Case) -> None:
    result = redact_with_findings(case.text)

    found = [(finding.kind, finding.start, finding.end) for finding in result.findings]
    assert found == expected_offsets(case)


@pytest.mark.parametrize("case", [_case_param(case) for case in CASES if case.spans])
def test_corpus_case_text_shows_placeholders_instead_of_values(case: Case) -> None:
    redacted = redact(case.text)

    for kind, substring in case.spans:
        assert substring not in redacted
        assert PLACEHOLDERS[kind] in redacted


def test_corpus_is_large_and_covers_every_kind() -> None:
    kinds = {kind for case in CASES for kind, _ in case.spans}
    negatives = [case for case in CASES if not case.spans]

    assert len(CASES) >= 250
    assert kinds == set(PLACEHOLDERS)
    assert len(negatives) >= 100


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_redaction_is_idempotent(case: Case) -> None:
    once = redact(case.text)

    assert redact(once) == once
    assert redact_with_findings(once).findings == []


def test_placeholders_are_never_detected() -> None:
    text = " ".join(PLACEHOLDERS.values()) + " password=[PASSWORD] api_key=[SECRET]"

    assert redact(text) == text


def test_password_keeps_its_key() -> None:
    assert redact("password=hunter2 and pwd: s3cr3t!") == (
        "password=[PASSWORD] and pwd: [PASSWORD]"
    )
    assert redact('{"password": "P@ss w0rd"}') == '{"password": "[PASSWORD]"}'


def test_bearer_keeps_the_scheme() -> None:
    assert redact("Authorization: Bearer abcDEF123456ghiJKL789") == (
        "Authorization: Bearer [SECRET]"
    )


def test_non_ascii_text_around_findings_is_preserved() -> None:
    text = "Grüße aus Köln 🌍 — schreib an jörg@beispiel.de oder ruf 030 12345678 an. 谢谢！"

    assert redact(text) == "Grüße aus Köln 🌍 — schreib an [EMAIL] oder ruf [PHONE] an. 谢谢！"


def test_text_without_findings_is_returned_unchanged() -> None:
    text = "Ça va? 東京は晴れ. Version 2.3.1 ships on 2024-05-01 for $9.99."

    result = redact_with_findings(text)

    assert result.text == text
    assert result.findings == []


def test_findings_index_the_original_text() -> None:
    text = "mail ana@example.org, card 4111 1111 1111 1111, ip 10.0.0.7, pwd=hunter22"

    result = redact_with_findings(text)

    assert [(f.kind, text[f.start : f.end]) for f in result.findings] == [
        ("EMAIL", "ana@example.org"),
        ("CARD", "4111 1111 1111 1111"),
        ("IP", "10.0.0.7"),
        ("PASSWORD", "hunter22"),
    ]
    assert all(isinstance(finding, Finding) for finding in result.findings)
    assert result.text == "mail [EMAIL], card [CARD], ip [IP], pwd=[PASSWORD]"


def test_findings_offsets_rebuild_the_redacted_text() -> None:
    for case in CASES:
        result = redact_with_findings(case.text)
        rebuilt, position = [], 0
        for finding in result.findings:
            assert position <= finding.start < finding.end <= len(case.text)
            rebuilt.append(case.text[position : finding.start] + PLACEHOLDERS[finding.kind])
            position = finding.end
        rebuilt.append(case.text[position:])
        assert "".join(rebuilt) == result.text


def test_overlapping_detections_keep_the_higher_priority_kind() -> None:
    text = "postgres://app:pw4db@db.example.com:5432/app"

    assert redact(text) == "postgres://app:[PASSWORD]@db.example.com:5432/app"


def test_invalid_checksums_are_left_alone() -> None:
    text = "card 4111 1111 1111 1112, iban DE89370400440532013001"

    assert redact(text) == text


def test_empty_and_whitespace_text() -> None:
    assert redact("") == ""
    assert redact("   \n\t") == "   \n\t"


def test_text_whose_lowercase_changes_length_still_redacts() -> None:
    # "İ" lower-cases to two code points, so keyword offsets cannot come from text.lower().
    text = "İstanbul ofisi: PASSWORD=Gizli123! ve e-posta ayse@example.com.tr"

    assert redact(text) == "İstanbul ofisi: PASSWORD=[PASSWORD] ve e-posta [EMAIL]"


def _random_texts(count: int, seed: int) -> list[str]:
    """Corpus pieces, cut at random and glued together with or without separators."""
    rng = random.Random(seed)
    pieces = [case.text for case in CASES] + list(PLACEHOLDERS.values())
    pieces += ["password=", "pwd: ", "api_key=", "Bearer ", "ssn ", "call ", "+", "00", "::"]
    texts = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 6)):
            piece = rng.choice(pieces)
            if len(piece) > 8 and rng.random() < 0.5:
                start = rng.randrange(len(piece))
                piece = piece[start : rng.randrange(start, len(piece) + 1)]
            parts.append(piece)
        texts.append(rng.choice(["", " ", "\n"]).join(parts))
    return texts


def test_idempotent_and_consistent_on_glued_random_text() -> None:
    for text in _random_texts(3000, seed=9):
        result = redact_with_findings(text)

        assert redact(result.text) == result.text, text
        rebuilt, position = [], 0
        for finding in result.findings:
            assert position <= finding.start < finding.end <= len(text), text
            rebuilt.append(text[position : finding.start] + PLACEHOLDERS[finding.kind])
            position = finding.end
        rebuilt.append(text[position:])
        assert "".join(rebuilt) == result.text, text
