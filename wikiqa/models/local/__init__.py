"""A real local model, offline: SmolLM2-135M through llama.cpp's OpenAI-compatible server.

- `serving`: find the GGUF, start and stop the server, build the `openai:` spec the agent uses;
- `chat`: the tool-call format the model is served with (pure, tested without llama.cpp);
- `server`: llama.cpp's server with that format registered (`python -m wikiqa.models.local.server`;
  needs the `local` extra, so nothing imports it).
"""

from wikiqa.models.local.serving import (
    ALIAS,
    PORT,
    LocalModelError,
    alias,
    default_gguf,
    free_port,
    server_command,
    spec,
    start,
)

__all__ = [
    "ALIAS",
    "PORT",
    "LocalModelError",
    "alias",
    "default_gguf",
    "free_port",
    "server_command",
    "spec",
    "start",
]
