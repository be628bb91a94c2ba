"""docker/ as far as it can be checked without Docker (our machines cannot pull images): the compose file's
structure (every service built or pulled, health checks, mounts that exist, one JWT secret, the Spark master
the connection names), the Dockerfiles' instructions and what they copy, and the entrypoints' shell syntax and
pass-through. tests/system/test_docker_init.py runs the init script against SQLite and a moto S3 server."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DOCKER = REPO / "docker"
COMPOSE = yaml.safe_load((DOCKER / "compose.yaml").read_text())
SERVICES: dict[str, dict] = COMPOSE["services"]
AIRFLOW_COMMANDS = {"api-server", "scheduler", "dag-processor", "triggerer"}
ONE_SHOT = {"airflow-init"}
SCRIPTS = sorted(DOCKER.glob("*.sh"))
DOCKERFILES = sorted(DOCKER.glob("*.Dockerfile"))
INSTRUCTIONS = {
    "FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME", "USER", "WORKDIR",
    "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL",
}  # fmt: skip


def airflow_services() -> dict[str, dict]:
    return {name: s for name, s in SERVICES.items() if s.get("command", [None])[0] == "airflow"}


def test_the_stack_has_the_airflow_3_services_postgres_spark_and_s3():
    commands = {s["command"][1] for s in airflow_services().values()}
    assert commands == AIRFLOW_COMMANDS
    assert {"postgres", "s3", "spark-master", "airflow-init"} <= set(SERVICES)
    workers = [name for name, s in SERVICES.items() if s.get("command") == ["worker"]]
    assert len(workers) == 2
    for service in airflow_services().values():
        env = service["environment"]
        assert env["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
        assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql+psycopg2://airflow:")
        assert "@postgres:5432/airflow" in env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]


def test_every_service_is_built_or_pulled_and_every_long_running_one_has_a_health_check():
    for name, service in SERVICES.items():
        assert "image" in service, name
        if "build" in service:
            assert (DOCKER / service["build"]["context"] / service["build"]["dockerfile"]).is_file(), name
        if name not in ONE_SHOT:
            test = service.get("healthcheck", {}).get("test")
            assert test and test[0] in ("CMD", "CMD-SHELL"), name


def test_dependencies_name_services_and_wait_on_what_those_services_can_report():
    for name, service in SERVICES.items():
        for target, condition in service.get("depends_on", {}).items():
            assert target in SERVICES, f"{name} -> {target}"
            if condition["condition"] == "service_healthy":
                assert "healthcheck" in SERVICES[target], f"{name} -> {target}"
            if condition["condition"] == "service_completed_successfully":
                assert target in ONE_SHOT, f"{name} -> {target}"
    for name in airflow_services():
        assert SERVICES[name]["depends_on"]["airflow-init"] == {"condition": "service_completed_successfully"}


def test_the_mounts_are_the_repository_folders_or_declared_volumes():
    mounted = set()
    for name, service in SERVICES.items():
        for volume in service.get("volumes", []):
            source, target = volume.split(":")[:2]
            if source.startswith("."):
                assert (DOCKER / source).is_dir(), f"{name}: {source}"
                mounted.add((Path(source).name, target))
            else:
                assert source in COMPOSE["volumes"], f"{name}: {source}"
    for folder in ("dags", "jobs", "plugins", "config"):
        assert (folder, f"/opt/lakeloader/{folder}") in mounted


def test_one_jwt_secret_and_the_same_environment_names_in_every_airflow_service():
    environments = [service["environment"] for service in airflow_services().values()]
    environments.append(SERVICES["airflow-init"]["environment"])
    assert all(env == environments[0] for env in environments)
    secret = environments[0]["AIRFLOW__API_AUTH__JWT_SECRET"]
    assert secret.startswith("${AIRFLOW_JWT_SECRET:?")  # required, never a default baked into the file
    assert "airflow-api-server:8080/execution/" in environments[0]["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"]
    assert "airflow-api-server" in SERVICES


def test_the_spark_master_url_is_the_master_service_and_its_port():
    url = SERVICES["airflow-scheduler"]["environment"]["SPARK_MASTER_URL"]
    host, port = re.fullmatch(r"spark://([\w-]+):(\d+)", url).groups()
    assert SERVICES[host]["command"] == ["master"] and SERVICES[host]["hostname"] == host
    assert port == "7077"  # spark-entrypoint.sh's default master port
    for name, service in SERVICES.items():
        if service.get("command") == ["worker"]:
            assert service["environment"]["SPARK_MASTER_URL"] == url, name
    # the executors connect back to the drivers in the scheduler's container by its name
    assert SERVICES["airflow-scheduler"]["hostname"] == "airflow-scheduler"


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile: comments dropped, continuation lines joined."""
    text = re.sub(
        r"\\\n",
        " ",
        "\n".join(line for line in dockerfile.read_text().splitlines() if not line.lstrip().startswith("#")),
    )
    result = []
    for line in filter(str.strip, text.splitlines()):
        keyword, _, arguments = line.strip().partition(" ")
        result.append((keyword, arguments.strip()))
    return result


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_a_dockerfile_has_known_instructions_and_copies_what_the_repository_has(dockerfile: Path):
    steps = instructions(dockerfile)
    assert all(keyword in INSTRUCTIONS for keyword, _ in steps), steps
    assert steps[0][0] in ("ARG", "FROM")
    stages = [arguments for keyword, arguments in steps if keyword == "FROM"]
    # the jars are fetched, and the JVM functions built, in stages of their own
    assert len(stages) == 3 and stages[0].endswith(" AS jars") and stages[1].endswith(" AS jvm")
    for keyword, arguments in steps:
        if keyword == "COPY" and not arguments.startswith("--from="):
            *sources, _ = arguments.split()
            for source in sources:
                assert (REPO / source).exists(), f"{dockerfile.name}: COPY {source}"
    text = dockerfile.read_text()
    assert "bin/fetch-jars /opt/lakeloader/jars" in text and "LAKELOADER_JARS=/opt/lakeloader/jars" in text
    assert "bin/build-jvm python /opt/lakeloader/lakeloader-jvm.jar" in text
    assert "LAKELOADER_JVM_JAR=/opt/lakeloader/lakeloader-jvm.jar" in text
    assert "-r requirements.lock" in text
    entrypoint = next(arguments for keyword, arguments in steps if keyword == "ENTRYPOINT")
    script = re.search(r"/usr/local/bin/([\w-]+\.sh)", entrypoint).group(1)
    assert (DOCKER / script).is_file()


def test_both_images_start_from_the_python_version_of_the_project():
    bases = {re.search(r"ARG PYTHON_IMAGE=(\S+)", path.read_text()).group(1) for path in DOCKERFILES}
    assert bases == {f"python:{sys.version_info.major}.{sys.version_info.minor}-slim-bookworm"}


def test_the_s3_server_is_a_maintained_image_not_minio():
    assert "minio" not in SERVICES["s3"]["image"]
    assert "versity" in (DOCKER / "README.md").read_text().lower()


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_an_entrypoint_script_is_valid_bash(script: Path):
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True).returncode == 0
    assert script.stat().st_mode & 0o111  # executable


@pytest.mark.parametrize("script", ["spark-entrypoint.sh", "airflow-entrypoint.sh"])
def test_an_entrypoint_runs_any_other_command_as_given(script: str):
    env = {"PATH": "/usr/bin:/bin", "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": "sqlite:////tmp/none.db"}
    result = subprocess.run(
        [str(DOCKER / script), "echo", "passed", "through"], capture_output=True, text=True, env=env, timeout=30
    )
    assert (result.returncode, result.stdout) == (0, "passed through\n"), result.stderr


@pytest.mark.skipif(
    shutil.which("docker-compose") is None, reason="no docker-compose (Debian: apt-get install docker-compose)"
)
def test_a_compose_implementation_accepts_the_file_and_requires_the_jwt_secret():
    """docker-compose (1.29, Debian's) validates the file against its Compose schema without a Docker daemon."""
    command = ["docker-compose", "-f", str(DOCKER / "compose.yaml"), "config", "-q"]
    env = {key: value for key, value in os.environ.items() if key != "AIRFLOW_JWT_SECRET"}
    accepted = subprocess.run(command, env={**env, "AIRFLOW_JWT_SECRET": "s"}, capture_output=True, text=True)
    assert accepted.returncode == 0, accepted.stderr
    refused = subprocess.run(command, env=env, capture_output=True, text=True)
    assert refused.returncode != 0 and "set AIRFLOW_JWT_SECRET" in refused.stderr
