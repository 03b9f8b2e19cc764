"""controller.cli.coercion gives each input what typer's own (pydantic) coercion gives it:
the same value of the same type, or the same error and exit code. A table of inputs for
every plain type tide's commands use, each run through a small Typer app twice: with the
quick coercion and with typer's own. And the typer internals it replaces are still there
(a newer typer fails here, loudly, rather than in a slower start-up)."""

from __future__ import annotations

from enum import Enum, StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
import typer
from typer import _coercion, core
from typer.testing import CliRunner

from controller.cli import coercion


class Form(StrEnum):
    table = "table"
    jsonl = "jsonl"


class Level(Enum):
    low = 1
    high = 2


def _show(value: Any) -> None:
    shown = [type(v).__name__ + ":" + repr(v) for v in value] if isinstance(value, list) else None
    typer.echo(f"{type(value).__name__}:{value!r}" if shown is None else f"list:{shown}")


def _app() -> typer.Typer:
    """One command per parameter type; each prints its value's type and repr."""
    app = typer.Typer(rich_markup_mode=None, pretty_exceptions_enable=False)

    @app.command("str")
    def _s(v: Annotated[str, typer.Argument()]) -> None:
        _show(v)

    @app.command("int")
    def _i(v: Annotated[int, typer.Argument()]) -> None:
        _show(v)

    @app.command("min1")
    def _m(v: Annotated[int, typer.Option(min=1)] = 4) -> None:
        _show(v)

    @app.command("range")
    def _r(v: Annotated[float, typer.Option(min=0.0, max=1.0)] = 0.5) -> None:
        _show(v)

    @app.command("float")
    def _f(v: Annotated[float, typer.Argument()]) -> None:
        _show(v)

    @app.command("bool")
    def _b(v: Annotated[bool, typer.Argument()]) -> None:
        _show(v)

    @app.command("flag")
    def _fl(
        v: Annotated[bool, typer.Option("--v/--no-v", envvar="TIDE_TEST_FLAG")] = False,
    ) -> None:
        _show(v)

    @app.command("opt")
    def _o(v: int | None = None) -> None:
        _show(v)

    @app.command("path")
    def _p(v: Annotated[Path, typer.Argument()]) -> None:
        _show(v)

    @app.command("exists")
    def _e(v: Annotated[Path, typer.Argument(exists=True, dir_okay=False)]) -> None:
        _show(v)

    @app.command("dir")
    def _d(v: Annotated[Path, typer.Option(file_okay=False)] = Path(".")) -> None:
        _show(v)

    @app.command("enum")
    def _n(v: Annotated[Form | None, typer.Option()] = None) -> None:
        _show(v)

    @app.command("anycase")
    def _a(v: Annotated[Form, typer.Option(case_sensitive=False)] = Form.table) -> None:
        _show(v)

    @app.command("level")
    def _lv(v: Annotated[Level, typer.Option()] = Level.low) -> None:
        _show(v)

    @app.command("literal")
    def _lt(v: Annotated[Literal["a", "b"], typer.Option()] = "a") -> None:
        _show(v)

    @app.command("strs")
    def _ss(v: Annotated[list[str] | None, typer.Option()] = None) -> None:
        _show(v)

    @app.command("paths")
    def _ps(v: Annotated[list[Path] | None, typer.Option()] = None) -> None:
        _show(v)

    @app.command("ints")
    def _is(v: Annotated[list[int] | None, typer.Option()] = None) -> None:
        _show(v)

    return app


def _opt(name: str, *values: str) -> list[str]:
    return [name, *(a for v in values for a in ("--v", v))]


#: (command line, environment); every type's ordinary inputs, edge cases and mistakes
CASES: list[tuple[list[str], dict[str, str]]] = [
    *(([*["str"], v], {}) for v in ["x", "", " a b ", "é", "-"]),
    *(
        (["int", v], {})
        for v in ["0", "7", "+3", "007", "1_000", " 5", "5 ", "1.0", "1.5", "1e3", "0x10"]
    ),
    *((["int", "--", v], {}) for v in ["-4", "１", "", "abc", "9" * 19, "9" * 30, "-" + "9" * 18]),
    ([*["min1"]], {}),
    *((_opt("min1", v), {}) for v in ["1", "5", "0", "-1", "x"]),
    *((_opt("range", v), {}) for v in ["0", "1", "0.25", "1.5", "-0.1", "nan", "inf"]),
    *((["float", v], {}) for v in ["1", "1.5", ".5", "5.", "1e3", "inf", "nan", "1_0.5", " 2"]),
    *((["float", "--", v], {}) for v in ["-1.5", "", "x", "１.５", "1.2.3"]),
    *(
        (["bool", v], {})
        for v in ["true", "False", "TRUE", "1", "0", "yes", "no", "on", "off", "t", "F", "y"]
    ),
    *((["bool", v], {}) for v in ["n", " yes ", "", "2", "maybe", "tru", "ｙｅｓ", "\u212a"]),
    (["flag"], {}),
    (["flag", "--v"], {}),
    (["flag", "--no-v"], {}),
    *((["flag"], {"TIDE_TEST_FLAG": v}) for v in ["1", "0", "yes", "", "nope"]),
    (["opt"], {}),
    *((["opt", "--v", v], {}) for v in ["3", "x", "-2"]),
    *((["path", v], {}) for v in ["a/b", "", ".", "-", "~/x", "file.txt"]),
    *((["exists", v], {}) for v in ["file.txt", "missing", "sub", "sub/../file.txt"]),
    (["dir"], {}),
    *((_opt("dir", v), {}) for v in ["sub", "file.txt", "missing"]),
    (["enum"], {}),
    *((_opt("enum", v), {}) for v in ["table", "jsonl", "TABLE", "csv", ""]),
    (["anycase"], {}),
    *((_opt("anycase", v), {}) for v in ["TABLE", "JsonL", "csv"]),
    (["level"], {}),
    *((_opt("level", v), {}) for v in ["1", "2", "3", "low"]),
    *((_opt("literal", v), {}) for v in ["a", "b", "c"]),
    (["strs"], {}),
    (_opt("strs", "a"), {}),
    (_opt("strs", "a", "b", ""), {}),
    (_opt("paths", "x", "sub", ""), {}),
    (_opt("ints", "1", "2"), {}),
    (_opt("ints", "1", "two"), {}),
]


def _outcome(args: list[str], env: dict[str, str], *, quick: bool) -> tuple[int, str]:
    build = coercion.build if quick else _coercion.build_runtime_param
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(core, "build_runtime_param", build)
        for name in ("TIDE_TEST_FLAG",):
            patch.delenv(name, raising=False)
        result = CliRunner().invoke(_app(), args, env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


@pytest.fixture(autouse=True)
def _files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize(("args", "env"), CASES, ids=[" ".join(a) + str(e) for a, e in CASES])
def test_the_quick_coercion_answers_as_typers_own(args: list[str], env: dict[str, str]) -> None:
    assert _outcome(args, env, quick=True) == _outcome(args, env, quick=False)


def test_the_table_holds_values_and_errors() -> None:
    """The table is worth something only if both kinds of answer are in it."""
    codes = [_outcome(args, env, quick=False)[0] for args, env in CASES]
    assert codes.count(0) >= 50
    assert codes.count(2) >= 20


def test_a_quick_answer_needs_no_pydantic_and_an_unsure_one_asks_typer() -> None:
    """Inputs with a certain answer never build typer's own coercion; others do."""
    seen: list[object] = []
    typers = _coercion.build_runtime_param

    def counted(descriptor: _coercion.TypeDescriptor) -> _coercion.RuntimeParam:
        seen.append(descriptor.annotation)
        return typers(descriptor)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(core, "build_runtime_param", coercion.build)
        patch.setattr(_coercion, "build_runtime_param", counted)
        runner = CliRunner()
        for args in (["int", "5"], ["bool", "yes"], ["path", "x"], _opt("enum", "jsonl")):
            assert runner.invoke(_app(), args).exit_code == 0
        assert seen == []
        assert runner.invoke(_app(), ["int", "1_000"]).output == "int:1000\n"
        assert seen == [int]
        assert runner.invoke(_app(), _opt("literal", "a")).exit_code == 0
        assert seen == [int]  # a Literal is a choice: quick too


def test_typer_still_has_what_the_quick_coercion_replaces() -> None:
    """typer 0.29's internals: the getter calls the module's build_runtime_param, a
    RuntimeParam coerces in _coerce_value. If this fails, typer changed: look again at
    controller/cli/coercion.py before widening the pin in pyproject.toml."""
    assert typer.__version__.startswith("0.29."), typer.__version__
    assert coercion.supported()
    import controller.cli  # noqa: F401  (installs it)

    assert vars(core)["build_runtime_param"] is coercion.build
    command = typer.main.get_command(_app())
    assert isinstance(command, typer.core.TyperGroup)
    (param,) = command.commands["int"].params
    assert isinstance(param, core._TyperParameter)
    assert isinstance(param.get_runtime_param(), coercion.QuickParam)
