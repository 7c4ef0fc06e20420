"""The package layout stays what its map says (docs/layout.md): no import cycles, small modules,
and a public surface (`__all__`) on every package that resolves.

`lint-imports` (run by `make lint`) checks the stage layering from pyproject's contracts; this
file checks what those contracts do not: cycles between any two modules, a package's `__init__`
included, lazy imports inside functions included (only `if TYPE_CHECKING:` imports, which never
run, are left out).
"""

from __future__ import annotations

import graphlib
import importlib
import pkgutil
import subprocess
from collections.abc import Mapping, Set
from pathlib import Path

import grimp
import pytest

import wikiqa

PACKAGE = Path(wikiqa.__file__).parent
MAX_LINES = 400


def module_imports() -> dict[str, set[str]]:
    """Each wikiqa module -> the wikiqa modules it imports anywhere (functions included)."""
    graph = grimp.build_graph("wikiqa", exclude_type_checking_imports=True, cache_dir=None)
    return {
        module: {m for m in graph.find_modules_directly_imported_by(module) if m != module}
        for module in graph.modules
    }


def find_cycle(imports: Mapping[str, Set[str]]) -> list[str] | None:
    """One import cycle as a list of modules (first = last), or None when there is none."""
    try:
        tuple(graphlib.TopologicalSorter(imports).static_order())
    except graphlib.CycleError as err:
        cycle: list[str] = err.args[1]
        return cycle
    return None


def test_the_cycle_finder_finds_cycles() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    cycle = find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    assert cycle is not None and set(cycle) == {"a", "b", "c"} and cycle[0] == cycle[-1]


def test_no_module_imports_itself_back() -> None:
    imports = module_imports()
    assert len(imports) > 60  # the graph really covers the package
    assert "wikiqa.models.anthropic_model" in imports["wikiqa.registry"]  # lazy imports count
    assert find_cycle(imports) is None


def test_the_registry_sits_above_what_it_builds() -> None:
    imports = module_imports()
    builders = {m for m, deps in imports.items() if "wikiqa.registry" in deps}
    assert not {m for m in builders if m.startswith(("wikiqa.models", "wikiqa.sources"))}


def test_no_module_is_over_400_lines() -> None:
    lengths = {
        str(p.relative_to(PACKAGE.parent)): len(p.read_text(encoding="utf-8").splitlines())
        for p in PACKAGE.rglob("*.py")
    }
    assert len(lengths) > 60
    assert {p: n for p, n in lengths.items() if n > MAX_LINES} == {}


PACKAGES = sorted(
    name for _, name, is_pkg in pkgutil.walk_packages([str(PACKAGE)], "wikiqa.") if is_pkg
)


def test_every_folder_is_a_package() -> None:
    folders = {p.parent for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    assert {f for f in folders if not (f / "__init__.py").exists()} == set()


@pytest.mark.parametrize("name", ["wikiqa", *(p for p in PACKAGES if p != "wikiqa.data")])
def test_each_package_declares_its_surface(name: str) -> None:
    package = importlib.import_module(name)
    assert package.__doc__, f"{name} says what it is for"
    surface = getattr(package, "__all__", None)
    assert surface, f"{name} lists its public names in __all__"
    assert len(surface) == len(set(surface))
    for public in surface:
        assert getattr(package, public) is not None, f"{name}.{public}"


def test_no_committed_file_is_a_symlink() -> None:
    """A committed symlink points wherever its target is on the machine that checks it out (a
    venv elsewhere, `/proc/self/environ`); every reader and the docs build would follow it."""
    root = PACKAGE.parent
    if not (root / ".git").exists():
        pytest.skip("not a git checkout")
    listing = subprocess.run(
        ["git", "ls-files", "-s", "-z"], cwd=root, capture_output=True, check=True
    ).stdout.decode("utf-8", "replace")
    entries = [e for e in listing.split("\0") if e]
    assert len(entries) > 100  # the listing really covers the checkout
    links = [e.split("\t", 1)[1] for e in entries if e.startswith("120000 ")]
    assert links == []
