"""What the commands' bodies share: running one with its errors and warnings, output paths,
the tables' output, and a few helpers of several commands.

Standard library only at import, as every module of :mod:`metaeval_cli`: pandas and the
library load inside the functions, when a command runs.
"""

from __future__ import annotations

import argparse
import sys
import warnings

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: a light --help
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

    import pandas as pd

    from ._console import Output

__all__ = [
    "UsageError",
    "execute",
    "check_outputs",
    "check_names",
    "check_column",
    "advise",
    "output",
    "finish",
    "is_jsonl",
    "shown_paths",
    "means_wide",
    "read_table",
]


class UsageError(Exception):
    """Options that cannot be used together, or name something that is not there."""


def _warning_printer() -> Callable[..., None]:
    """A ``warnings.showwarning`` that prints each distinct warning once, without a traceback."""
    from metaeval.errors import MetaEvalWarning

    seen: set[str] = set()

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        name = "warning" if issubclass(category, MetaEvalWarning) else category.__name__
        text = f"metaeval: {name}: " + str(message).replace("\n", "\n  ")
        if text not in seen:  # the same finding from several tests of one command
            seen.add(text)
            print(text, file=sys.stderr)

    return show


def execute(run: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run the command ``run`` on the parsed ``args``; returns the exit code.

    Library warnings are printed as ``metaeval: warning: ...`` lines on stderr, and
    errors a user can cause end the command with a one-paragraph message and an exit
    code instead of a traceback: 2 for a usage error (:class:`metaeval.OptionError`,
    :class:`UsageError`: a bad combination of options, an output path that cannot be
    written, checked before any work), 1 for a data error (any other
    :class:`metaeval.MetaEvalError`, a file that cannot be read or written: any
    :class:`OSError`).
    """
    from metaeval._options import resolve_ci
    from metaeval.errors import MetaEvalError, MetaEvalWarning, OptionError

    prefix = f"metaeval {args.command}: error:"
    if getattr(args, "method", None) is not None and hasattr(args, "ci"):
        args.ci = resolve_ci(args.method, args.ci)  # the default of the model, as pool()'s
    with warnings.catch_warnings():
        warnings.simplefilter("always", MetaEvalWarning)
        warnings.showwarning = _warning_printer()
        try:
            return run(args)
        except (UsageError, OptionError) as err:
            print(f"{prefix} {err}\nSee 'metaeval {args.command} --help'.", file=sys.stderr)
            return 2
        except MetaEvalError as err:
            print(f"{prefix} {err}", file=sys.stderr)
            return 1
        except BrokenPipeError:  # `metaeval compare ... | head`
            sys.stderr.close()
            return 0
        except OSError as err:  # a file that cannot be read or written, a full disk, ...
            where = f"{err.filename}: " if err.filename else ""
            print(f"{prefix} {where}{err.strerror or err}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print(f"\nmetaeval {args.command}: interrupted", file=sys.stderr)
            return 130


def check_outputs(
    args: argparse.Namespace, outputs: dict[str, str | None], inputs: list[str]
) -> None:
    """Refuse output paths that cannot be written, before any work is done.

    ``outputs`` maps an option (``--output``) to its path. A path that is a
    folder, whose folder does not exist, that is one of the ``inputs`` or
    another option's path is a usage error naming the option.
    """
    from pathlib import Path

    given = {option: path for option, path in outputs.items() if path}
    seen: dict[Path, str] = {Path(p).resolve(): "an input" for p in inputs}
    for option, value in given.items():
        path = Path(value)
        if path.is_dir():
            raise UsageError(f"{option} {value}: is a folder; name a file in it.")
        if not path.parent.is_dir():
            what = "is a file, not a folder" if path.parent.exists() else "does not exist"
            raise UsageError(f"{option} {value}: the folder {path.parent} {what}; create it first.")
        resolved = path.resolve()
        if resolved in seen:
            raise UsageError(f"{option} {value} is also {seen[resolved]}; it would be overwritten.")
        seen[resolved] = option
    tables = given.get("--tables")
    if tables and not getattr(args, "format", None):
        from ._console import FORMAT_BY_SUFFIX

        if Path(tables).suffix.lower() not in FORMAT_BY_SUFFIX:
            raise UsageError(
                f"--tables {tables}: cannot tell the format from its suffix; use one of "
                f"{sorted(FORMAT_BY_SUFFIX)} or pass --format."
            )


def advise(text: str) -> None:
    """A ``metaeval: warning:`` line of the command's own (not a library warning)."""
    print("metaeval: warning: " + text.replace("\n", "\n  "), file=sys.stderr)


def check_names(option: str, names: Any, found: Any, source: str, what: str = "system") -> None:
    """Refuse the names given to ``option`` (``--control``, ``--treatment``, ...) that the
    input does not have: a :class:`UsageError` (exit 2) naming the option and the names the
    input has, in every command alike, before any work."""
    from metaeval.errors import excerpt, quote_list

    given = [names] if isinstance(names, str) else list(names or [])
    known = list(found)
    have = {str(n) for n in known}
    unknown = [n for n in given if str(n) not in have]
    if unknown:
        shown = excerpt(unknown[0]) if len(unknown) == 1 else quote_list(unknown)
        verb = "is not a" if len(unknown) == 1 else "are not"
        raise UsageError(
            f"{option} {shown} {verb} {what}{'' if len(unknown) == 1 else 's'} of {source}; "
            f"it has {quote_list(known)}."
        )


def check_column(option: str, column: str | None, columns: Any, source: str) -> None:
    """Refuse an ``option`` naming a column (``--cluster``, ``--by``) that the input lacks."""
    if column is not None and column not in set(columns):
        from metaeval.errors import excerpt, quote_list

        raise UsageError(
            f"{option} {excerpt(column)} is not a column of {source}; it has "
            f"{quote_list(list(columns))}."
        )


def output(args: argparse.Namespace) -> Output:
    """The :class:`Output` of the options ``--print-mode``, ``--digits`` and ``--format``."""
    from ._console import Output

    return Output(args.print_mode, digits=args.digits, fmt=getattr(args, "format", None))


def finish(out: Output, args: argparse.Namespace) -> None:
    """Write the tables of ``out`` to ``--tables FILE``, if given."""
    path = getattr(args, "tables", None)
    if path:
        fmt = out.write(path, getattr(args, "format", None))
        print(f"wrote the tables ({fmt}) to {path}", file=sys.stderr)


def is_jsonl(path: str) -> bool:
    """Whether ``path`` names elinor's JSON lines (else a TREC file)."""
    name = path.lower()
    return name.endswith((".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz"))


def shown_paths(paths: list[str]) -> list[str]:
    """Input paths for a printed table: as the user typed them where relative; absolute ones
    below the working folder relative to it, others cut to the shortest tail (at least the
    folder and the name) that still tells them apart — never the machine's whole tree."""
    from pathlib import Path

    cwd = Path.cwd()
    shown: list[str | None] = []
    for text in paths:
        path = Path(text)
        if not path.is_absolute():
            shown.append(text)
        elif path.is_relative_to(cwd):
            shown.append(str(path.relative_to(cwd)))
        else:
            shown.append(None)
    absolute = [Path(p).parts for p, s in zip(paths, shown, strict=True) if s is None]
    for depth in range(2, max((len(a) for a in absolute), default=2) + 1):
        tails = ["/".join(parts[-depth:]) for parts in absolute]
        if len(set(tails)) == len(set(absolute)):
            break
    tail = iter(tails if absolute else [])
    return [s if s is not None else "…/" + next(tail) for s in shown]


def means_wide(
    scores: pd.DataFrame, systems: list[str], metrics: list[str] | None = None
) -> pd.DataFrame:
    """System × metric table of means over queries (and a task column for several tasks)."""
    keys = ["task", "system"] if scores["task"].nunique() > 1 else ["system"]
    wide = scores.pivot_table(
        index=keys, columns="metric", values="value", aggfunc="mean", observed=True, sort=False
    )
    wide = wide.reindex(columns=_in_order(wide.columns, metrics))
    wide = wide.reset_index()
    order = {s: i for i, s in enumerate(systems)}
    wide = wide.sort_values(
        keys[:-1] + ["system"],
        key=lambda c: c.map(order) if c.name == "system" else c,
        kind="stable",
    )
    wide.columns.name = None
    return wide


def _in_order(found: Any, wanted: list[str] | None) -> list[str]:
    found = [str(x) for x in found]
    if not wanted:
        return found
    first = [w for w in wanted if w in found]
    return first + [f for f in found if f not in first]


_SEPARATORS = {".csv": ",", ".tsv": "\t", ".txt": "\t"}


def read_table(path: str, what: str):  # noqa: ANN201 - pandas loads when the command runs
    """A table read as it is (CSV, TSV, Parquet or JSON lines; no scores-table checks:
    its keys may repeat, once per judge or facet level); ``what`` says what the file
    should hold, in the error of a file that cannot be read."""
    from pathlib import Path

    import pandas as pd

    from metaeval.errors import FormatError

    file = Path(path)
    expected = f"{what}: CSV, TSV, Parquet or JSON lines"
    if not file.is_file():
        raise FormatError(path, None, "no such file", expected)
    suffix = file.suffix.lower()
    try:
        if suffix == ".parquet":
            return pd.read_parquet(file)
        if suffix in (".jsonl", ".ndjson"):
            return pd.read_json(file, lines=True)
        return pd.read_csv(file, sep=_SEPARATORS.get(suffix, ","))
    except (ValueError, OSError, UnicodeDecodeError) as err:
        raise FormatError(path, None, f"cannot be read ({err})", expected) from None
