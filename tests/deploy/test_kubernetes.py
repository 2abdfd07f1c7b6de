"""deploy/kubernetes without a cluster: every overlay renders (``kubectl kustomize``), every object passes the
Kubernetes API schema offline (kubernetes-validate, strict), and the rendered objects give the platform what it
needs: probes on its routes, grace periods past its drain and its task lease, one beat, no secret value, the
image's command, and egress that never reaches the cloud metadata address."""

from __future__ import annotations

import copy
import ipaddress
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import load_command_class
from django.urls import resolve

from mcp_infra.conf import platform_settings
from mcp_infra.serving.probes import LIVENESS_PATH, READINESS_PATH
from mcp_infra.serving.servers import GRACEFUL_SHUTDOWN_SECONDS
from mcp_platform.telemetry.views import metrics_view

ROOT = Path(__file__).resolve().parents[2]
KUSTOMIZE_ROOT = ROOT / "deploy" / "kubernetes"
OVERLAYS = ("small", "production")
KUBECTL = shutil.which("kubectl")
# The API version the schemas are checked against (kubernetes-validate bundles it: pyproject.toml's dev extras).
KUBERNETES_VERSION = "1.32"
# Kinds of custom resources, which no bundled schema covers: checked by hand below.
CUSTOM_KINDS = {"ServiceMonitor"}
# The probe routes of issue 31 (docs/deployment.md): the process answers; the process may take traffic.
HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"
SECRET_NAME = "mcp-platform"
# What every container of the platform reads from that Secret, and names that must never carry a value here.
REQUIRED_SECRET_KEYS = {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "MCP_SECRET_KEYS", "MCP_OIDC_RSA_PRIVATE_KEY"}
SECRET_ENV_NAMES = REQUIRED_SECRET_KEYS | {"MCP_METRICS_TOKEN", "EMAIL_HOST_PASSWORD", "CELERY_BROKER_URL"}
CREDENTIALS_IN_TEXT = re.compile(r"://[^/\s:@]+:[^/\s@]+@|-----BEGIN [A-Z ]*PRIVATE KEY-----")
METADATA_ADDRESSES = ("169.254.169.254", "169.254.170.2", "fd00:ec2::254", "fe80::1")
WORKLOAD_KINDS = {"Deployment", "Job"}

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed: it renders the Kustomize overlays")


def render(overlay: str) -> list[dict[str, Any]]:
    assert KUBECTL is not None
    done = subprocess.run(
        [KUBECTL, "kustomize", str(KUSTOMIZE_ROOT / "overlays" / overlay)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, f"kubectl kustomize overlays/{overlay} failed:\n{done.stderr}"
    return [obj for obj in yaml.safe_load_all(done.stdout) if obj]


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[dict[str, Any]]]:
    return {overlay: render(overlay) for overlay in OVERLAYS}


@pytest.fixture(params=OVERLAYS)
def objects(request: pytest.FixtureRequest, rendered: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return rendered[request.param]


# ---- reading the rendered objects ------------------------------------------------------------------------------


def of_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [obj for obj in objects if obj["kind"] == kind]


def component(obj: dict[str, Any]) -> str:
    return str(obj["metadata"].get("labels", {}).get("app.kubernetes.io/component", ""))


def workload(objects: list[dict[str, Any]], name: str) -> dict[str, Any]:
    (found,) = [obj for obj in objects if obj["kind"] in WORKLOAD_KINDS and component(obj) == name]
    return found


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = obj["spec"]["template"]["spec"]
    return spec


def main_container(obj: dict[str, Any]) -> dict[str, Any]:
    (container,) = pod_spec(obj)["containers"]
    return dict(container)


def containers(obj: dict[str, Any]) -> Iterator[dict[str, Any]]:
    spec = pod_spec(obj)
    yield from spec.get("initContainers", [])
    yield from spec["containers"]


def workloads(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [obj for obj in objects if obj["kind"] in WORKLOAD_KINDS]


def config_map(objects: list[dict[str, Any]], name: str) -> dict[str, str]:
    (found,) = [obj for obj in of_kind(objects, "ConfigMap") if obj["metadata"]["name"] == name]
    return dict(found.get("data", {}))


def environment(objects: list[dict[str, Any]], container: dict[str, Any]) -> dict[str, str]:
    """The plain values a container sees: its ConfigMaps' data, then its own ``env`` values."""
    values: dict[str, str] = {}
    for source in container.get("envFrom", []):
        values.update(config_map(objects, source["configMapRef"]["name"]))
    for entry in container.get("env", []):
        if "value" in entry:
            values[entry["name"]] = entry["value"]
    return values


def secret_reference(container: dict[str, Any], name: str) -> dict[str, Any] | None:
    for entry in container.get("env", []):
        if entry["name"] == name:
            return entry.get("valueFrom", {}).get("secretKeyRef")
    return None


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector["matchLabels"].items())


def pod_labels(obj: dict[str, Any]) -> dict[str, str]:
    return dict(obj["spec"]["template"]["metadata"]["labels"])


def prestop_seconds(container: dict[str, Any]) -> float:
    pre_stop = container["lifecycle"]["preStop"]
    if "sleep" in pre_stop:
        return float(pre_stop["sleep"]["seconds"])
    command = pre_stop["exec"]["command"]
    assert command[0] == "sleep", f"preStop must sleep, not run {command}"
    return float(command[1])


def dockerfile_cmd() -> list[str]:
    (line,) = [line for line in (ROOT / "docker" / "Dockerfile").read_text().splitlines() if line.startswith("CMD ")]
    command: list[str] = json.loads(line.removeprefix("CMD "))
    return command


def dockerfile_user() -> int:
    (line,) = [line for line in (ROOT / "docker" / "Dockerfile").read_text().splitlines() if line.startswith("USER ")]
    return int(line.split()[1].split(":")[0])


def compose_command(service: str) -> list[str]:
    compose = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())
    return list(compose["services"][service]["command"])


def serve_options(argv: list[str]) -> dict[str, Any]:
    """``argv`` (``python manage.py serve …``) parsed by the serve command itself: an unknown option fails."""
    assert argv[:3] == ["python", "manage.py", "serve"], argv
    command = load_command_class("mcp_platform.gateway", "serve")
    return vars(command.create_parser("manage.py", "serve").parse_args(argv[3:]))


# ---- rendering and schemas -------------------------------------------------------------------------------------


def test_each_overlay_renders_and_every_object_passes_the_api_schema(objects: list[dict[str, Any]]) -> None:
    kubernetes_validate = pytest.importorskip(
        "kubernetes_validate", reason="kubernetes-validate (pyproject.toml's dev extras) is not installed"
    )
    refused, unchecked = [], set()
    for obj in objects:
        try:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.SchemaNotFoundError:
            unchecked.add(obj["kind"])
        except kubernetes_validate.ValidationError as error:
            where = ".".join(str(part) for part in error.path)
            refused.append(f"{obj['kind']}/{obj['metadata']['name']}: {where}: {error.message}")
    assert not refused, "\n".join(refused)
    assert unchecked <= CUSTOM_KINDS, f"no schema for {unchecked - CUSTOM_KINDS}: check them by hand"


def test_the_validator_refuses_a_misspelt_field(rendered: dict[str, list[dict[str, Any]]]) -> None:
    """Strict schemas: a field Kubernetes would drop in silence (a grace period under a wrong name) is an error."""
    kubernetes_validate = pytest.importorskip(
        "kubernetes_validate", reason="kubernetes-validate (pyproject.toml's dev extras) is not installed"
    )
    web = copy.deepcopy(workload(rendered["small"], "web"))
    pod_spec(web)["terminationGracePeriod"] = pod_spec(web).pop("terminationGracePeriodSeconds")
    with pytest.raises(kubernetes_validate.ValidationError, match="terminationGracePeriod"):
        kubernetes_validate.validate(web, KUBERNETES_VERSION, strict=True)


def test_the_service_monitor_scrapes_the_web_pods_with_the_metrics_token(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    """A custom resource (Prometheus Operator), so its shape is checked here: it selects the web Service, scrapes
    the platform's /metrics on the Service's port, and sends the token the web pods read from the same Secret."""
    objects = rendered["production"]
    (monitor,) = of_kind(objects, "ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert set(monitor["spec"]) <= {"selector", "endpoints", "namespaceSelector", "jobLabel"}
    (service,) = of_kind(objects, "Service")
    assert selects(monitor["spec"]["selector"], service["metadata"]["labels"])
    (endpoint,) = monitor["spec"]["endpoints"]
    assert set(endpoint) <= {"port", "path", "interval", "scrapeTimeout", "scheme", "authorization"}
    assert endpoint["port"] in {port["name"] for port in service["spec"]["ports"]}
    assert resolve(endpoint["path"]).func is metrics_view
    authorization = endpoint["authorization"]
    assert authorization["type"] == "Bearer"
    web = main_container(workload(objects, "web"))
    reference = secret_reference(web, "MCP_METRICS_TOKEN")
    assert reference is not None and not reference.get("optional", False)
    assert authorization["credentials"] == {"name": reference["name"], "key": reference["key"]}
    assert of_kind(rendered["small"], "ServiceMonitor") == [], "the small overlay needs no Prometheus Operator"


# ---- what the platform needs -----------------------------------------------------------------------------------


def test_the_probes_ask_for_the_health_and_readiness_routes(objects: list[dict[str, Any]]) -> None:
    """Started once ``/healthz`` answers, restarted when it stops answering, in the Service while ``/readyz``
    answers; on the container's named port."""
    web = main_container(workload(objects, "web"))
    probes = {name: web[name]["httpGet"] for name in ("startupProbe", "livenessProbe", "readinessProbe")}
    assert {name: probe["path"] for name, probe in probes.items()} == {
        "startupProbe": HEALTH_PATH,
        "livenessProbe": HEALTH_PATH,
        "readinessProbe": READY_PATH,
    }
    assert {probe["port"] for probe in probes.values()} <= {port["name"] for port in web["ports"]}


def test_the_probe_paths_are_the_platforms(objects: list[dict[str, Any]]) -> None:
    """The paths the probes ask are the ones the platform answers before Django (mcp_platform.telemetry.health)."""
    assert (HEALTH_PATH, READY_PATH) == (LIVENESS_PATH, READINESS_PATH)


@pytest.mark.anyio
async def test_the_liveness_probe_is_answered_for_the_pods_address() -> None:
    """The kubelet names the pod's address as the host, which no ALLOWED_HOSTS lists: the platform's ASGI application
    still answers ``/healthz`` (it touches no dependency, so this runs without a database)."""
    from mcp_platform.asgi import application

    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": HEALTH_PATH,
        "raw_path": HEALTH_PATH.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"10.244.3.17:8000"), (b"user-agent", b"kube-probe/1.32")],
        "client": ("10.244.0.1", 51234),
        "server": ("10.244.3.17", 8000),
    }
    await application(scope, receive, send)

    assert sent[0]["status"] == 200
    assert b"".join(message.get("body", b"") for message in sent[1:]).strip() == b"ok"


def test_a_stopping_web_pod_is_given_more_than_its_drain(objects: list[dict[str, Any]]) -> None:
    """The kubelet sends SIGKILL at the grace period's end: preStop's sleep, the drain of requests in flight
    (MCP_DRAIN_SECONDS, stated beside it) and the server's close of open streams must all fit before it."""
    web = workload(objects, "web")
    container = main_container(web)
    env = environment(objects, container)
    assert "MCP_DRAIN_SECONDS" in env, "the web pods must state their drain next to their grace period"
    needed = prestop_seconds(container) + float(env["MCP_DRAIN_SECONDS"]) + GRACEFUL_SHUTDOWN_SECONDS
    assert pod_spec(web)["terminationGracePeriodSeconds"] > needed


def test_a_stopping_worker_is_given_more_than_a_task_lease(objects: list[dict[str, Any]]) -> None:
    """A run still going at SIGKILL is started anew elsewhere once its lease lapses; a worker holds on for longer
    than a lease, so runs within one end where they are."""
    worker = workload(objects, "worker")
    assert pod_spec(worker)["terminationGracePeriodSeconds"] > platform_settings.TASK_LEASE_SECONDS


def test_exactly_one_beat_runs(objects: list[dict[str, Any]]) -> None:
    """Two beats would send every periodic task twice: one replica, replaced by stopping it first, never scaled
    and never kept from a drain; no worker runs a beat of its own."""
    running_beat = []
    for obj in workloads(objects):
        for container in containers(obj):
            command = container.get("command", [])
            if command[:2] == ["celery", "-A"] and ("beat" in command or {"--beat", "-B"} & set(command)):
                running_beat.append(obj)
    (beat,) = running_beat
    assert beat["kind"] == "Deployment" and component(beat) == "beat"
    assert main_container(beat)["command"][3] == "beat"
    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"] == {"type": "Recreate"}
    targets = [hpa["spec"]["scaleTargetRef"]["name"] for hpa in of_kind(objects, "HorizontalPodAutoscaler")]
    assert beat["metadata"]["name"] not in targets
    assert not [
        pdb for pdb in of_kind(objects, "PodDisruptionBudget") if selects(pdb["spec"]["selector"], pod_labels(beat))
    ]


def test_no_secret_value_is_in_any_manifest(objects: list[dict[str, Any]]) -> None:
    """Secrets come from the existing Secret ``mcp-platform``: no Secret object, no value under a secret's name, and
    no credential in any text; every container of the platform names every key it needs (a missing key stops the
    pod, rather than the platform falling back on an SQLite file and keys of its own)."""
    assert of_kind(objects, "Secret") == []
    for data in (obj.get("data", {}) for obj in of_kind(objects, "ConfigMap")):
        assert not SECRET_ENV_NAMES & set(data)
    for obj in workloads(objects):
        for container in containers(obj):
            where = f"{obj['metadata']['name']}/{container['name']}"
            for entry in container.get("env", []):
                if entry["name"] in SECRET_ENV_NAMES:
                    assert "value" not in entry, f"{where} sets {entry['name']} in the manifest"
                    assert entry["valueFrom"]["secretKeyRef"]["name"] == SECRET_NAME, where
            for key in REQUIRED_SECRET_KEYS:
                reference = secret_reference(container, key)
                assert reference == {"name": SECRET_NAME, "key": key}, f"{where} does not read {key} from the Secret"
    text = yaml.safe_dump_all(objects)
    assert not CREDENTIALS_IN_TEXT.search(text)


def test_the_web_pods_run_the_images_serve_command(objects: list[dict[str, Any]]) -> None:
    """One image for every role (docker/Dockerfile): its command is ``manage.py serve``, the web pods run it as
    docker/compose.yaml does (migrations are the Job's), on the port the image exposes, as the image's user."""
    image_cmd, web = dockerfile_cmd(), main_container(workload(objects, "web"))
    assert image_cmd[:3] == web["command"][:3] == ["python", "manage.py", "serve"]
    assert web["command"] == compose_command("web")
    options = serve_options(web["command"])
    assert options["host"] == "0.0.0.0" and options["no_worker"] and options["no_migrate"]
    assert options["port"] == serve_options(image_cmd)["port"] == web["ports"][0]["containerPort"]
    assert f"EXPOSE {options['port']}" in (ROOT / "docker" / "Dockerfile").read_text()
    worker = main_container(workload(objects, "worker"))
    assert worker["command"] == [arg for arg in compose_command("worker") if arg != "--beat"]
    assert main_container(workload(objects, "migrate"))["command"] == compose_command("migrate")
    every = [(obj, container) for obj in workloads(objects) for container in containers(obj)]
    assert len({container["image"] for _, container in every}) == 1
    assert {pod_spec(obj)["securityContext"]["runAsUser"] for obj, _ in every} == {dockerfile_user()}


def test_every_variable_a_value_refers_to_is_defined_before_it(objects: list[dict[str, Any]]) -> None:
    """The kubelet leaves ``$(NAME)`` as it is when NAME is not defined earlier (ALLOWED_HOSTS would then hold the
    text ``$(POD_IP)``): every reference names a ConfigMap key or an earlier entry."""
    for obj in workloads(objects):
        for container in containers(obj):
            defined = set()
            for source in container.get("envFrom", []):
                defined |= set(config_map(objects, source["configMapRef"]["name"]))
            for entry in container.get("env", []):
                for name in re.findall(r"(?<!\$)\$\(([A-Za-z_][A-Za-z0-9_]*)\)", entry.get("value", "")):
                    assert name in defined, (
                        f"{obj['metadata']['name']}/{container['name']}: {entry['name']} uses {name}"
                    )
                defined.add(entry["name"])


def test_the_root_file_system_is_read_only_and_var_and_metrics_are_per_pod(objects: list[dict[str, Any]]) -> None:
    """Everything the platform writes goes to emptyDir volumes of the pod: its var directory (the beat schedule,
    collected static files) and its metrics directory, which the pod's processes share and no other pod does."""
    for obj in workloads(objects):
        volumes = {volume["name"]: volume for volume in pod_spec(obj)["volumes"]}
        for container in containers(obj):
            where = f"{obj['metadata']['name']}/{container['name']}"
            assert container["securityContext"]["readOnlyRootFilesystem"] is True, where
            env = environment(objects, container)
            mounts = {mount["mountPath"]: volumes[mount["name"]] for mount in container["volumeMounts"]}
            for path in (env["MCP_VAR_DIR"], env["PROMETHEUS_MULTIPROC_DIR"], "/tmp"):
                assert "emptyDir" in mounts[path], f"{where}: {path} is not an emptyDir of the pod"
            assert mounts[env["MCP_VAR_DIR"]] is not mounts[env["PROMETHEUS_MULTIPROC_DIR"]]


def test_egress_never_reaches_the_metadata_address_nor_private_networks(objects: list[dict[str, Any]]) -> None:
    """The NetworkPolicy backs up the outbound door: public addresses on any port, PostgreSQL and Redis wherever
    they are, the cluster's DNS, and nothing link-local (the cloud metadata address hands out credentials)."""
    (policy,) = of_kind(objects, "NetworkPolicy")
    assert "Egress" in policy["spec"]["policyTypes"]
    for obj in workloads(objects):
        assert selects(policy["spec"]["podSelector"], pod_labels(obj)), obj["metadata"]["name"]
    rules = policy["spec"]["egress"]
    for address in METADATA_ADDRESSES:
        for port in (80, 443, 5432, 6379):
            assert not egress_allows(rules, address, port), f"{address}:{port} is reachable"
    for address in ("10.1.2.3", "172.16.5.4", "192.168.1.1", "100.64.0.1", "fc00::1"):
        assert not egress_allows(rules, address, 443), f"{address}:443 is reachable"
        assert egress_allows(rules, address, 5432) and egress_allows(rules, address, 6379)
    for address in ("1.1.1.1", "2606:4700:4700::1111"):
        assert egress_allows(rules, address, 443) and egress_allows(rules, address, 8443)
    dns = [
        rule
        for rule in rules
        if {(port["protocol"], port["port"]) for port in rule.get("ports", [])} >= {("UDP", 53), ("TCP", 53)}
    ]
    (dns_rule,) = dns
    (peer,) = dns_rule["to"]
    assert peer["podSelector"]["matchLabels"] == {"k8s-app": "kube-dns"}


def egress_allows(rules: list[dict[str, Any]], address: str, port: int) -> bool:
    """Whether a TCP connection to ``address``:``port`` matches an egress rule through an address block (peers
    chosen by pod labels are pods, never the metadata address or a public one)."""
    ip = ipaddress.ip_address(address)
    for rule in rules:
        ports = rule.get("ports")
        if ports and not any(p.get("protocol", "TCP") == "TCP" and p["port"] == port for p in ports):
            continue
        if "to" not in rule:
            return True
        for peer in rule["to"]:
            block = peer.get("ipBlock")
            if block is None or not within(ip, block["cidr"]):
                continue
            if not any(within(ip, excluded) for excluded in block.get("except", [])):
                return True
    return False


def within(ip: ipaddress.IPv4Address | ipaddress.IPv6Address, cidr: str) -> bool:
    network = ipaddress.ip_network(cidr)
    return ip.version == network.version and ip in network


def test_the_ingress_passes_streams_through_and_sticks_to_no_pod(objects: list[dict[str, Any]]) -> None:
    """ingress-nginx: no response buffering (SSE events reach the client as they are written), read and send
    timeouts far past the keep-alive interval, bodies past the platform's limit (so that its own 413 answers), no
    affinity on the Ingress or the Service; and the host it routes is the one the platform answers to."""
    (ingress,) = of_kind(objects, "Ingress")
    annotations = ingress["metadata"]["annotations"]
    nginx = "nginx.ingress.kubernetes.io/"
    assert annotations[nginx + "proxy-buffering"] == "off"
    for timeout in ("proxy-read-timeout", "proxy-send-timeout"):
        assert int(annotations[nginx + timeout]) >= 3600 > platform_settings.SSE_KEEPALIVE
    size = re.fullmatch(r"(\d+)([kmg]?)", annotations[nginx + "proxy-body-size"].lower())
    assert size is not None
    limit = int(size[1]) * {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[size[2]]
    assert limit > platform_settings.MAX_REQUEST_BYTES
    assert not [name for name in annotations if "affinity" in name or "sticky" in name]
    (service,) = of_kind(objects, "Service")
    assert service["spec"].get("sessionAffinity", "None") == "None"
    web = workload(objects, "web")
    assert selects({"matchLabels": service["spec"]["selector"]}, pod_labels(web))
    hosts = set(environment(objects, main_container(web))["MCP_ALLOWED_HOSTS"].split(","))
    for rule in ingress["spec"]["rules"]:
        assert rule["host"] in hosts
        for route in rule["http"]["paths"]:
            assert route["backend"]["service"]["name"] == service["metadata"]["name"]
            assert route["backend"]["service"]["port"]["name"] in {port["name"] for port in service["spec"]["ports"]}
    for tls in ingress["spec"].get("tls", []):
        assert set(tls["hosts"]) <= hosts


def test_web_pods_and_workers_leave_one_at_a_time_and_production_scales_web_on_cpu(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    for objects in rendered.values():
        budgets = of_kind(objects, "PodDisruptionBudget")
        for name in ("web", "worker"):
            (budget,) = [
                pdb for pdb in budgets if selects(pdb["spec"]["selector"], pod_labels(workload(objects, name)))
            ]
            assert budget["spec"]["maxUnavailable"] == 1
    assert of_kind(rendered["small"], "HorizontalPodAutoscaler") == []
    objects = rendered["production"]
    (hpa,) = of_kind(objects, "HorizontalPodAutoscaler")
    web = workload(objects, "web")
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": web["metadata"]["name"],
    }
    assert [metric["resource"]["name"] for metric in hpa["spec"]["metrics"]] == ["cpu"]
    assert main_container(web)["resources"]["requests"]["cpu"], "CPU utilization is measured against the request"
    assert "replicas" not in web["spec"], "the autoscaler owns the web Deployment's replica count"
    assert hpa["spec"]["minReplicas"] >= 2
