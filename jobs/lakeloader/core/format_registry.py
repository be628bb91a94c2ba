"""The one description of each wire format: what config validation, framing, ordering, `format: auto` and the
test generator need to know about it, without Spark (the Airflow side reads it through lakeloader.core.config).

A format's parser is named by its dotted path and imported on first use (`parser`), so reading the registry
imports no parser. A parser module with a JVM reader of its format's common case also defines `reader` (`reader`).
Adding a format: docs/architecture.md, "Adding a format".
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from lakeloader.core.config import SourceConfig
    from lakeloader.parse.formats.common import CommonCase

    Reader = Callable[[DataFrame, SourceConfig], CommonCase | None]


class Parser(Protocol):
    """Messages -> canonical rows with their reject reasons (docs/architecture.md, "Parse"); without
    `common_case`, a format's JVM reader of its common case is not used (the Spark SQL parse of every message)."""

    def __call__(self, lines: DataFrame, source: SourceConfig, common_case: bool = True) -> DataFrame: ...


@dataclass(frozen=True)
class Shape:
    """A message shape `format: auto` recognises as its format: every condition given holds. The shapes of all
    formats are tried by `rank`, lowest first, so a shape goes before every shape its messages also match."""

    rank: int
    keys: tuple[str, ...] = ()  # top-level JSON keys the message has
    payload_keys: tuple[str, ...] = ()  # keys of the JSON object under its top-level `payload`
    equal: tuple[tuple[str, str], ...] = ()  # (top-level key, its raw value as text)
    contains: tuple[tuple[str, ...], str] | None = None  # (top-level keys, text their raw values joined contain)
    file_name: str | None = None  # regular expression the export file's name matches, whatever the message


# an export file of CSV lines (DataHub TUPLE's): its name ends in .csv, perhaps followed by a compression suffix
CSV_FILE = r"(?i)\.csv(\.[a-z0-9]+)?$"


@dataclass(frozen=True)
class Format:
    """A value of a source's `format`. The flags say what its messages hold; what they lack, the source
    configures (`db`, `topic_tables`, `primary_keys`, `column_types`)."""

    name: str
    parser: str  # "module:function", `(lines, source) -> DataFrame` (docs/architecture.md, "Parse")
    binary: bool = False  # messages are bytes: Base64 in text files and export envelopes, never concatenated
    # every message is JSON text (but for the lines of files its `file_name` shapes name, e.g. DataHub's CSV): JSON's
    # rules on control characters and escapes apply before parsing (lakeloader.parse.framing)
    json: bool = True
    names_db: bool = True  # False: messages name the table only; the source's `db` (required) names the database
    names_table: bool = True  # False: `topic_tables` (required) maps the export's topic directory to the table
    names_key: bool = True  # False: messages name no primary key; `primary_keys` configures it
    typed: bool = True  # False: messages carry no column types; `column_types` types them, the rest are strings
    ordered: bool = True  # False: messages hold no ordering key; they apply in export order
    ddl: bool = True  # False: the format has no DDL messages (not even TRUNCATE)
    # the format's documents define the sequence as unique per record (an update's halves share it and differ by
    # op): the sequence identifies a message, also re-delivered in another file (docs/semantics.md)
    sequence_identifies: bool = False
    # a DDL message may lack the ordering key (or its second part) that the data messages carry, so it takes its
    # place in its file (lakeloader.apply.ddl.events): False where the key's second part is never sent
    unkeyed_ddl: bool = True
    partial_images: bool = False  # an update's after-image may hold only the columns it changed (folded in apply)
    options: tuple[str, ...] = ()  # optional settings only this format uses
    shapes: tuple[Shape, ...] = ()  # how `format: auto` recognises its messages (none: never recognised)
    recognises: bool = False  # `auto`: each message's format is recognised by the shapes; every setting applies

    @property
    def settings(self) -> tuple[str, ...]:
        """The settings only this format uses: its options and those its messages lack."""
        return (*self.options, *(() if self.names_table else ("topic_tables",)), *(() if self.names_db else ("db",)))


FORMATS: dict[str, Format] = {  # in the order the README and the configuration's messages list them
    f.name: f
    for f in (
        Format(
            "dataworks_json",
            "lakeloader.parse.formats.dataworks:parse",
            sequence_identifies=True,
            unkeyed_ddl=False,
            shapes=(Shape(3, keys=("payload", "schema"), payload_keys=("op", "sequenceId")),),
        ),
        Format(
            "dataworks_v2",
            "lakeloader.parse.formats.dataworks_v2:parse",
            shapes=(Shape(2, keys=("payload", "schema"), equal=(("version", "2.0"),)),),
        ),
        Format(
            "datahub_tuple",
            "lakeloader.parse.formats.datahub_tuple:parse",
            names_db=False,
            names_key=False,
            typed=False,
            ddl=False,
            shapes=(
                Shape(1, file_name=CSV_FILE),
                Shape(6, keys=("_sequence_id_", "_operation_type_")),
            ),
        ),
        Format(
            "oms_default",
            "lakeloader.parse.formats.oms_default:parse",
            typed=False,
            shapes=(Shape(5, keys=("recordType", "allMetaData")),),
        ),
        Format(
            "oms_default_extend_column_type",
            "lakeloader.parse.formats.oms_extend:parse",
            shapes=(Shape(4, keys=("recordType",), contains=(("postStruct", "prevStruct"), '"__light_type"')),),
        ),
        Format(
            "canal_json",
            "lakeloader.parse.formats.canal:parse",
            options=("canal_dts_legacy_images", "canal_binary_encoding"),
            shapes=(Shape(7, keys=("isDdl", "type")),),
        ),
        Format(
            "shareplex_json",
            "lakeloader.parse.formats.shareplex:parse",
            names_key=False,
            typed=False,
            partial_images=True,
            shapes=(Shape(8, keys=("meta",)),),
        ),
        Format(
            "debezium_json",
            "lakeloader.parse.formats.debezium:parse",
            names_key=False,
            shapes=(Shape(9, keys=("payload",), payload_keys=("op", "source")),),
        ),
        Format(
            "debezium_flatten",
            "lakeloader.parse.formats.debezium_flatten:parse",
            names_key=False,
            shapes=(Shape(10, keys=("op", "source")),),
        ),
        Format(
            "debezium_smt",
            "lakeloader.parse.formats.debezium_smt:parse",
            names_table=False,
            names_key=False,
            typed=False,
            ordered=False,
            ddl=False,
            shapes=(Shape(11, keys=("__deleted",)),),  # without `__deleted` a row of fields has no known shape
        ),
        Format(
            "dts_avro",
            "lakeloader.parse.formats.dts_avro:parse",  # framed as lakeloader.parse.framing says
            binary=True,
            json=False,
            sequence_identifies=True,
            unkeyed_ddl=False,
        ),
        Format("auto", "lakeloader.parse.formats.auto:parse", recognises=True),  # a configured format always wins
    )
}


def not_json_files(name: str) -> tuple[str, ...]:
    """Regular expressions of the export file names whose lines are not JSON for a source of format `name`: its
    shapes' (for `auto`, every format's) `file_name`."""
    formats = FORMATS.values() if FORMATS[name].recognises else (FORMATS[name],)
    return tuple(dict.fromkeys(s.file_name for f in formats for s in f.shapes if s.file_name))


def names(where: Callable[[Format], bool] = lambda _: True) -> tuple[str, ...]:
    """The names of the formats `where` holds for, in registry order."""
    return tuple(name for name, fmt in FORMATS.items() if where(fmt))


def shapes() -> list[tuple[str, Shape]]:
    """Every format's shapes with its name, in the order `format: auto` tries them."""
    return sorted(((f.name, s) for f in FORMATS.values() for s in f.shapes), key=lambda pair: pair[1].rank)


def may_send_partial_images(name: str) -> bool:
    """Whether a source of format `name` can deliver partial after-images: its own flag, or for `auto` any
    format it recognises."""
    fmt = FORMATS[name]
    return fmt.partial_images or (fmt.recognises and any(f.partial_images for f in FORMATS.values() if f.shapes))


def parser(name: str) -> Parser:
    """The parser of format `name`, imported now (parsers need Spark; the registry does not)."""
    module, _, function = FORMATS[name].parser.partition(":")
    return getattr(importlib.import_module(module), function)


def reader(name: str) -> Reader | None:
    """The JVM common-case reader of format `name` (its parser module's `reader`: the parser's common case and
    output columns, lakeloader.parse.formats.common.CommonCase), None for a format without one."""
    module, _, _function = FORMATS[name].parser.partition(":")
    return getattr(importlib.import_module(module), "reader", None)
