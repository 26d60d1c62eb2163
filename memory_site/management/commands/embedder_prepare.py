"""Export and check the int8 ONNX embedder once, so the first request does not wait for it."""

from __future__ import annotations

import json

from django.conf import settings
from django.core.management.base import BaseCommand

from memory_site.providers.local_onnx import (
    onnx_cache_dir,
    onnx_manifest_read,
    onnx_model_prepare,
)


class Command(BaseCommand):
    help = (
        "Export all-MiniLM-L6-v2 to an int8 ONNX graph under DATA_DIR/models (reused if "
        "present) and check it against torch; says so if it misses parity (torch is used)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--force", action="store_true", help="export again even if cached")

    def handle(self, *args, force: bool, **options):
        if settings.EMBEDDING_PROVIDER != "local" or settings.EMBEDDING_BACKEND != "onnx":
            self.stdout.write("the onnx local embedder is not configured; nothing to prepare")
            return
        model_path = onnx_model_prepare(settings.DATA_DIR, force=force)
        manifest = onnx_manifest_read(onnx_cache_dir(settings.DATA_DIR)) or {}
        parity = json.dumps(manifest.get("parity", {}))
        if model_path is None:
            self.stderr.write(f"the onnx embedder is not usable, torch will be used: {parity}")
            return
        self.stdout.write(f"onnx embedder ready: {model_path} parity {parity}")
