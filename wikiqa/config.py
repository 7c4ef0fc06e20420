"""Settings read from `WIKIQA_*` environment variables (and a `.env` file, if present)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Everything a run may configure from the environment.

    Only non-secret settings live here for now; API keys arrive with the model providers and are
    never echoed into results.
    """

    model_config = SettingsConfigDict(env_prefix="WIKIQA_", env_file=".env", extra="ignore")

    home: Path = Field(
        default=Path("~/.cache/wikiqa"),
        description="Cache directory for snapshot indexes.",
    )
    live_host: str = "en.wikipedia.org"
    allow_any_host: bool = Field(
        default=False,
        description="Allow a non-Wikimedia MediaWiki host for the live source.",
    )
    contact: str = Field(
        default="https://github.com/wiki-qa/wiki-qa",
        description="Contact URL or email put in the User-Agent, as Wikimedia's policy asks.",
    )

    def cache_dir(self) -> Path:
        """The cache directory, expanded and created."""
        path = self.home.expanduser()
        path.mkdir(parents=True, exist_ok=True)
        return path
