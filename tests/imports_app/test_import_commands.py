"""manage.py import_conversations and export_chunks (Markdown + YAML round trip)."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
import yaml
from django.core.management import CommandError, call_command

from entities_app.models import Entity
from ingestion_app.chunking.markdown import FRONTMATTER_FIELDS, parse_markdown
from ingestion_app.models import MemoryItem
from tests.ingestion_app.export_builders import (
    chatgpt_linear,
    claude_conversation,
    write_json,
)

pytestmark = pytest.mark.django_db


def _import(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("import_conversations", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_folder_and_zip_import_with_summary(user, tmp_path, fake_embedder, upload_dir):
    folder = tmp_path / "raw"
    folder.mkdir()
    write_json(
        folder / "conversations.json",
        [chatgpt_linear("Kyoto", [("Plan three days in Kyoto with my sister Ines", "Day 1.")])],
    )
    (folder / "readme.txt").write_text("not an export")
    (folder / ".hidden.json").write_text("[]")
    archive = tmp_path / "claude-export.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr(
            "conversations.json",
            json.dumps(
                [claude_conversation("DNS", [("human", "What is DNS?"), ("assistant", "Names.")])]
            ),
        )

    out, err = _import(str(folder), str(archive), "--user", user.username)

    assert "Files processed: 2" in out
    assert "Chunks generated: 2" in out
    assert "Files skipped: 1 [readme.txt]" in out
    assert "Errors: 0" in out
    assert "Verification: OK" in out
    assert "pairs" in err  # the progress bar
    assert MemoryItem.objects.filter(user=user, source="chunk").count() == 2
    # No worker runs here (tests do not run on-commit work): the command extracted them.
    assert "Entities extracted from 2 chunks" in out
    assert Entity.objects.get(user=user, normalized_name="ines").type == "person"
    assert Entity.objects.get(user=user, normalized_name="kyoto").type == "place"

    again, _ = _import(str(folder), str(archive), "--user", user.username)
    assert "Chunks generated: 0" in again
    assert "Chunks skipped (duplicates): 2" in again


def test_unknown_user_or_path_is_an_error(user, tmp_path, upload_dir):
    with pytest.raises(CommandError, match="No user"):
        _import(str(tmp_path), "--user", "nobody")
    with pytest.raises(CommandError, match="does not exist"):
        _import(str(tmp_path / "missing.json"), "--user", user.username)


def test_export_round_trip(user, tmp_path, fake_embedder, upload_dir):
    exchanges = [
        ("Qu'est-ce que «ça»: 2024-03-13?", 'It is "that" — 日本語 too.\n\n```\ncode: yes\n```'),
        ("How do I switch models?", "Use the picker."),
    ]
    write_json(tmp_path / "c.json", [chatgpt_linear("Title: with colon & 'quotes'", exchanges)])
    _import(str(tmp_path / "c.json"), "--user", user.username, "--agent-id", "malcolm")
    out_dir = tmp_path / "export"

    call_command("export_chunks", str(out_dir), "--user", user.username, stdout=io.StringIO())

    files = sorted(out_dir.glob("*.md"))
    stored = {c.chunk_id: c for c in MemoryItem.objects.filter(user=user, source="chunk")}
    assert len(files) == len(stored) == 2
    for path in files:
        text = path.read_text(encoding="utf-8")
        raw_yaml = text.split("---\n")[1]
        frontmatter = yaml.load(raw_yaml, Loader=yaml.SafeLoader)  # pure-Python parser
        chunk = stored[frontmatter["chunk_id"]]
        assert {key: frontmatter[key] for key in FRONTMATTER_FIELDS} == {
            key: chunk.metadata[key] for key in FRONTMATTER_FIELDS
        }
        assert list(frontmatter) == [*FRONTMATTER_FIELDS, "kind", "provenance"]
        assert frontmatter["kind"] == "turn_pair"
        assert frontmatter["provenance"].startswith(
            "Imported from ChatGPT export, conversation 'Title: with colon & 'quotes''"
        )
        assert frontmatter["agent_id"] == "malcolm"
        _, header, exchange = parse_markdown(text)
        assert header == chunk.header and exchange == chunk.content
        pair = int(frontmatter["turn_range"].split("-")[0])
        assert path.name.startswith(frontmatter["timestamp"][:10] + "_")
        assert f"_pair-{pair:03d}_" in path.name and "_session-" in path.name
