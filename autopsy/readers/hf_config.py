"""Hugging Face model ``config.json`` and PEFT ``adapter_config.json``: what was trained.

From ``config.json`` (recognised by a ``model_type`` or ``architectures`` key):
``model_type``, ``architectures``, ``vocab_size``, ``num_labels`` (the length of
``id2label`` when present), ``hidden_size``, ``num_hidden_layers``, ``dtype``
(from ``dtype``, or the older ``torch_dtype``), the shape fields in
:data:`EXTRA_MODEL_KEYS`, and ``n_params_estimate``: a rough parameter count of
a standard dense transformer from those fields (within about 10% for BERT-,
GPT-2- and Llama-style models; absent when a field it needs is missing).
GPT-2-style names (``n_embd``, ``n_layer``, ``n_head``) are accepted, and
multimodal configs fall back to their ``text_config``.

From ``adapter_config.json``: ``finetune_mode`` (``"lora"`` for the LoRA family:
LoRA, AdaLoRA, LoHa, LoKr...; otherwise the PEFT type in lower case, e.g.
``"ia3"``), ``peft_type``, ``lora_r`` (``r``), ``lora_alpha``, ``target_modules``
and :data:`EXTRA_ADAPTER_KEYS`. A ``config.json`` alone never sets
``finetune_mode``: discovery and the rules decide what its absence means.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autopsy.model.config import ConfigValue
from autopsy.model.problem import Problem
from autopsy.readers.base import RunPart, head
from autopsy.readers.registry import Format

NAME = "hf_config"
FORMATS = (
    Format("hf_config", "HF model config.json, adapter_config.json (architecture, LoRA)",
           ("config",), "config.json, adapter_config.json"),
)
MODEL_FILE = "config.json"
ADAPTER_FILE = "adapter_config.json"
#: How much of a ``config.json`` sniffing looks at for its marker keys.
SNIFF_WINDOW = 256 * 1024
#: Largest config file read.
MAX_BYTES = 32 * 1024 * 1024

#: Model shape fields copied as they are, when present.
EXTRA_MODEL_KEYS: tuple[str, ...] = (
    "num_attention_heads", "num_key_value_heads", "intermediate_size",
    "max_position_embeddings", "tie_word_embeddings", "problem_type", "hidden_act",
    "transformers_version",
)
#: Adapter fields copied as they are, when present.
EXTRA_ADAPTER_KEYS: tuple[str, ...] = (
    "lora_dropout", "base_model_name_or_path", "task_type", "use_dora", "use_rslora",
    "modules_to_save", "bias",
)
_LORA_FAMILY = ("LORA", "LOHA", "LOKR")
#: Families with absolute position embeddings (counted in the estimate).
_ABSOLUTE_POSITIONS = frozenset({
    "bert", "roberta", "xlm-roberta", "camembert", "distilbert", "electra", "gpt2", "opt",
    "gpt_neo", "biogpt", "bart", "mbart", "whisper", "vit", "albert", "ernie",
})
#: Families whose MLP is gated (three matrices).
_GATED = frozenset({
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma",
    "gemma2", "gemma3", "gemma3_text", "phi3", "olmo", "olmo2", "cohere", "granite",
    "internlm2", "deepseek_v2", "deepseek_v3", "smollm3", "starcoder2", "stablelm",
})


def sniff(path: Path) -> bool:
    """``adapter_config.json``, or a ``config.json`` with ``model_type``/``architectures``."""
    if path.name == ADAPTER_FILE:
        return True
    if path.name != MODEL_FILE:
        return False
    start = head(path, SNIFF_WINDOW)
    return b'"model_type"' in start or b'"architectures"' in start


def _first(cfg: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        value = cfg.get(key)
        if value is not None:
            return value
    return None


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def estimate_params(cfg: dict[str, Any]) -> int | None:
    """A rough parameter count of a dense transformer from its config, or None.

    Embeddings (+ absolute positions and token types where the family has them),
    per layer attention (grouped-query aware) and MLP (gated or not, times the
    experts of a mixture), and an untied output head. Biases and norms are left
    out (under 1% for usual sizes).
    """
    hidden = _positive_int(_first(cfg, "hidden_size", "n_embd", "d_model"))
    layers = _positive_int(_first(cfg, "num_hidden_layers", "n_layer", "num_layers"))
    vocab = _positive_int(cfg.get("vocab_size"))
    if hidden is None or layers is None or vocab is None:
        return None
    inner = _positive_int(_first(cfg, "intermediate_size", "n_inner", "ffn_dim")) or 4 * hidden
    heads = _positive_int(_first(cfg, "num_attention_heads", "n_head")) or 1
    head_dim = _positive_int(cfg.get("head_dim")) or hidden // heads
    kv_heads = _positive_int(cfg.get("num_key_value_heads")) or heads
    attention = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim
    model_type = str(cfg.get("model_type", ""))
    gated = model_type in _GATED or cfg.get("hidden_act") == "silu"
    experts = _positive_int(_first(cfg, "num_local_experts", "num_experts")) or 1
    mlp = (3 if gated else 2) * hidden * inner * experts
    total = vocab * hidden + layers * (attention + mlp)
    if model_type in _ABSOLUTE_POSITIONS or cfg.get("position_embedding_type") == "absolute":
        positions = _positive_int(_first(cfg, "max_position_embeddings", "n_positions")) or 0
        total += positions * hidden
    total += (_positive_int(cfg.get("type_vocab_size")) or 0) * hidden
    if cfg.get("tie_word_embeddings") is False:
        total += vocab * hidden
    return total


def _model_config(cfg: dict[str, Any], rel: str) -> list[ConfigValue]:
    text = cfg.get("text_config")
    shape = cfg if "hidden_size" in cfg or not isinstance(text, dict) else {**text, **{
        k: v for k, v in cfg.items() if k in ("model_type", "architectures")}}
    values: dict[str, Any] = {
        "model_type": cfg.get("model_type"),
        "architectures": cfg.get("architectures"),
        "vocab_size": shape.get("vocab_size"),
        "num_labels": len(cfg["id2label"]) if isinstance(cfg.get("id2label"), dict)
        else cfg.get("num_labels"),
        "hidden_size": _first(shape, "hidden_size", "n_embd", "d_model"),
        "num_hidden_layers": _first(shape, "num_hidden_layers", "n_layer", "num_layers"),
        "dtype": _first(cfg, "dtype", "torch_dtype"),
    }
    for key in EXTRA_MODEL_KEYS:
        values[key] = shape.get(key)
    values["n_params_estimate"] = estimate_params(shape)
    return [ConfigValue(k, v, rel) for k, v in values.items() if v is not None]


def _finetune_mode(peft_type: Any) -> str:
    if not isinstance(peft_type, str) or any(f in peft_type.upper() for f in _LORA_FAMILY):
        return "lora"
    return peft_type.lower()


def _adapter_config(cfg: dict[str, Any], rel: str) -> list[ConfigValue]:
    target = cfg.get("target_modules")
    if isinstance(target, list):
        target = sorted(str(t) for t in target)
    values: dict[str, Any] = {
        "finetune_mode": _finetune_mode(cfg.get("peft_type")),
        "peft_type": cfg.get("peft_type"),
        "lora_r": cfg.get("r"),
        "lora_alpha": cfg.get("lora_alpha"),
        "target_modules": target,
    }
    for key in EXTRA_ADAPTER_KEYS:
        values[key] = cfg.get(key)
    return [ConfigValue(k, v, rel) for k, v in values.items() if v is not None]


def read(path: Path, rel: str) -> RunPart:
    """Read a ``config.json`` or ``adapter_config.json`` (see the module docstring)."""
    part = RunPart()
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        part.problems.append(Problem(rel, f"cannot read: {exc.strerror}", kind="unreadable"))
        return part
    if len(raw) > MAX_BYTES:
        part.problems.append(Problem(rel, f"larger than {MAX_BYTES:,} bytes; not read",
                                     kind="too_large"))
        return part
    try:
        cfg = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        part.problems.append(Problem(rel, f"invalid JSON: {exc}", kind="invalid_json"))
        return part
    if not isinstance(cfg, dict):
        part.problems.append(Problem(rel, f"top level is a {type(cfg).__name__}, not an object",
                                     kind="invalid_json"))
        return part
    is_adapter = path.name == ADAPTER_FILE or "peft_type" in cfg
    part.config = _adapter_config(cfg, rel) if is_adapter else _model_config(cfg, rel)
    return part
