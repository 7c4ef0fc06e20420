"""The HTTP service (FastAPI): `POST /api/ask` answers exactly as `wikiqa ask --json` does.

`app` builds the application; `wikiqa serve` runs it with uvicorn.
"""

from wikiqa.api.app import AskOptions, AskRequest, Health, create_app

__all__ = ["AskOptions", "AskRequest", "Health", "create_app"]
