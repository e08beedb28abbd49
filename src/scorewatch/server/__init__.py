"""`scorewatch serve`: an HTTP service that scores traffic from agents written in any language.

```python
from scorewatch.server import load_config, build_service, create_app
app = create_app(build_service(load_config("scorewatch.toml")))   # any ASGI server
```
or run it with `scorewatch serve --config scorewatch.toml` (uvicorn, graceful SIGTERM).

The folder shows the service's parts, bottom first (`layers.toml` holds the order):

- `config/`: `scorewatch.toml` and what is built from it alone: settings, scorer entries, the
  stores, the dependency checks, process logging;
- `queue/`: the Redis work queue between serve and `scorewatch worker`: the stream, the worker,
  its process, and the reachability checks of the services it and the shared store need;
- `intake/`: how accepted traffic reaches the scoring engine: admission, the in-process intake,
  the Redis intake, the OTLP trace intake, the scoring loop and the loop's lag;
- `http/`: the HTTP surface: the application, its routes, the guard in front of them, auth,
  error answers, the docs page, and running it under uvicorn.
"""

from __future__ import annotations

from .config.file import ConfigError, ServeConfig, load_config
from .http.app import build_service, create_app, shutdown_service
from .http.state import ServiceState
from .intake.interface import Intake, ScoreItem

__all__ = [
    "ConfigError",
    "Intake",
    "ScoreItem",
    "ServeConfig",
    "ServiceState",
    "build_service",
    "create_app",
    "load_config",
    "shutdown_service",
]
