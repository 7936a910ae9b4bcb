"""The local web page (`orchestrator serve`): threads, their timelines and graphs, live.

`app.make_app(store_dir)` builds the ASGI application; `orchestrator/cli/serve.py` binds and
runs it with uvicorn. Starlette and uvicorn are imported only here, so nothing else pays for
them (see docs/web.md).
"""
