"""The HTTP service: `POST /api/ask` returns exactly what `wikiqa ask --json` prints.

The model and source are fixed when the server starts (`wikiqa serve --model --source`); a
request may only tighten the tool-call budget. Letting clients pick sources would let them make
the server read arbitrary snapshot files or reach live hosts.
"""

from __future__ import annotations

import secrets
from importlib.metadata import version
from typing import Annotated

from fastapi import Depends, FastAPI, Header, HTTPException
from pydantic import BaseModel, ConfigDict, Field, field_validator

from wikiqa.agent import DEFAULT_BUDGET, Agent, AgentResult
from wikiqa.config import Settings, reveal
from wikiqa.models import Model
from wikiqa.registry import open_model, open_source
from wikiqa.sources import WikiSource


class AskOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    budget: int = Field(DEFAULT_BUDGET, ge=1, le=32, description="Tool-call budget for this run.")


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=1000, description="1 to 1000 characters.")
    options: AskOptions = Field(default_factory=AskOptions)

    @field_validator("question")
    @classmethod
    def _text(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("question must contain text, not only whitespace")
        if any(ord(ch) < 32 and ch not in "\t\n\r" for ch in value):
            raise ValueError("question must not contain control characters")
        return value


class Health(BaseModel):
    status: str
    version: str
    model: str
    source: str


def create_app(
    model: Model | None = None, source: WikiSource | None = None, settings: Settings | None = None
) -> FastAPI:
    settings = settings or Settings()
    model = model or open_model(settings.model)
    source = source or open_source(settings.source)
    token = reveal(settings.api_token)
    app = FastAPI(title="wikiqa", version=version("wikiqa"), summary="Wikipedia-grounded QA")

    def require_token(authorization: Annotated[str | None, Header()] = None) -> None:
        if token is None:
            return
        scheme, _, given = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not secrets.compare_digest(given.encode(), token.encode()):
            raise HTTPException(
                status_code=401,
                detail="missing or invalid bearer token",
                headers={"WWW-Authenticate": "Bearer"},
            )

    @app.get("/healthz")
    def healthz() -> Health:
        return Health(status="ok", version=version("wikiqa"), model=model.spec, source=source.name)

    @app.post("/api/ask", dependencies=[Depends(require_token)])
    def ask(request: AskRequest) -> AgentResult:
        # A sync endpoint: FastAPI runs it in a worker thread, and the agent does blocking I/O.
        return Agent(model, source, budget=request.options.budget).ask(request.question)

    return app
