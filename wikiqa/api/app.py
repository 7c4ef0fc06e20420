"""The HTTP service: `POST /api/ask` returns exactly what `wikiqa ask --json` prints.

The model, source and agent levers are fixed when the server starts (`wikiqa serve --model
--source`, and the lever flags); a request may only tighten the tool-call budget. Letting clients
pick sources would let them make the server read arbitrary snapshot files or reach live hosts.
"""

from __future__ import annotations

from importlib.metadata import version

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator

from wikiqa.agent import DEFAULT_BUDGET, Agent, AgentConfig, AgentResult
from wikiqa.api.shield import Shield, authorized, check_token
from wikiqa.config import Settings, reveal
from wikiqa.models import Model
from wikiqa.registry import open_model, open_source
from wikiqa.secrets import scrub, scrub_data
from wikiqa.sources import WikiSource


class AskOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Strict: JSON "8" or true (which pydantic would turn into 1) is a 422, not a budget.
    budget: StrictInt = Field(
        DEFAULT_BUDGET, ge=1, le=32, description="Tool-call budget for this run."
    )


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
        if any(0xD800 <= ord(ch) <= 0xDFFF for ch in value):
            raise ValueError("question must be valid Unicode (a lone surrogate is not)")
        return value


class Liveness(BaseModel):
    status: str


class Health(Liveness):
    version: str
    model: str
    source: str


ECHO = 64  # characters of a bad input a 422 quotes back: enough to recognise, never the input


async def _invalid(request: Request, exc: Exception) -> JSONResponse:
    """422 without echoing the input: FastAPI's own handler quotes all of it (1 MB in, 1 MB out)
    and cannot encode NaN or a lone surrogate, which would turn bad input into a 500."""
    assert isinstance(exc, RequestValidationError)
    detail = [
        {"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", ""))[:200],
         "type": str(e.get("type", "")), "input": repr(e.get("input"))[:ECHO]}
        for e in exc.errors()[:10]
    ]  # fmt: skip
    return JSONResponse(status_code=422, content={"detail": detail})


def create_app(
    model: Model | None = None,
    source: WikiSource | None = None,
    settings: Settings | None = None,
    agent: AgentConfig | None = None,
    *,
    max_in_flight: int = 64,
    body_timeout: float = 10.0,
) -> FastAPI:
    settings = settings or Settings()
    token = check_token(reveal(settings.api_token))  # before anything starts: a bad one is fatal
    model = model or open_model(settings.model)
    source = source or open_source(settings.source)
    served = agent if agent is not None else AgentConfig()
    app = FastAPI(title="wikiqa", version=version("wikiqa"), summary="Wikipedia-grounded QA")
    app.add_exception_handler(RequestValidationError, _invalid)
    # Authentication, the rate limit, the body cap and body timeout run before FastAPI parses
    # anything (shield.py).
    app.add_middleware(
        Shield, token=token, max_in_flight=max_in_flight, body_timeout=body_timeout,
        rate=settings.rate_limit,
    )  # fmt: skip

    @app.get("/healthz")
    async def healthz(request: Request) -> Liveness | Health:  # async: no worker thread for it
        """Liveness for anyone; the model and source only for holders of the token."""
        if not authorized({k.lower(): v for k, v in request.headers.raw}, token):
            return Liveness(status="ok")
        return Health(
            status="ok", version=version("wikiqa"), model=scrub(model.spec), source=source.name
        )

    @app.post("/api/ask")
    def ask(request: AskRequest) -> AgentResult:
        # A sync endpoint: FastAPI runs it in a worker thread, and the agent does blocking I/O.
        # A request may only tighten the server's budget (and what it reads first with it).
        budget = min(request.options.budget, served.budget)
        config = served.model_copy(
            update={"budget": budget, "read_first": min(served.read_first, budget - 1)}
        )
        result = Agent(model, source, config).ask(request.question)
        # The response is a writer like any other: error text from the model API may quote a key.
        return AgentResult.model_validate(scrub_data(result.model_dump(mode="json")))

    return app
