"""Every text function on empty, huge and non-English input, and across processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from mnemo_text.facts import extract_facts
from mnemo_text.keywords import keywords, tags
from mnemo_text.summaries import summarize


def test_empty_huge_and_non_english_input_is_handled():
    huge = "The vector index rebuild takes hours on large tables. " * 50_000
    assert keywords([huge])[0][0] in {"vector index rebuild", "vector index", "index rebuild"}
    assert len(summarize([("user", huge)], max_chars=300)) <= 300
    assert extract_facts([("user", huge)]) == []

    german = "Ich möchte nächsten Sommer nach Portugal reisen. Lissabon ist schön, Lissabon!"
    assert keywords([german])[0][0] == "lissabon"
    chinese = keywords(["我想学习机器学习和深度学习。机器学习很有趣。"])
    assert chinese and chinese[0][0] == "学习"
    for function in (keywords, tags):
        assert function([]) == []
        assert function(["", "   "]) == []


def test_outputs_are_identical_across_processes():
    """Hash randomisation must not change anything: run the same calls in two processes."""
    script = (
        "from mnemo_text.facts import extract_facts\n"
        "from mnemo_text.headers import contextual_header\n"
        "from mnemo_text.keywords import keywords, tags, title\n"
        "from mnemo_text.summaries import summarize\n"
        "from tests.mnemo_text.samples import BERLIN_CHAT, JAPAN_USER, JAPAN_ASSISTANT\n"
        "print(keywords([JAPAN_USER, JAPAN_ASSISTANT]))\n"
        "print(tags([t for r, t in BERLIN_CHAT]), title([JAPAN_USER]))\n"
        "print(summarize(BERLIN_CHAT))\n"
        "print(extract_facts(BERLIN_CHAT))\n"
        "print(contextual_header(user_text=JAPAN_USER, assistant_text=JAPAN_ASSISTANT))\n"
    )
    root = Path(__file__).resolve().parents[2]
    outputs = []
    for seed in ("1", "2"):
        environment = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(root)}
        completed = subprocess.run(
            [sys.executable, "-c", script],
            cwd=root,
            env=environment,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        outputs.append(completed.stdout)
    assert outputs[0] == outputs[1]
    assert "Berlin" in outputs[0]
