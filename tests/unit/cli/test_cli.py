"""The CLI's contract: every documented command listed (README.md, "The CLI"), one-line
errors, exit code 2."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aspen.cli.main import COMMAND_MODULES, build_parser, main

README = Path(__file__).resolve().parents[3] / "README.md"


def _readme_commands() -> set[str]:
    """The subcommands the README's CLI table documents (its rows start with `aspen NAME`)."""
    section = README.read_text(encoding="utf-8").split("## The CLI", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `aspen ([a-z-]+)", section, flags=re.MULTILINE))


DOCUMENTED_COMMANDS = _readme_commands()


def test_help_lists_every_documented_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "check" in DOCUMENTED_COMMANDS and "what-if" in DOCUMENTED_COMMANDS
    for command in DOCUMENTED_COMMANDS:
        assert command in out
    assert len(COMMAND_MODULES) == len(DOCUMENTED_COMMANDS)


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
        (["maintain", "--expire-every", "60"], "--expire-every: only with --follow"),
        (["maintain", "--housekeep-every", "0"], "--housekeep-every: only with --follow"),
        (["maintain", "--follow", "--expire-every", "-1"], "--expire-every must not be negative"),
        (["maintain", "--follow", "--housekeep-every", "-5"],
         "--housekeep-every must not be negative"),
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
