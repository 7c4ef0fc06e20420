"""An argument a command does not take is reported with that command's usage."""

from __future__ import annotations

import pytest

from wikiqa.cli import main


@pytest.mark.parametrize(
    ("argv", "usage", "unknown"),
    [
        (["ask", "Who developed FLOW-MATIC?", "--modle", "x"], "usage: wikiqa ask ", "--modle x"),
        (["experiment", "run", "x.ipynb", "--recrod"], "usage: wikiqa experiment run ", "--recrod"),
        (["eval", "--trails", "1"], "usage: wikiqa eval ", "--trails 1"),
    ],
)
def test_a_misspelt_option_prints_its_commands_usage(
    argv: list[str], usage: str, unknown: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(usage), err[:200]
    assert f"unrecognized arguments: {unknown}" in err
    assert "COMMAND ..." not in err  # not the top-level usage
