"""Read Neuron Explorer profile directories (`<Table>.parquet` files), checked against the schema.

A profile directory holds one device profile (one Logical NeuronCore of one rank);
a directory of such directories holds several ranks. Every problem is one sentence
(`UserError`): a file that is not Parquet, a required field missing, a field of the
wrong type, a profile from a newer major schema. Unknown tables and fields (a newer
minor version) are ignored, and only the fields this project maps are read, so memory
follows what the import really uses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from explorer.interop.neuron_profile import schema as NS
from simcore.errors import UserError

SUFFIX = ".parquet"
_TIMELINE = ("Instruction", "DmaPacket", "DmaPacketAggregated", "CcOp")


def _kind_ok(want: str, got: pa.DataType) -> bool:
    if pa.types.is_dictionary(got):
        got = got.value_type
    if want in ("int64", "int32"):
        return pa.types.is_integer(got)
    if want in ("float", "double"):
        return pa.types.is_floating(got) or pa.types.is_integer(got)
    if want == "string":
        return pa.types.is_string(got) or pa.types.is_large_string(got)
    if want == "boolean":
        return pa.types.is_boolean(got)
    if want == "int64[]":
        return (pa.types.is_list(got) or pa.types.is_large_list(got)) and pa.types.is_integer(got.value_type)
    return False


def _type_words(want: str) -> str:
    return {"int64": "an integer", "int32": "an integer", "float": "a number", "double": "a number",
            "string": "a string", "boolean": "a boolean", "int64[]": "a list of integers"}[want]


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0].rstrip(".") if lines else type(exc).__name__


def is_profile_dir(path: Path) -> bool:
    """A directory holding at least one `<Table>.parquet` file of a table Neuron Explorer writes."""
    return path.is_dir() and any((path / f"{name}{SUFFIX}").is_file() for name in (*_TIMELINE, "Metadata"))


def _natural(p: Path) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", p.name)]


def profile_dirs(path: Path) -> list[Path]:
    """The profile directories under `path`: itself, or its immediate subdirectories that are profiles."""
    if is_profile_dir(path):
        return [path]
    if path.is_dir():
        return sorted((p for p in path.iterdir() if is_profile_dir(p)), key=_natural)
    return []


def looks_like_profile(path: Path) -> bool:
    """True when `path` is a Neuron Explorer profile directory or a directory of them (import detection)."""
    return bool(profile_dirs(path))


@dataclass
class Profile:
    """One device profile: its Metadata row and the tables present, with the mapped fields only."""

    path: Path
    metadata: dict[str, Any]
    tables: dict[str, pa.Table] = field(default_factory=dict)
    summary: dict[str, Any] | None = None

    def table(self, name: str) -> pa.Table | None:
        return self.tables.get(name)

    def has(self, table: str, column: str) -> bool:
        t = self.tables.get(table)
        return t is not None and column in t.column_names and t.column(column).null_count < t.num_rows


def _read_table(path: Path, spec: NS.Table) -> pa.Table:
    file = path / f"{spec.name}{SUFFIX}"
    try:
        pf = pq.ParquetFile(str(file))
        schema = pf.schema_arrow
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise UserError(f"{file} is not a readable Parquet file ({_first_line(exc)}).") from None
    names = schema.names
    for f in spec.fields:
        if f.name not in names:
            if f.required:
                raise UserError(f"{file} lacks the required field '{f.name}' of table {spec.name}.")
            continue
        got = schema.field(f.name).type
        if not _kind_ok(f.type, got):
            raise UserError(f"{file} field '{f.name}' is {got}, but table {spec.name} needs {_type_words(f.type)} there.")
    columns = [f.name for f in spec.fields if f.name in names]
    try:
        table = pf.read(columns=columns)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise UserError(f"{file} cannot be read ({_first_line(exc)}).") from None
    for name in spec.required:
        if table.column(name).null_count:
            raise UserError(f"{file} has missing (null) values in the required field '{name}'.")
    return table


def _check_version(path: Path, meta: dict[str, Any]) -> None:
    text = meta.get("profile_schema_version")
    version = NS.parse_version(text)
    if version is None:
        raise UserError(f"{path}/Metadata.parquet has no valid profile_schema_version (found {str(text)[:40]!r}).")
    if version[0] > NS.SCHEMA_MAJOR:
        raise UserError(
            f"{path} uses Neuron Explorer profile schema {text}, a newer major version than this reader "
            f"({NS.SCHEMA_MAJOR}.x); upgrade trn3-explorer to import it.")
    if version[0] < NS.SCHEMA_MAJOR:
        raise UserError(f"{path} uses Neuron Explorer profile schema {text}, older than {NS.SCHEMA_MAJOR}.x, which this reader does not read.")


def _one_row(path: Path, table: pa.Table, name: str) -> dict[str, Any]:
    if table.num_rows < 1:
        raise UserError(f"{path}/{name}.parquet has no rows; it must hold one.")
    return {k: v for k, v in table.slice(0, 1).to_pylist()[0].items()}


def read_profile(path: str | Path) -> Profile:
    """Read and check one profile directory."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path} does not exist.")
    if not is_profile_dir(path):
        raise UserError(f"{path} is not a Neuron Explorer profile (no Metadata.parquet or Instruction.parquet in it).")
    if not (path / "Metadata.parquet").is_file():
        raise UserError(f"{path} has no Metadata.parquet, so its profile schema version cannot be checked.")
    meta = _one_row(path, _read_table(path, NS.METADATA), "Metadata")
    _check_version(path, meta)
    profile = Profile(path, meta)
    for name, spec in NS.TABLES.items():
        file = path / f"{name}{SUFFIX}"
        if name in ("Metadata", "SchemaFields") or not file.exists():
            continue
        if not file.is_file():
            raise UserError(f"{file} is not a file (a profile's tables are <Table>.parquet files).")
        profile.tables[name] = _read_table(path, spec)
    if "Summary" in profile.tables and profile.tables["Summary"].num_rows:
        profile.summary = _one_row(path, profile.tables.pop("Summary"), "Summary")
    if not any(n in profile.tables for n in _TIMELINE):
        raise UserError(f"{path} has none of the timeline tables {', '.join(_TIMELINE)} to import.")
    return profile


def read_profiles(paths: list[str | Path]) -> list[Profile]:
    """Every profile named (a profile directory, or a directory of profile directories)."""
    dirs: list[Path] = []
    for p in map(Path, paths):
        if not p.exists():
            raise UserError(f"{p} does not exist.")
        found = profile_dirs(p)
        if not found:
            raise UserError(f"{p} is not a Neuron Explorer profile directory (it has no <Table>.parquet files of a profile).")
        dirs += found
    seen: set[Path] = set()
    for d in dirs:
        if d.resolve() in seen:
            raise UserError(f"{d} is named twice; import each profile once.")
        seen.add(d.resolve())
    return [read_profile(d) for d in dirs]
