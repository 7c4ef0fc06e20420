"""Settings read from `WIKIQA_*` environment variables (and a `.env` file, if present)."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Everything a run may configure from the environment.

    Secrets are `SecretStr`: they print as `**********`, and only the provider that needs one
    unwraps it, so no key reaches results, traces or logs.
    """

    model_config = SettingsConfigDict(env_prefix="WIKIQA_", env_file=".env", extra="ignore")

    home: Path = Field(
        default=Path("~/.cache/wikiqa"),
        description="Cache directory for snapshot indexes.",
    )
    results: Path | None = Field(
        default=None, description="Where runs, the change log and executed notebooks go."
    )
    live_host: str = "en.wikipedia.org"
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
        validation_alias=AliasChoices("WIKIQA_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY"),
    )
    openai_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("WIKIQA_OPENAI_API_KEY", "OPENAI_API_KEY")
    )
    openai_base_url: str | None = Field(
        default=None, description="Base URL for openai:<model> specs without @<base_url>."
    )
    model_timeout: float = Field(default=60.0, gt=0, description="Seconds per model API call.")
    model_max_tokens: int = Field(
        default=1024, ge=16, le=32768, description="Output-token cap per model call."
    )
    api_token: SecretStr | None = Field(
        default=None, description="Bearer token `wikiqa serve` requires, when set."
    )

    def cache_dir(self) -> Path:
        """The cache directory, expanded and created."""
        path = self.home.expanduser()
        path.mkdir(parents=True, exist_ok=True)
        return path


def reveal(secret: SecretStr | None) -> str | None:
    """A secret's value, for the one call that sends it; never for logging."""
    return secret.get_secret_value() if secret is not None else None
