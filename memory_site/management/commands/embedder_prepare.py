"""Export and measure the ONNX embedder graphs once, so the first request does not wait."""

from __future__ import annotations

import json

from django.conf import settings
from django.core.management.base import BaseCommand

from memory_site.providers.local_onnx import (
    cpu_description,
    onnx_cache_dir,
    onnx_manifest_read,
    onnx_model_prepare,
)


class Command(BaseCommand):
    help = (
        "Export all-MiniLM-L6-v2 to ONNX graphs (int8 u8s8, int8 u8u8, fp32) under "
        "MNEMO_MODELS_DIR (reused if present), measure each against torch on this CPU and say "
        "which one serves."
    )

    def add_arguments(self, parser):
        parser.add_argument("--force", action="store_true", help="export again even if cached")

    def handle(self, *args, force: bool, **options):
        if settings.EMBEDDING_PROVIDER != "local" or settings.EMBEDDING_BACKEND != "onnx":
            self.stdout.write("the onnx local embedder is not configured; nothing to prepare")
            return
        choice = onnx_model_prepare(
            settings.MNEMO_MODELS_DIR,
            force=force,
            min_cosine=settings.EMBEDDING_ONNX_PARITY_MIN_COSINE,
        )
        if choice is None:
            self.stderr.write("the onnx export failed (see the log above); torch will be used")
            return
        manifest = onnx_manifest_read(onnx_cache_dir(settings.MNEMO_MODELS_DIR)) or {}
        cosines = {name: parity["min_cosine"] for name, parity in manifest["graphs"].items()}
        self.stdout.write(
            f"onnx embedder ready: the {choice.kind.name} graph serves on this CPU "
            f"({cpu_description()}): {choice.reason}; lowest cosine to torch per graph "
            f"{json.dumps(cosines)}"
        )
