"""Running the service under uvicorn, with the shutdown the service promises.

On the first SIGTERM (or SIGINT): new `/v1/*` requests get 503 and `/readyz` turns not-ready
while the listener stays open, accepted work drains for up to `server.shutdown_timeout` seconds
(what is left is counted as `dropped_shutdown`), then uvicorn stops, the sinks are flushed and
closed, the exporters flushed, and the process exits 0. A second signal stops at once.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import signal
import socket
import sys
from types import FrameType
from typing import TYPE_CHECKING, Any, cast

import uvicorn

from ..config.file import ServeConfig
from ..config.process_logging import configure_process_logging
from .app import build_service, create_app, shutdown_service
from .connections import ConnectionBounds, connection_budget, quiet_accept_errors
from .stack import choose_stack
from .state import ServiceState
from .traces_listener import TracesOnly

if TYPE_CHECKING:
    from .workers import WorkerLink

__all__ = [
    "YOUNG_COLLECTION_THRESHOLD",
    "ScorewatchServer",
    "bind_socket",
    "serve",
    "settle_collector",
]

logger = logging.getLogger("scorewatch.server")

# Requests still open once draining is over get this long to finish before uvicorn closes them.
_GRACEFUL_REQUESTS_S = 5.0

# How long a thread holding the GIL keeps it while another waits (Python's default: 5 ms). The
# HTTP thread gives the GIL up at every socket operation and then waits for the scoring thread
# to hand it back: with 5 ms per hand-over, answers took seconds at 100 requests/s on a loaded
# machine; with 1 ms, p99 stayed near 100 ms up to 200/s (benchmarks/bench_overload.py).
_SWITCH_INTERVAL_S = 0.001


class ScorewatchServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, service: ServiceState) -> None:
        super().__init__(config)
        self.service = service
        self._loop: asyncio.AbstractEventLoop | None = None
        self._drain_task: asyncio.Task[None] | None = None
        self.signalled = False
        self.worker: WorkerLink | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.worker is not None and self.started:
            self.worker.report("listening")

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        quiet_accept_errors(self._loop)
        await super().serve(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # Not uvicorn's handler: that one stops listening at once and re-raises the signal
        # after shutdown, so the process would die by SIGTERM instead of exiting 0.
        if self.signalled or self._loop is None:
            self.should_exit = True
            self.force_exit = self.signalled
            return
        self.signalled = True
        self.service.draining = True
        logger.info("received %s: draining", signal.Signals(sig).name)
        self._loop.call_soon_threadsafe(self._start_drain)

    def _start_drain(self) -> None:
        self._drain_task = asyncio.ensure_future(self._drain_then_exit())

    async def _drain_then_exit(self) -> None:
        try:
            await self.service.intake.shutdown(self.service.config.server.shutdown_timeout)
        finally:
            self.should_exit = True


YOUNG_COLLECTION_THRESHOLD = 7000
"""Net allocations of tracked objects between two young collections in serve (Python's
default: 700). A request and its run free what they make by reference counting (none of it is
cyclic garbage), but the count the collector keeps is net, so the objects of the requests and
runs under way set off a young collection every dozen scored requests or so, each walking all
that is young: ~11 µs of CPU per scored request at 500 a second (BENCHMARKS.md). At 7,000 the
same traffic sets off about one in 3,000 requests; cyclic garbage, where there is some, waits
at most ten times longer to be found."""


def settle_collector() -> None:
    """The collector as serve runs it once started: what start-up made (modules, config, the
    app, warmed judges) lives as long as the process, so it is moved out of the collector's
    generations, and no longer walked by every collection that the garbage of each request and
    run sets off (a quarter of a scored trace's CPU); and young collections come at
    `YOUNG_COLLECTION_THRESHOLD` (the older generations' thresholds are kept)."""
    gc.freeze()
    _young, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, middle, old)


def bind_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # The protocol named, not left 0: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on
    # sockets whose `proto` says TCP, and with it on, an answer written in two parts (head, then
    # body) waits for the client's delayed ACK, about 40 ms.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _configure_telemetry(config: ServeConfig) -> Any:
    settings = config.telemetry
    if not settings.prometheus and settings.otlp is False:
        return None
    from ... import telemetry

    return telemetry.configure(
        service_name=settings.service_name,
        prometheus="127.0.0.1:0" if settings.prometheus else None,
        prometheus_server=False,
        otlp=settings.otlp,
        capture_content=settings.capture_content,
    )


def warm_up_judges(service: ServiceState) -> None:
    """Warm litellm up before serving, when a scorer is judged (see `warm_up_litellm`)."""
    if any(configured.scorer.has_judge for configured in service.scorers.values()):
        from ...judge.litellm_judge import warm_up_in_background

        warm_up_in_background().result()  # the one warm-up of the process, waited for


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _bind_all(config: ServeConfig) -> list[socket.socket] | None:
    """The service's socket, then the `[traces] listen` one; None (and said) when one fails."""
    try:
        sockets = [bind_socket(config.server.host, config.server.port)]
    except OSError as error:
        print(
            f"scorewatch serve: cannot listen on {config.server.listen}: {error}", file=sys.stderr
        )
        return None
    traces = config.traces
    if traces is not None and traces.host is not None and traces.port is not None:
        try:
            sockets.append(bind_socket(traces.host, traces.port))
        except OSError as error:
            sockets[0].close()
            print(f"scorewatch serve: cannot listen on {traces.listen}: {error}", file=sys.stderr)
            return None
    return sockets


def _supervise(config: ServeConfig, count: int) -> int:
    from .workers import supervise

    sockets = _bind_all(config)
    if sockets is None:
        return 1
    try:
        urls = [_url(str(s.getsockname()[0]), int(s.getsockname()[1])) for s in sockets]
        return supervise(config, count, sockets, urls, choose_stack(config.server.http).name)
    finally:
        for each in sockets:
            each.close()


def serve(config: ServeConfig, *, worker: WorkerLink | None = None) -> int:
    """Run until SIGTERM/SIGINT; returns the process exit code. `ConfigError` propagates.

    With more than one worker (`[server] workers`, `--workers`) this process supervises
    worker processes (`workers.py`); `worker` is given in each of them."""
    configure_process_logging(config)
    stack = choose_stack(config.server.http)
    if worker is None:
        from .workers import worker_count

        count = worker_count(config)
        if count > 1:
            return _supervise(config, count)
    handle = _configure_telemetry(config)
    try:
        service = build_service(config)
    except BaseException:
        if handle is not None:
            handle.shutdown()
        raise
    if handle is not None:

        async def flush_telemetry() -> None:
            await asyncio.to_thread(handle.shutdown)

        service.on_close.append(flush_telemetry)
    found = worker.sockets() if worker is not None else _bind_all(config)
    if found is None:
        asyncio.run(shutdown_service(service))
        return 1
    sockets = found
    sock = sockets[0]
    host = sock.getsockname()[0]
    warm_up_judges(service)
    bound_port = int(sock.getsockname()[1])
    if worker is not None:
        from .peers import PeerClient, PeerEndpoint

        service.peers = PeerClient(worker.sibling_paths())
    service_app = create_app(service)
    # uvicorn calls the guard itself: `ServiceApp.__call__` would only hand each request over
    # to it, a coroutine more per request (what the guard leaves to the app, lifespan events
    # included, it hands to the same FastAPI application).
    app: Any = service_app.guard or service_app
    if len(sockets) > 1:
        app = TracesOnly(app, sockets[1])
    if worker is not None:
        app = PeerEndpoint(app, service, worker.peer_path(worker.index))
        sockets.append(worker.bind_peer_socket())
    # serve's connection bounds (their number, header time, refusals before parsing) are built
    # on uvicorn's h11 protocol; `http = "httptools"` chooses the faster parser without them,
    # for a service behind a proxy that bounds connections itself (docs/serve.md).
    http: Any = stack.http
    if stack.http == "h11":
        bounds = ConnectionBounds(
            service,
            max_connections=connection_budget(config.server.max_connections),
            header_timeout=config.server.header_timeout,
            score_port=bound_port,
        )
        http = cast(Any, bounds.protocol)  # a protocol factory, as uvicorn calls its class
    uv_config = uvicorn.Config(
        app,
        http=http,
        loop=stack.loop,
        log_level=config.server.log_level,
        access_log=config.server.access_log,
        timeout_graceful_shutdown=int(_GRACEFUL_REQUESTS_S),
        lifespan="on",
        server_header=False,
        proxy_headers=False,
    )
    server = ScorewatchServer(uv_config, service)
    server.worker = worker
    sys.setswitchinterval(_SWITCH_INTERVAL_S)  # the process is serve's own
    settle_collector()
    if worker is None:
        print(
            f"scorewatch serve: listening on {_url(host, bound_port)} ({stack.name})",
            file=sys.stderr,
            flush=True,
        )
    else:
        print(f"scorewatch serve: {worker.label} serving", file=sys.stderr, flush=True)
    if len(sockets) > 1 and worker is None:
        traces_url = _url(sockets[1].getsockname()[0], int(sockets[1].getsockname()[1]))
        print(f"scorewatch serve: traces on {traces_url}/v1/traces", file=sys.stderr, flush=True)
    try:
        server.run(sockets=sockets)
    finally:
        for each in sockets:
            each.close()
    stats = service.stats()
    who = "" if worker is None else f" {worker.label}"
    print(
        f"scorewatch serve:{who} stopped; accounting {json.dumps(stats, sort_keys=True)}",
        file=sys.stderr,
        flush=True,
    )
    if worker is not None:
        worker.report("stopped", stats=stats)
    return 0
