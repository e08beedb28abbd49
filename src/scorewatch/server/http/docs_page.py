"""The API docs page (`/docs`), with Swagger UI served by the service itself.

FastAPI's default page loads Swagger UI's script, stylesheet and icon from a CDN, so it is blank
on a network without internet access. The files come from the `swagger-ui-bundle-v2` package
(Swagger UI's own distribution) and are served under `/docs/assets/`; the page references
nothing outside the service. Only the three files the page uses are served.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, HTTPException, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

__all__ = ["ASSETS_PATH", "install_docs_page"]

ASSETS_PATH = "/docs/assets"
_ASSETS = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "favicon-32x32.png": "image/png",
}


def _assets_dir() -> Path:
    import swagger_ui_bundle

    return Path(swagger_ui_bundle.swagger_ui_path)


def install_docs_page(app: FastAPI, *, openapi_url: str, title: str) -> None:
    """Serve `/docs` (Swagger UI) and its assets; `app` must have been built with
    `docs_url=None` so that FastAPI's CDN page is not registered too."""
    folder = _assets_dir()

    async def page(request: Request) -> HTMLResponse:
        prefix = request.scope.get("root_path", "").rstrip("/")
        return get_swagger_ui_html(
            openapi_url=prefix + openapi_url,
            title=title,
            swagger_js_url=f"{prefix}{ASSETS_PATH}/swagger-ui-bundle.js",
            swagger_css_url=f"{prefix}{ASSETS_PATH}/swagger-ui.css",
            swagger_favicon_url=f"{prefix}{ASSETS_PATH}/favicon-32x32.png",
            # The default validator badge is an image from validator.swagger.io.
            swagger_ui_parameters={"validatorUrl": None},
        )

    async def asset(name: str) -> FileResponse:
        media_type = _ASSETS.get(name)
        if media_type is None:
            raise HTTPException(status_code=404)
        return FileResponse(folder / name, media_type=media_type)

    app.add_api_route("/docs", page, methods=["GET"], include_in_schema=False)
    app.add_api_route(ASSETS_PATH + "/{name}", asset, methods=["GET"], include_in_schema=False)
