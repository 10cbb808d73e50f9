"""`stalwart serve`: an HTTP API for apps (`/api`) and a page for people (`/`), on one Temporal client.

`feed.py` turns a run into `(offset, event)` pairs, `app.py` serves them and every other route, `guards.py`
refuses what must not reach a route (a foreign origin, a missing token, an oversized body), `openapi.py` describes
the routes from their table. docs/serve.md is the user's guide.
"""
