"""serve's HTTP surface: the FastAPI application (`app.py`) and its routes (`routes/`).

In front of the routes, `guard.py` checks tokens (`auth.py`), bounds bodies and refuses new work
while draining; `errors.py` gives every refusal one JSON shape; `models.py` the request and answer
bodies; `state.py` what a handler may touch; `score_pages.py` the pages of `GET /v1/scores`;
`docs_page.py` the local Swagger page; `traces_listener.py` the optional `[traces] listen` socket;
`connections.py` bounds the connections themselves (how many, how long a head may take) and
refuses overload from the raw bytes; `serve_process.py` runs it all under uvicorn with the
promised shutdown.
"""
