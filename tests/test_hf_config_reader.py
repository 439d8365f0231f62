"""config.json and adapter_config.json: real files from the HF writers and small fixtures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hf_fixtures import NUM_LABELS, trainer_run

from autopsy.readers import hf_config
from autopsy.readers.base import RunPart

FIXTURES = Path(__file__).parent / "fixtures" / "hf_config"


@pytest.fixture(scope="session")
def hf_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return trainer_run(tmp_path_factory)


def config_of(part: RunPart) -> dict[str, Any]:
    return {entry.key: entry.value for entry in part.config}


def test_sniff(tmp_path: Path) -> None:
    model = tmp_path / "config.json"
    model.write_text(json.dumps({"architectures": ["X"], "hidden_size": 8}))
    assert hf_config.sniff(model)
    other = tmp_path / "sub" / "config.json"
    other.parent.mkdir()
    other.write_text(json.dumps({"batch_size": 8}))
    assert not hf_config.sniff(other)
    assert hf_config.sniff(tmp_path / "adapter_config.json")
    assert not hf_config.sniff(tmp_path / "generation_config.json")


def test_real_trainer_model_config(hf_run: Path) -> None:
    assert hf_config.sniff(hf_run / "config.json")
    part = hf_config.read(hf_run / "checkpoint-3" / "config.json", "checkpoint-3/config.json")
    assert part.problems == []
    config = config_of(part)
    assert config["model_type"] == "bert"
    assert config["architectures"] == ["BertForSequenceClassification"]
    assert config["vocab_size"] == 100
    assert config["num_labels"] == NUM_LABELS
    assert config["hidden_size"] == 32
    assert config["num_hidden_layers"] == 1
    assert config["dtype"] == "float32"
    assert "finetune_mode" not in config  # config.json alone: discovery decides
    assert {e.source for e in part.config} == {"checkpoint-3/config.json"}


def _real_count(config: Any) -> int:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    auto = transformers.AutoModelForCausalLM if config.model_type != "bert" else (
        transformers.AutoModelForSequenceClassification)
    with torch.device("meta"):
        model = auto.from_config(config)
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("family", ["bert", "gpt2", "llama"])
def test_parameter_estimate_is_close_to_the_real_count(tmp_path: Path, family: str) -> None:
    transformers = pytest.importorskip("transformers")
    config = {
        "bert": lambda: transformers.BertConfig(),
        "gpt2": lambda: transformers.GPT2Config(),
        "llama": lambda: transformers.LlamaConfig(
            vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
            num_attention_heads=16, num_key_value_heads=4, tie_word_embeddings=False),
    }[family]()
    config.save_pretrained(tmp_path)
    part = hf_config.read(tmp_path / "config.json", "config.json")
    estimate = config_of(part)["n_params_estimate"]
    real = _real_count(config)
    assert abs(estimate - real) / real < 0.03, (estimate, real)


def test_torch_dtype_of_older_files_is_read(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gpt2", "torch_dtype": "float16", "n_embd": 64,
                                "n_layer": 2, "vocab_size": 50}))
    config = config_of(hf_config.read(path, "config.json"))
    assert config["dtype"] == "float16"
    assert config["hidden_size"] == 64 and config["num_hidden_layers"] == 2
    assert config["n_params_estimate"] > 0


def test_multimodal_config_uses_its_text_config(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llava", "architectures": ["Llava"],
                                "text_config": {"hidden_size": 64, "num_hidden_layers": 2,
                                                "vocab_size": 100, "model_type": "llama"}}))
    config = config_of(hf_config.read(path, "config.json"))
    assert config["model_type"] == "llava"
    assert config["hidden_size"] == 64 and config["vocab_size"] == 100


def test_lora_adapter_config() -> None:
    part = hf_config.read(FIXTURES / "lora_adapter_config.json", "adapter_config.json")
    assert part.problems == []
    config = config_of(part)
    assert config["finetune_mode"] == "lora"
    assert config["peft_type"] == "LORA"
    assert config["lora_r"] == 16 and config["lora_alpha"] == 32
    assert config["target_modules"] == ["q_proj", "v_proj"]
    assert config["lora_dropout"] == 0.05
    assert config["base_model_name_or_path"] == "meta-llama/Llama-3.2-1B"


def test_non_lora_adapter_names_its_type(tmp_path: Path) -> None:
    path = tmp_path / "adapter_config.json"
    path.write_bytes((FIXTURES / "ia3_adapter_config.json").read_bytes())
    config = config_of(hf_config.read(path, "adapter_config.json"))
    assert config["finetune_mode"] == "ia3"
    assert "lora_r" not in config


@pytest.mark.parametrize("name", ["truncated_config.json", "list_config.json"])
def test_invalid_files_are_problems(name: str) -> None:
    part = hf_config.read(FIXTURES / name, name)
    assert [p.kind for p in part.problems] == ["invalid_json"]
    assert part.config == []


def test_unreadable_file_is_a_problem(tmp_path: Path) -> None:
    part = hf_config.read(tmp_path / "config.json", "config.json")
    assert [p.kind for p in part.problems] == ["unreadable"]
