"""`scorewatch serve`: an HTTP service that scores traffic from agents written in any language.

```python
from scorewatch.server import load_config, build_service, create_app
app = create_app(build_service(load_config("scorewatch.toml")))   # any ASGI server
```
or run it with `scorewatch serve --config scorewatch.toml` (uvicorn, graceful SIGTERM).
"""

from __future__ import annotations

from .app import build_service, create_app, shutdown_service
from .config import ConfigError, ServeConfig, load_config
from .intake import Intake, ScoreItem
from .state import ServiceState

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
