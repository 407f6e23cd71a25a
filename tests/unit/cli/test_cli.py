"""The CLI's contract: every design.md command listed, one-line errors, exit code 2."""

from __future__ import annotations

import pytest

from aspen.cli.main import COMMAND_MODULES, build_parser, main

DESIGN_COMMANDS = {
    "generate", "ingest", "maintain", "expire", "show", "explain", "what-if", "verify",
    "bench", "demo", "dashboard",
    "check",  # beyond design.md: the Great Expectations gates (docs/decisions.md)
}


def test_help_lists_every_design_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for command in DESIGN_COMMANDS:
        assert command in out
    assert len(COMMAND_MODULES) == len(DESIGN_COMMANDS)


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["maintain", "--partitions", "0"], "--partitions must be at least 1"),
        (["maintain", "--hosts", "2"], "--hosts applies to --runtime spark only"),
        (["maintain", "--runtime", "spark", "--hosts", "0"], "--hosts must be at least 1"),
        (["maintain", "--poll", "1"], "--poll: only with --follow"),
        (["maintain", "--max-batches", "1", "--for", "9"], "--max-batches, --for: only with "
                                                          "--follow"),
        (["maintain", "--stop", "--follow"], "--stop and --follow exclude each other"),
        (["maintain", "--follow", "--poll", "0"], "--poll must be positive"),
        (["show", "reach"], "unknown view 'reach'"),
        (["what-if", "--delete", "lnk:a:b"], "expected RELATION:KEY"),
        (["what-if", "--delete", "link:a"], "expected link:SRC:DST"),
        (["nonsense"], "invalid choice"),
        (["expire", "--now", "yesterday"], "ISO-8601"),
    ],
)
def test_bad_arguments_get_one_line(argv, fragment, capsys, tmp_path) -> None:
    try:
        code = main(["--lake", str(tmp_path / "lake"), *argv])
    except SystemExit as exit_info:
        code = exit_info.code
    assert code == 2
    err = capsys.readouterr().err
    assert fragment in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_show_on_an_empty_lake_says_what_to_do(capsys, tmp_path) -> None:
    code = main(["--lake", str(tmp_path / "empty"), "show", "reachable"])
    assert code == 2
    assert "does not exist" in capsys.readouterr().err


def test_lake_option_after_the_command() -> None:
    args = build_parser().parse_args(["show", "reachable", "--lake", "/tmp/l"])
    assert args.lake == "/tmp/l"
