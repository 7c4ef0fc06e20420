"""Settings read from `WIKIQA_*` environment variables (and a `.env` file, if present).

A `.env` is read from the working directory, which may be a folder someone else wrote (a cloned
repository, a download). Settings that choose where a key is sent (`TRUSTED_ONLY`: base URLs,
the default model spec, the host checks) are therefore taken from it only when the environment
says `WIKIQA_TRUST_DOTENV=1`; otherwise a `.env` in an untrusted folder could send your
`OPENAI_API_KEY` to its own host.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from wikiqa.project import repo_results
from wikiqa.secrets import remember

TRUST_DOTENV = "WIKIQA_TRUST_DOTENV"
# Fields that decide where a request (and the key riding on it) goes, or relax the check on it.
TRUSTED_ONLY = frozenset({"openai_base_url", "model", "allow_any_host", "live_host"})
_warned: set[str] = set()


def _trusting() -> bool:
    return os.environ.get(TRUST_DOTENV, "").strip().lower() in {"1", "true", "yes"}


def _untrusted_dotenv(source: PydanticBaseSettingsSource) -> Callable[[], dict[str, Any]]:
    """The `.env` source without `TRUSTED_ONLY` fields (unless trusted), saying once what it
    dropped, so a user who meant it learns the opt-in."""

    def read() -> dict[str, Any]:
        values = source()
        if _trusting():
            return values
        dropped = sorted(k for k in values if k.lower() in TRUSTED_ONLY)
        for name in dropped:
            if name not in _warned:
                _warned.add(name)
                print(
                    f"wikiqa: warning: ignoring WIKIQA_{name.upper()} from .env (it chooses "
                    f"where keys are sent); set {TRUST_DOTENV}=1 to use it",
                    file=sys.stderr,
                )
        return {k: v for k, v in values.items() if k.lower() not in TRUSTED_ONLY}

    read.__name__ = type(source).__name__
    return read


class Settings(BaseSettings):
    """Everything a run may configure from the environment.

    Secrets are `SecretStr`: they print as `**********`, and only the provider that needs one
    unwraps it, so no key reaches results, traces or logs.
    """

    model_config = SettingsConfigDict(env_prefix="WIKIQA_", env_file=".env", extra="ignore")

    home: Path = Field(
        default=Path("~/.cache/wikiqa"),
        description="Cache directory: snapshot indexes, the model response cache, assembled models.",
    )
    results: Path | None = Field(
        default=None, description="Where runs, the change log and executed notebooks go."
    )
    live_host: str = Field(
        default="en.wikipedia.org", description="MediaWiki host for `--source live`."
    )
    allow_any_host: bool = Field(
        default=False,
        description=(
            "Allow a non-Wikimedia MediaWiki host for the live source, and an openai base URL "
            "in link-local or cloud-metadata ranges."
        ),
    )
    contact: str | None = Field(
        default=None,
        description=(
            "Your contact (email or URL) put in the User-Agent, as Wikimedia's policy asks. "
            "Required for live runs: a shared placeholder would make every user look alike."
        ),
    )

    model: str = Field(default="extractive", description="Default model spec.")
    source: str = Field(default="snapshot", description="Default source spec.")
    anthropic_api_key: SecretStr | None = Field(
        default=None,
        description="Key for `anthropic:<model>` specs.",
        validation_alias=AliasChoices("WIKIQA_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY"),
    )
    openai_api_key: SecretStr | None = Field(
        default=None,
        description="Key for `openai:<model>` specs (local servers need none).",
        validation_alias=AliasChoices("WIKIQA_OPENAI_API_KEY", "OPENAI_API_KEY"),
    )
    openai_base_url: str | None = Field(
        default=None, description="Base URL for `openai:<model>` specs without `@<base_url>`."
    )
    model_timeout: float = Field(default=60.0, gt=0, description="Seconds per model API call.")
    model_max_tokens: int = Field(
        default=1024, ge=16, le=32768, description="Output-token cap per model call."
    )
    server_threads: int = Field(
        default=2, ge=1, le=256, description="llama.cpp threads per local-model server."
    )
    servers_per_node: int = Field(
        default=1,
        ge=1,
        le=64,
        description=(
            "Local-model servers each Ray node starts. A server answers one call at a time, so "
            "a node takes as many trials at once as it has servers: with C cores, servers x "
            "threads = C (4 servers of 2 threads on 8 cores)."
        ),
    )
    rate_limit: float = Field(
        default=10.0,
        ge=0,
        description=(
            "Requests a second one client may make to `wikiqa serve` (a client is its bearer "
            "token, or its address without one), in bursts of twice that; past it the answer is "
            "429 with Retry-After. 0 turns the limit off."
        ),
    )
    api_token: SecretStr | None = Field(
        default=None,
        description=(
            "Bearer token `wikiqa serve` requires, when set: visible ASCII, not empty "
            "(an empty or non-ASCII token refuses to start)."
        ),
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[Any, ...]:
        return init_settings, env_settings, _untrusted_dotenv(dotenv_settings), file_secret_settings

    def results_dir(self) -> Path:
        """`results` if set (tests and notebook checks write elsewhere), else the project's
        results/ (`wikiqa.project`; raises `ProjectNotFound` outside a project): here, at the
        bottom, so the registry (which resolves `cassette:RUN_ID`) and the harness find runs in
        the same place."""
        if self.results is not None:
            return self.results.expanduser()
        return repo_results()

    def cache_dir(self) -> Path:
        """The cache directory, expanded and created."""
        path = self.home.expanduser()
        path.mkdir(parents=True, exist_ok=True)
        return path


def remember_secrets(settings: Settings | None = None) -> None:
    """Have `wikiqa.secrets` know every secret the settings hold (a `.env` key included), for
    a writer that scrubs text no provider call revealed first (`wikiqa replies export`)."""
    found = settings if settings is not None else Settings()
    for name in type(found).model_fields:
        value = getattr(found, name)
        if isinstance(value, SecretStr):
            reveal(value)


def reveal(secret: SecretStr | None) -> str | None:
    """A secret's value, for the one call that sends it; never for logging. The value is
    remembered by `wikiqa.secrets`, so every writer scrubs it even when it came from a `.env`."""
    value = secret.get_secret_value() if secret is not None else None
    remember(value)
    return value
