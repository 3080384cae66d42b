"""docker/ checked statically (no Docker engine runs where the tests run): the compose file parses
and every service can start and be health-checked, every setting the app reads is documented in
docker/env.example, the Dockerfile's targets and COPY sources exist, vLLM is pinned."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DOCKER = REPO / "docker"
#: Read only by the test settings (tests/settings.py), never in a deployment.
TEST_ONLY_SETTINGS = {"SWARMSCOPE_IGNORE_EMBEDDED_REDIS"}
#: Where the app's processes read their environment: settings and code of the Django apps, and the
#: LLM rollout backend (the GPU worker's settings).
SETTINGS_SOURCES = [REPO / "webapp", REPO / "trainer" / "rollout"]
ENV_READ = re.compile(
    r"""(?:environ|env)(?:\.get\(|\[)\s*["']([A-Z][A-Z0-9_]+)["']"""
    r"""|env_bool\(\s*["']([A-Z][A-Z0-9_]+)["']"""
)
APP_SERVICES = ("web", "worker", "gpu-worker")


@pytest.fixture(scope="module")
def compose():
    return yaml.safe_load((DOCKER / "compose.yaml").read_text())


@pytest.fixture(scope="module")
def dockerfile():
    return (DOCKER / "Dockerfile").read_text()


def instructions(dockerfile: str) -> list[tuple[str, str, str]]:
    """(stage name, instruction, arguments) per Dockerfile instruction, continuation lines joined."""
    stage, found = "", []
    for line in re.sub(r"\\\n", " ", dockerfile).splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        if word.upper() == "FROM":
            stage = rest.split(" AS ")[-1].strip() if " AS " in rest else rest.strip()
        found.append((stage, word.upper(), rest.strip()))
    return found


def stage_chain(dockerfile: str, target: str) -> list[str]:
    """`target` and the stages it is built FROM, nearest first."""
    parents = {}
    for stage, word, rest in instructions(dockerfile):
        if word == "FROM":
            parents[stage] = rest.split(" AS ")[0].strip()
    chain = [target]
    while parents.get(chain[-1]) in parents:
        chain.append(parents[chain[-1]])
    return chain


def test_every_service_has_an_image_a_command_and_a_health_check(compose, dockerfile):
    services = compose["services"]
    assert {"postgres", "redis", "web", "worker", "gpu-worker", "vllm"} <= set(services)
    for name, service in services.items():
        assert "image" in service or "build" in service, name
        assert service.get("healthcheck", {}).get("test"), f"{name} has no health check"
        if "build" in service:
            target = service["build"]["target"]
            chain = stage_chain(dockerfile, target)
            entrypoints = [
                rest for stage, word, rest in instructions(dockerfile) if word == "ENTRYPOINT" and stage in chain
            ]
            assert service.get("entrypoint") or entrypoints, f"{name}: no entrypoint in compose or in {chain}"
        else:  # the upstream server images run their server by default
            assert service["image"].split(":")[0] in ("postgres", "redis"), name
    for name in APP_SERVICES + ("postgres", "redis"):
        depends = services[name].get("depends_on", {})
        assert all(d["condition"] == "service_healthy" for d in depends.values()), name
    assert services["gpu-worker"]["profiles"] == services["vllm"]["profiles"] == ["gpu"]


def test_the_gpu_worker_talks_to_a_prefix_caching_vllm_beside_it(compose):
    vllm, gpu = compose["services"]["vllm"], compose["services"]["gpu-worker"]
    command = vllm["command"]
    assert vllm["entrypoint"] == ["vllm", "serve"] and "--enable-prefix-caching" in command
    port = next(c.split("=", 1)[1] for c in command if c.startswith("--port="))
    assert gpu["environment"]["SWARMSCOPE_OPENAI_BASE_URL"] == f"http://vllm:{port}/v1"
    assert gpu["environment"]["CELERY_QUEUES"] == "rollouts-gpu"
    assert gpu["depends_on"]["vllm"]["condition"] == "service_healthy"
    assert f":{port}/health" in " ".join(vllm["healthcheck"]["test"])
    assert vllm["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] == ["gpu"]
    assert "CELERY_QUEUES" not in compose["services"]["web"].get("environment", {})
    queues = compose["services"]["worker"]["environment"]["CELERY_QUEUES"].split(",")
    assert sorted(queues) == ["default", "rollouts-cpu", "training"]


def test_worker_health_checks_ping_the_node_their_entrypoint_names(compose):
    for name in ("worker", "gpu-worker"):
        service = compose["services"][name]
        node = service["environment"]["CELERY_NODE_NAME"]
        assert f"-d {node}@$$HOSTNAME" in service["healthcheck"]["test"][1], name


def test_every_setting_the_app_reads_is_documented_in_env_example():
    documented = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", (DOCKER / "env.example").read_text(), re.MULTILINE))
    read = {"DATABASE_URL"}  # read by dj_database_url.config()
    for source in SETTINGS_SOURCES:
        for path in source.rglob("*.py"):
            read |= {a or b for a, b in ENV_READ.findall(path.read_text())}
    assert "DJANGO_SECRET_KEY" in read and "SWARMSCOPE_OPENAI_BASE_URL" in read  # the scan finds them
    missing = sorted(read - TEST_ONLY_SETTINGS - documented)
    assert not missing, f"read by the app but not in docker/env.example: {missing}"
    for script in DOCKER.glob("entrypoint-*.sh"):
        used = set(re.findall(r"\$\{([A-Z][A-Z0-9_]+)", script.read_text())) - {"PYTHON"}
        assert used <= documented | {"HOSTNAME"}, f"{script.name}: {sorted(used - documented)} not in env.example"


def test_dockerfile_targets_copy_sources_and_entrypoints_exist(compose, dockerfile):
    stages = {stage for stage, word, _ in instructions(dockerfile) if word == "FROM"}
    for name in APP_SERVICES:
        assert compose["services"][name]["build"]["target"] in stages
        assert compose["services"][name]["build"]["dockerfile"] == "docker/Dockerfile"
        assert (DOCKER / compose["services"][name]["build"]["context"]).resolve() == REPO
    copies = 0
    for stage, word, rest in instructions(dockerfile):
        if word == "COPY" and "--from=" not in rest:
            *sources, _ = shlex.split(rest)
            for source in sources:
                assert (REPO / source).exists(), f"COPY {source} (stage {stage}): no such file in the repository"
                copies += 1
        if word == "ENTRYPOINT":
            script = REPO / yaml.safe_load(rest)[0].removeprefix("/app/")  # WORKDIR /app holds the repository
            assert script.is_file() and os.access(script, os.X_OK), f"{script} is not an executable file"
    assert copies >= 8
    assert re.search(r"^WORKDIR /app$", dockerfile, re.MULTILINE)
    ignored = (DOCKER / "Dockerfile.dockerignore").read_text().split()
    assert {".venv", "node_modules", "var"} <= set(ignored)


def test_a_new_commit_rebuilds_no_dependency_layer(dockerfile):
    """The code version (a build argument that changes with every commit) is declared after the
    pip installs: declared before them, it invalidated their cached layers on every commit."""
    app = [(word, rest) for stage, word, rest in instructions(dockerfile) if stage == "app"]
    version = next(i for i, (word, rest) in enumerate(app) if word == "ARG" and "SWARMSCOPE_CODE_VERSION" in rest)
    installs = [i for i, (word, rest) in enumerate(app) if word == "RUN" and "pip install" in rest]
    assert len(installs) >= 2 and max(installs) < version, (installs, version)


def test_requirements_gpu_pins_vllm():
    lines = [
        line.strip()
        for line in (REPO / "requirements-gpu.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert [line for line in lines if line.startswith("vllm")] and all(
        re.fullmatch(r"vllm==[\d.]+", line) for line in lines if line.startswith("vllm")
    )


def test_the_dockerfile_needs_no_docker_hub_frontend_and_writes_nothing_under_a_volume_after_it(dockerfile):
    assert not re.search(r"^#\s*syntax\s*=", dockerfile, re.MULTILINE | re.IGNORECASE)
    for target in ("web", "worker", "gpu-worker"):
        chain = set(stage_chain(dockerfile, target))
        steps = [(word, rest) for stage, word, rest in instructions(dockerfile) if stage in chain]
        volumes = [i for i, (word, _) in enumerate(steps) if word == "VOLUME"]
        assert volumes, target
        after = [rest for word, rest in steps[volumes[0] :] if word == "RUN"]
        assert not [r for r in after if "/data" in r], f"{target}: a RUN writes under the /data volume after VOLUME"
        made = " ".join(rest for word, rest in steps[: volumes[0]] if word == "RUN")
        assert "/data/staticfiles" in made and "/data/huggingface" in made, target


def test_cpu_images_take_torch_from_the_cpu_wheel_index_by_default(compose, dockerfile):
    cpu_index = "https://download.pytorch.org/whl/cpu"
    assert re.search(rf"^ARG PIP_EXTRA_INDEX_URL={re.escape(cpu_index)}$", dockerfile, re.MULTILINE)
    for name in APP_SERVICES:
        assert (
            compose["services"][name]["build"]["args"]["PIP_EXTRA_INDEX_URL"] == f"${{PIP_EXTRA_INDEX_URL-{cpu_index}}}"
        )
    assert f"# PIP_EXTRA_INDEX_URL={cpu_index}" in (DOCKER / "env.example").read_text()


def test_published_ports_are_loopback_only_by_default(compose):
    published = [p for service in compose["services"].values() for p in service.get("ports", [])]
    assert published and all(p.startswith("${SWARMSCOPE_PUBLISH_HOST:-127.0.0.1}:") for p in published), published


def test_the_web_health_check_uses_the_port_the_entrypoint_binds(compose, dockerfile):
    assert compose["services"]["web"]["healthcheck"]["test"] == ["CMD", "python", "docker/healthcheck_web.py"]
    assert 'CMD ["python", "/app/docker/healthcheck_web.py"]' in dockerfile
    assert "PORT" in (DOCKER / "healthcheck_web.py").read_text()
    assert '-p "${PORT:-8000}"' in (DOCKER / "entrypoint-web.sh").read_text()


def test_env_example_turns_on_no_backend_for_every_container_and_docker_env_is_ignored():
    settings_lines = dict(
        line.split("=", 1) for line in (DOCKER / "env.example").read_text().splitlines() if re.match(r"^[A-Z]", line)
    )
    assert "SWARMSCOPE_OPENAI_BASE_URL" not in settings_lines  # the gpu-worker service sets its own
    ignored = subprocess.run(["git", "check-ignore", "-q", "docker/.env"], cwd=REPO)
    assert ignored.returncode == 0, "docker/.env (the deployment's secrets) is not git-ignored"
