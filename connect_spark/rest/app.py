"""The REST API's routes: Kafka Connect's ``ConnectorsResource``, ``ConnectorPluginsResource`` and ``RootResource``.

Built with FastAPI (see the README's dependency table): every route is declared once with its status
code, and FastAPI renders the OpenAPI spec from the declarations (``GET /openapi.json``, ``/docs``).
Each route is thin: parse the request, call the :class:`~connect_spark.herder.Herder`, shape the answer
with :mod:`connect_spark.rest.entities`. Errors of the herder carry their HTTP status; every error
answer is Connect's ``{"error_code": ..., "message": ...}``.
"""

from __future__ import annotations

import logging
import secrets as _secrets
import base64
from typing import Any

from fastapi import Body, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from connect_spark import __version__, plugins
from connect_spark.api.errors import ConfigException, ConnectException
from connect_spark.herder.errors import BadRequestError, HerderError, NotFoundError
from connect_spark.herder.herder import Herder
from connect_spark.rest import entities
from connect_spark.rest.health import worker_health
from connect_spark.rest.initial_offsets import initial_offsets
from connect_spark.status.states import TargetState

__all__ = ["create_app"]

log = logging.getLogger(__name__)

_INITIAL_STATES = {"RUNNING": TargetState.STARTED, "PAUSED": TargetState.PAUSED, "STOPPED": TargetState.STOPPED}
_PLUGIN_TYPES = {"connector": "sink", "converter": "converter", "header_converter": "header_converter",
                 "transform": "transformation", "predicate": "predicate"}


def create_app(herder: Herder, basic_auth: tuple[str, str] | None = None,
               kafka_cluster_id: str | None = None) -> FastAPI:
    """The ASGI application serving ``herder``.

    Args:
        herder: the worker's herder.
        basic_auth: ``(user, password)`` every request must present (HTTP basic), or ``None``.
        kafka_cluster_id: shown by ``GET /``.
    """
    app = FastAPI(title="connect_spark REST API", version=__version__,
                  description="Kafka Connect's REST API for sink connectors running on Spark Structured Streaming.")

    # -- errors and authentication ---------------------------------------------------------------

    @app.exception_handler(HerderError)
    async def _herder_error(request: Request, error: HerderError) -> JSONResponse:
        return JSONResponse(entities.error_body(error.status_code, str(error)), status_code=error.status_code)

    @app.exception_handler(ConfigException)
    async def _config_error(request: Request, error: ConfigException) -> JSONResponse:
        return JSONResponse(entities.error_body(400, str(error)), status_code=400)

    @app.exception_handler(ConnectException)
    async def _connect_error(request: Request, error: ConnectException) -> JSONResponse:
        log.error("%s %s failed: %s", request.method, request.url.path, error)
        return JSONResponse(entities.error_body(500, str(error)), status_code=500)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        return JSONResponse(entities.error_body(error.status_code, f"HTTP {error.status_code} {error.detail}"),
                            status_code=error.status_code, headers=getattr(error, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def _bad_request(request: Request, error: RequestValidationError) -> JSONResponse:
        problems = "; ".join(f"{'.'.join(map(str, e.get('loc', ())))}: {e.get('msg')}" for e in error.errors())
        return JSONResponse(entities.error_body(400, f"Invalid request: {problems}"), status_code=400)

    if basic_auth is not None:
        expected = "Basic " + base64.b64encode(f"{basic_auth[0]}:{basic_auth[1]}".encode()).decode()

        @app.middleware("http")
        async def _authenticate(request: Request, call_next: Any) -> Response:
            given = request.headers.get("authorization", "")
            if not _secrets.compare_digest(given.encode(), expected.encode()):
                return JSONResponse(entities.error_body(401, "User cannot access the resource."), status_code=401,
                                    headers={"WWW-Authenticate": 'Basic realm="connect-spark"'})
            return await call_next(request)

    # -- root ----------------------------------------------------------------------------------------

    @app.get("/", summary="Worker version and Kafka cluster")
    def server_info() -> dict[str, Any]:
        info = {"version": __version__, "commit": "", "kafka_cluster_id": kafka_cluster_id}
        return {**info, **herder.worker_info()} if hasattr(herder, "worker_info") else info

    @app.get("/health", summary="Whether the worker is ready: 200 healthy, 503 starting or unhealthy (KIP-1017)")
    def health() -> JSONResponse:
        code, body = worker_health(herder)
        return JSONResponse(body, status_code=code)

    # -- connectors ----------------------------------------------------------------------------------

    def _info(name: str) -> dict[str, Any]:
        state = herder.connector_info(name)
        return entities.connector_info(name, state.properties, len(state.task_configs))

    def _status(name: str) -> dict[str, Any]:
        status = herder.connector_status(name)
        return entities.connector_state_info(name, status.connector, status.tasks)

    @app.get("/connectors", summary="Connector names, or with ?expand=status|info their status and info")
    def list_connectors(expand: list[str] = Query(default=[])) -> Any:
        names = herder.connectors()
        wanted = [e for e in expand if e in ("status", "info")]
        if not wanted:
            return names
        result: dict[str, Any] = {}
        for name in names:
            try:
                result[name] = {e: (_status(name) if e == "status" else _info(name)) for e in wanted}
            except NotFoundError:
                continue  # deleted meanwhile
        return result

    @app.post("/connectors", status_code=201, summary="Create a connector")
    def create_connector(request: dict[str, Any] = Body(...)) -> JSONResponse:
        name = request.get("name")
        config = request.get("config")
        if not isinstance(name, str) or not name.strip():
            raise BadRequestError("Connector name is required and must not be empty")
        if not isinstance(config, dict):
            raise BadRequestError("Connector config is required and must be an object")
        raw_state = request.get("initial_state")
        if raw_state is not None and str(raw_state).upper() not in _INITIAL_STATES:
            raise BadRequestError(f"Invalid initial_state {raw_state!r}: one of RUNNING, PAUSED, STOPPED")
        initial = _INITIAL_STATES[str(raw_state).upper()] if raw_state is not None else TargetState.STARTED
        offsets = initial_offsets(request.get("offsets"))
        if offsets:
            herder.create_connector(name.strip(), config, initial, initial_offsets=offsets)
        else:
            herder.create_connector(name.strip(), config, initial)
        return JSONResponse(_info(name.strip()), status_code=201, headers={"Location": f"/connectors/{name.strip()}"})

    @app.post("/connectors/{name}/dlq/replay", summary="Replay the connector's dead letters (dry_run: list them)")
    def dlq_replay(name: str, request: dict[str, Any] | None = Body(default=None)) -> dict[str, Any]:
        from connect_spark.dlq_replay.rest import replay_over_rest

        return replay_over_rest(herder, name, request)

    @app.get("/connectors/{name}", summary="Connector info")
    def get_connector(name: str) -> dict[str, Any]:
        return _info(name)

    @app.get("/connectors/{name}/config", summary="Connector configuration (secrets masked)")
    def get_config(name: str) -> dict[str, Any]:
        return entities.masked_config(herder.connector_info(name).properties)

    @app.put("/connectors/{name}/config", summary="Create or update a connector (201 created, 200 updated)")
    def put_config(name: str, config: dict[str, Any] = Body(...)) -> JSONResponse:
        created, _ = herder.put_connector_config(name, config)
        return JSONResponse(_info(name), status_code=201 if created else 200)

    @app.patch("/connectors/{name}/config", summary="Merge into a connector's configuration (null removes a key)")
    def patch_config(name: str, patch: dict[str, Any] = Body(...)) -> dict[str, Any]:
        herder.patch_connector_config(name, patch)
        return _info(name)

    @app.get("/connectors/{name}/status", summary="Connector and task states")
    def get_status(name: str) -> dict[str, Any]:
        return _status(name)

    @app.get("/connectors/{name}/tasks", summary="Task configurations (secrets masked)")
    def get_tasks(name: str) -> list[dict[str, Any]]:
        return entities.task_infos(name, herder.connector_info(name).task_configs)

    @app.get("/connectors/{name}/tasks/{task}/status", summary="One task's state")
    def get_task_status(name: str, task: int) -> dict[str, Any]:
        return entities.state_entry(herder.task_status(name, task))

    @app.put("/connectors/{name}/pause", status_code=202, summary="Pause: stop delivering records")
    def pause(name: str) -> Response:
        herder.pause_connector(name)
        return Response(status_code=202)

    @app.put("/connectors/{name}/resume", status_code=202, summary="Resume a PAUSED or STOPPED connector")
    def resume(name: str) -> Response:
        herder.resume_connector(name)
        return Response(status_code=202)

    @app.put("/connectors/{name}/stop", status_code=204, summary="Stop: shut the tasks down, keep the config")
    def stop(name: str) -> Response:
        herder.stop_connector(name)
        return Response(status_code=204)

    @app.post("/connectors/{name}/restart", summary="Restart the connector (and with includeTasks its tasks)")
    def restart(name: str, includeTasks: bool = False, onlyFailed: bool = False) -> Response:  # noqa: N803 (Connect's names)
        status = herder.restart_connector(name, includeTasks, onlyFailed)
        if status is None:
            return Response(status_code=204)
        return JSONResponse(entities.connector_state_info(name, status.connector, status.tasks), status_code=202)

    @app.post("/connectors/{name}/tasks/{task}/restart", status_code=204, summary="Restart one task")
    def restart_task(name: str, task: int) -> Response:
        herder.restart_task(name, task)
        return Response(status_code=204)

    @app.delete("/connectors/{name}", status_code=204, summary="Delete a connector")
    def delete(name: str) -> Response:
        herder.delete_connector(name)
        return Response(status_code=204)

    # -- offsets (KIP-875) ---------------------------------------------------------------------------

    @app.get("/connectors/{name}/offsets", summary="Committed offsets")
    def get_offsets(name: str) -> dict[str, Any]:
        return entities.connector_offsets(herder.connector_offsets(name))

    @app.patch("/connectors/{name}/offsets", summary="Alter committed offsets of a STOPPED connector")
    def patch_offsets(name: str, body: dict[str, Any] = Body(...)) -> dict[str, str]:
        herder.connector_info(name)
        try:
            offsets = entities.parse_connector_offsets(body)
        except ValueError as e:
            raise BadRequestError(str(e)) from None
        herder.alter_offsets(name, offsets)
        return entities.message("The offsets for this connector have been altered successfully")

    @app.delete("/connectors/{name}/offsets", summary="Reset committed offsets of a STOPPED connector")
    def delete_offsets(name: str) -> dict[str, str]:
        herder.reset_offsets(name)
        return entities.message("The offsets for this connector have been reset successfully")

    # -- metrics (a connect_spark extension: Kafka Connect exposes these over JMX) ----------------------

    @app.get("/connectors/{name}/metrics",
             summary="Extension: the connector's sink-task and task-error metrics (Kafka's names) and lag")
    def get_metrics(name: str) -> dict[str, Any]:
        snapshot = herder.connector_metrics(name)
        if snapshot is None:
            status = herder.connector_status(name)
            return {"connector": name, "state": getattr(status.connector.state, "value", None),
                    "tasks": {}, "lag": {"partitions": []}, "committed": []}
        return snapshot

    @app.get("/metrics", summary="Extension: every running connector's metrics in Prometheus text format")
    def prometheus_metrics() -> Response:
        from connect_spark.metrics.prometheus import CONTENT_TYPE, render

        snapshots = []
        for name in herder.connectors():
            try:
                snapshot = herder.connector_metrics(name)
            except NotFoundError:
                continue
            if snapshot is not None:
                snapshots.append(snapshot)
        group_text = herder.rebalance_metrics_text() if hasattr(herder, "rebalance_metrics_text") else ""
        return Response(render(snapshots) + group_text, media_type=CONTENT_TYPE)

    # -- plugins -------------------------------------------------------------------------------------

    @app.get("/connector-plugins", summary="Installed connectors (and with connectorsOnly=false every plugin)")
    def list_plugins(connectorsOnly: bool = True) -> list[dict[str, Any]]:  # noqa: N803 (Connect's name)
        kinds = ["connector"] if connectorsOnly else ["connector", "converter", "header_converter", "transform",
                                                        "predicate"]
        return [info for kind in kinds for info in _plugin_infos(kind)]

    @app.put("/connector-plugins/{plugin}/config/validate", summary="Validate a connector configuration")
    def validate(plugin: str, config: dict[str, Any] = Body(...)) -> dict[str, Any]:
        return _validate_config(herder, plugin, config)

    return app


def _class_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _plugin_infos(kind: str) -> list[dict[str, Any]]:
    """``PluginInfo`` entries (``class``, ``type``, ``version``) of every resolvable plugin of ``kind``."""
    seen: dict[str, dict[str, Any]] = {}
    for alias in plugins.known_aliases(kind):
        try:
            cls = plugins.resolve(kind, alias)
        except ConfigException:
            continue
        kafka_name = plugins.kafka_class_name(kind, alias)
        name = kafka_name if kafka_name != alias else _class_name(cls)
        if name in seen or any(info.get("_cls") is cls for info in seen.values()):
            continue
        info: dict[str, Any] = {"class": name, "type": _PLUGIN_TYPES[kind], "_cls": cls}
        if kind == "connector":
            try:
                info["version"] = str(cls().version())
            except Exception:
                pass
        seen[name] = info
    return [{k: v for k, v in info.items() if k != "_cls"} for _, info in sorted(seen.items())]


def _validate_config(herder: Herder, plugin: str, config: dict[str, Any]) -> dict[str, Any]:
    """``ConfigInfos`` for ``config`` checked against the connector keys every sink has and the plugin's own."""
    from connect_spark.config.connector import CONNECTOR_CONFIG_DEF
    from connect_spark.config.definition import ConfigValidationError
    from connect_spark.config.validation import validate_configs

    props = {str(k): (None if v is None else str(v)) for k, v in config.items() if v is not None}
    connector_class = props.get("connector.class")
    if not connector_class:
        raise BadRequestError("Connector config " + str(entities.masked_config(props)) + " contains no connector type")
    try:
        wanted = plugins.resolve("connector", plugin)
        given = plugins.resolve("connector", connector_class, key="connector.class")
    except ConfigException as e:
        raise BadRequestError(str(e)) from None
    if wanted is not given:
        raise BadRequestError(f"Included connector type {connector_class} does not match request type {plugin}")
    definitions = list(CONNECTOR_CONFIG_DEF.keys.values())
    try:
        plugin_def = given().config()
        definitions += list(plugin_def.keys.values())
    except Exception as e:
        log.warning("%s.config() failed: %r", connector_class, e)
    errors: dict[str, list[str]] = {}
    validated = dict(props)
    validated.setdefault("name", "validate")
    try:
        validate_configs(herder.worker.originals, [validated])
    except ConfigValidationError as e:
        for issue in e.issues:
            errors.setdefault(issue.key or "connector.class", []).append(issue.message)
    return entities.config_infos(plugins.kafka_class_name("connector", connector_class), definitions, props, errors)
