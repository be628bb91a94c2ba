"""The source declarations: one YAML file read by the DAGs, the Spark jobs and the local runner.

Loading validates everything up front, so a typo fails before any run with a message that names the key
and says what is expected.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from lakeloader.core.errors import LakeloaderError
from lakeloader.core.format_registry import FORMATS, names

CONFIG_ENV_VAR = "LAKELOADER_CONFIG"
PROJECT_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_CONFIG_PATH = PROJECT_ROOT / "config" / "sources.yaml"

SUPPORTED_FORMATS = tuple(FORMATS)  # lakeloader.core.format_registry describes each
EXPORT_LAYOUTS = ("lines", "concatenated", "kcat")  # lakeloader.parse.framing
SPARK_TYPES = ("tinyint", "smallint", "int", "bigint", "float", "double", "boolean", "string", "binary", "date")
SPARK_TYPES_TEXT = ", ".join(SPARK_TYPES) + ", timestamp, timestamp_ntz, decimal(p,s)"
SOURCE_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,62}$"


class ConfigError(LakeloaderError, ValueError):
    """The configuration file is missing, unreadable or invalid; the message says what to fix."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WebhookAlert(_Strict):
    """POST a JSON document describing the alert to an HTTP(S) endpoint."""

    type: Literal["webhook"]
    url: str = Field(pattern=r"^https?://", description="http:// or https:// URL that receives the JSON body")
    headers: dict[str, str] = Field(default_factory=dict, description="extra request headers (e.g. a token)")
    timeout_seconds: float = Field(default=10.0, gt=0)


class SlackAlert(_Strict):
    """Post to Slack through an Airflow Slack Incoming Webhook connection."""

    type: Literal["slack"]
    conn_id: str = Field(default="slack_default", description="Airflow connection of type slackwebhook")


class EmailAlert(_Strict):
    """Send an e-mail through an Airflow SMTP connection."""

    type: Literal["email"]
    to: tuple[str, ...] = Field(description="recipient addresses")
    from_email: str | None = Field(default=None, description="sender; default: the connection's from_email")
    conn_id: str = Field(default="smtp_default", description="Airflow connection of type smtp")

    @field_validator("to")
    @classmethod
    def _some_recipient(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value or not all("@" in address for address in value):
            raise ValueError("expected a list of one or more e-mail addresses")
        return value


AlertChannel = Annotated[WebhookAlert | SlackAlert | EmailAlert, Field(discriminator="type")]
SNAPSHOT_FORMATS = ("json", "csv", "parquet")


class SnapshotExport(_Strict):
    """The source's full export of current rows, one directory per table: <uri>/<db>/<table>/ (any file names)."""

    uri: str = Field(description="directory, file:///path or s3://bucket/prefix holding <db>/<table>/ directories")
    format: Literal[SNAPSHOT_FORMATS] = Field(  # type: ignore[valid-type]
        default="json", description=f"file format of the rows, one of: {', '.join(SNAPSHOT_FORMATS)}"
    )

    @field_validator("uri")
    @classmethod
    def _known_scheme(cls, value: str) -> str:
        if "://" in value and not value.startswith(("file://", "s3://")):
            raise ValueError("expected a local path, a file:// URI or an s3://bucket/prefix URI")
        return value


class SourceConfig(_Strict):
    """One upstream topic export, loaded into one set of silver tables."""

    name: str = Field(
        pattern=SOURCE_NAME_PATTERN,
        description="lower-case identifier (a letter, then up to 62 letters, digits or _), used in paths and DAG ids",
    )
    format: Literal[SUPPORTED_FORMATS] = Field(  # type: ignore[valid-type]
        description=f"wire format of the exported messages, one of: {', '.join(SUPPORTED_FORMATS)}"
    )
    export_uri: str = Field(description="where the exporter drops topic files: a directory or s3://bucket/prefix")
    lake_root: str = Field(description="root of the raw/bronze/silver/audit zones: a directory or s3://bucket/prefix")
    export_layout: Literal[EXPORT_LAYOUTS] = Field(  # type: ignore[valid-type]
        default="lines",
        description="how the export files hold messages: lines (one per line), concatenated (JSON messages one "
        "after another, pretty-printed or not) or kcat (one JSON envelope per line with topic, partition, offset, "
        "payload, as `kcat -J` writes); files named *.bin hold length-prefixed binary messages in any layout",
    )
    payload_encoding: Literal["text", "base64"] | None = Field(
        default=None,
        description="export_layout kcat: whether an envelope's payload is the message text or its Base64 "
        f"(default: text; always base64 for {', '.join(names(lambda f: f.binary))})",
    )
    tables: tuple[str, ...] | None = Field(default=None, description="include list of 'db.table' names")
    primary_keys: dict[str, tuple[str, ...]] = Field(default_factory=dict, description="'db.table' -> key columns")
    schedule: str = Field(default="0 * * * *", description="cron expression; each run covers one interval")
    start_date: str = Field(default="2026-01-01T00:00:00+00:00", description="first data interval start (ISO 8601)")
    retries: int = Field(default=2, ge=0, description="retries of each task of the source's DAGs before it fails")
    owner: str = Field(
        default="lakeloader", min_length=1, description="owner of the source's DAGs' tasks, shown in the Airflow UI"
    )
    max_message_bytes: int = Field(
        default=4 * 2**20,
        ge=1024,
        description="largest message loaded, in bytes; a larger one is quarantined as too large with its size and "
        "position, without being parsed (so one huge line cannot run the driver out of memory)",
    )
    tombstone_retention_hours: int = Field(
        default=720, ge=1, description="how long a deleted key blocks older changes that arrive late"
    )
    silver_file_size_mb: int = Field(
        default=8,
        ge=1,
        description="size in MiB the silver tables' Parquet files aim at (Delta's delta.targetFileSize): a merge "
        "rewrites every file holding a changed key, so smaller files mean less rewriting per hour, more files "
        "more to list and open",
    )
    recluster_every_hours: int = Field(
        default=24,
        ge=0,
        description="every this many hours (the hours whose start is a multiple of it since 1970), the apply step "
        "rewrites each silver table whose files overlap in key ranges into key-ordered files of "
        "silver_file_size_mb (a composite key's table only has its small files merged), so changes to recent "
        "keys rewrite only the newest files; 0 = never",
    )
    source_dialect: Literal["mysql", "oracle", "oceanbase", "oceanbase_oracle"] = Field(
        default="mysql", description="SQL dialect of the source's DDL text"
    )
    ddl_policy: Literal["fail", "skip", "skip_and_alert"] = Field(
        default="skip_and_alert", description="what to do with DDL that cannot be parsed or performed"
    )
    auto_add_columns: bool = Field(default=True, description="add columns that appear in the data without any DDL")
    lower_case_table_names: bool = Field(
        default=False,
        description="database and table names are case-insensitive at the source (MySQL's "
        "lower_case_table_names=1 or 2, the default of Alibaba RDS, Windows and macOS servers): fold them to lower "
        "case everywhere (messages, DDL targets, `tables`, `primary_keys`, `column_types`), so `T3` and `t3` are "
        "one table; false (MySQL on Linux, Oracle): names are compared as sent",
    )
    unqualified_schemas: tuple[str, ...] = Field(
        default=("public", "dbo"),
        description="schemas that do not qualify a table's database in its name: a table of any other schema "
        "(Debezium `source.schema`, DataWorks `schemaName`) is named '<database>.<schema>.<table>'; a schema equal "
        "to the database (MySQL) or absent never qualifies",
    )
    s3_endpoint_url: str | None = Field(default=None, description="S3-compatible endpoint (e.g. http://127.0.0.1:9000)")
    engine: Literal["delta_rs", "delta_spark"] = Field(
        default="delta_rs",
        description="what writes the Delta tables: delta_rs (embedded, no jars; the default) or delta_spark (Delta "
        "Lake on the job's Spark, for clusters: needs the pinned jars of config/jars, `make jars`, and reaches an "
        "S3 lake through s3a)",
    )
    db: str | None = Field(
        default=None,
        min_length=1,
        description="database name of the tables, for formats whose messages name none (required for datahub_tuple)",
    )
    column_types: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="'db.table' -> {column: Spark SQL type}; a configured type wins over the one a message "
        "declares or the format infers. Formats whose messages carry no types "
        f"({', '.join(names(lambda f: not f.typed))}) load the columns it does not name as strings",
    )
    # Operations (deadlines, freshness, alerts, reconciliation against the source); see README "Operating guide".
    deadline_minutes: int = Field(
        default=60, ge=1, description="an hourly run is late this many minutes after the end of its data interval"
    )
    freshness_sla_minutes: int | None = Field(
        default=180,
        ge=1,
        description="alert when the newest loaded change or heartbeat is older than this (null: never); only "
        "a current run alerts, not a backfill of past hours",
    )
    heartbeat_timeout_minutes: int | None = Field(
        default=None, ge=1, description="alert when the newest loaded heartbeat is older than this"
    )
    canal_dts_legacy_images: bool = Field(
        default=False,
        description="canal_json from a DTS task created before 2022-03-20: an update's `old` holds the after-image "
        "and `data` the before-image, a delete's row is in `old`",
    )
    canal_binary_encoding: Literal["latin1", "base64"] = Field(
        default="latin1",
        description="how canal_json writes binary values: latin1 (open-source Canal: one ISO-8859-1 character per "
        "byte) or base64 (OMS, whose mysqlType names OMS's types: integers without signedness)",
    )
    topic_tables: dict[str, str] = Field(
        default_factory=dict,
        description="debezium_smt (required there): topic -> 'db.table'; a file's topic is the first directory of "
        "its path in the export (orders-topic/0/0001.json -> orders-topic)",
    )
    alerts: tuple[AlertChannel, ...] = Field(default=(), description="where alerts go: webhook, slack and/or email")
    snapshot: SnapshotExport | None = Field(default=None, description="full export of current rows to reconcile")

    @field_validator("export_uri", "lake_root")
    @classmethod
    def _known_scheme(cls, value: str) -> str:
        if "://" in value and not value.startswith(("file://", "s3://")):
            raise ValueError("expected a local path, a file:// URI or an s3://bucket/prefix URI")
        return value

    @field_validator("tables")
    @classmethod
    def _qualified_tables(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        for name in value or ():
            _require_qualified(name)
        return value

    @field_validator("primary_keys")
    @classmethod
    def _qualified_keys(cls, value: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        for name, columns in value.items():
            _require_qualified(name)
            if not columns:
                raise ValueError(f"primary key of {name!r} must list at least one column")
        return value

    @field_validator("column_types")
    @classmethod
    def _spark_types(cls, value: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        for name in value:
            _require_qualified(name)
        return {
            name: {column: _spark_type(t, name, column) for column, t in types.items()} for name, types in value.items()
        }

    @field_validator("topic_tables")
    @classmethod
    def _topic_directories(cls, value: dict[str, str]) -> dict[str, str]:
        for topic, name in value.items():
            if not topic or "/" in topic:
                raise ValueError(f"topic {topic!r} must be a directory name (non-empty, no '/')")
            _require_qualified(name)
        return value

    @model_validator(mode="after")
    def _format_specific_keys(self) -> SourceConfig:
        if self.payload_encoding is not None and self.export_layout != "kcat":
            raise ValueError("'payload_encoding' is only used with export_layout kcat; remove it")
        fmt = FORMATS[self.format]
        if fmt.binary and self.payload_encoding == "text":
            raise ValueError(
                f"format {self.format} is binary: its envelope payloads are Base64 (set payload_encoding: base64)"
            )
        if fmt.binary and self.export_layout == "concatenated":
            raise ValueError(f"format {self.format} is binary: export_layout concatenated is for JSON messages")
        if fmt.recognises:
            return self  # any format may occur: every format's settings apply to its messages
        for key in FORMAT_SETTINGS:
            if key != "db" and key in self.model_fields_set and key not in fmt.settings:
                raise ValueError(f"'{key}' is only used by format {_users(key)}; remove it")
        if not fmt.names_table and not self.topic_tables:
            raise ValueError(
                f"format {self.format} needs 'topic_tables' (topic directory -> 'db.table'): its messages name no table"
            )
        if not fmt.names_db and self.db is None:
            raise ValueError(f"format {self.format} needs 'db': its messages name the table but not the database")
        if fmt.names_db and self.db is not None:
            raise ValueError(f"'db' is only used by format(s) {_users('db')}; remove it")
        return self

    def includes(self, db: str, table: str) -> bool:
        """Whether changes of db.table are loaded (all tables when no include list is given)."""
        return self.tables is None or self.table_name(f"{db}.{table}") in map(self.table_name, self.tables)

    def table_name(self, name: str) -> str:
        """A 'db.table' name as the source compares it (folded to lower case with `lower_case_table_names`)."""
        return name.lower() if self.lower_case_table_names else name


class LakeloaderConfig(_Strict):
    sources: tuple[SourceConfig, ...] = Field(min_length=1, description="a list of source declarations")

    @field_validator("sources")
    @classmethod
    def _unique_names(cls, sources: tuple[SourceConfig, ...]) -> tuple[SourceConfig, ...]:
        names = [source.name for source in sources]
        duplicated = sorted({name for name in names if names.count(name) > 1})
        if duplicated:
            raise ValueError(f"source names must be unique; repeated: {', '.join(duplicated)}")
        return sources

    def source(self, name: str) -> SourceConfig:
        for source in self.sources:
            if source.name == name:
                return source
        known = ", ".join(s.name for s in self.sources)
        raise ConfigError(f"unknown source {name!r}; configured sources: {known}")


FORMAT_SETTINGS = tuple(dict.fromkeys(key for fmt in FORMATS.values() for key in fmt.settings))


def _users(key: str) -> str:
    """The formats that use a format-specific setting."""
    return ", ".join(names(lambda f: key in f.settings))


def _require_qualified(name: str) -> None:
    """'db.table'; the db may itself hold dots (OceanBase names it 'tenant.database'): the table is the
    part after the last dot."""
    if not re.fullmatch(r"[^\s]*[^.\s]\.[^.\s]+", name):
        raise ValueError(f"table {name!r} must be written as 'db.table'")


def _spark_type(text: str, table: str, column: str) -> str:
    """A Spark SQL type name from `column_types`, normalised (lower case, no spaces)."""
    normal = re.sub(r"\s+", "", str(text)).lower()
    decimal = re.fullmatch(r"decimal\(([0-9]{1,2}),([0-9]{1,2})\)", normal)
    if normal in (*SPARK_TYPES, "timestamp", "timestamp_ntz"):
        return normal
    if decimal and 1 <= int(decimal[1]) <= 38 and int(decimal[2]) <= int(decimal[1]):
        return normal
    raise ValueError(
        f"type {text!r} of {table}.{column} is not one of {SPARK_TYPES_TEXT} (with 1 <= p <= 38, 0 <= s <= p)"
    )


def config_path(path: str | os.PathLike[str] | None = None) -> Path:
    """The config file in use: the argument, else $LAKELOADER_CONFIG, else config/sources.yaml."""
    return Path(path or os.environ.get(CONFIG_ENV_VAR) or DEFAULT_CONFIG_PATH).resolve()


def load_config(path: str | os.PathLike[str] | None = None) -> LakeloaderConfig:
    """Read and validate the whole configuration; relative local paths resolve against the file's directory."""
    file, raw = _read(path)
    try:
        return LakeloaderConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_describe(file, raw, exc.errors())) from None


@dataclass(frozen=True)
class BrokenSource:
    """A source declaration that does not validate: its position, its name if it has a usable one, and why."""

    index: int
    name: str | None
    message: str


@dataclass(frozen=True)
class SourceLoad:
    """The configuration read source by source: one source's mistake does not hide the others."""

    sources: tuple[SourceConfig, ...]
    broken: tuple[BrokenSource, ...]

    @property
    def config(self) -> LakeloaderConfig | None:
        """The valid sources as a configuration (None when there is none)."""
        return LakeloaderConfig(sources=self.sources) if self.sources else None


def load_sources(path: str | os.PathLike[str] | None = None) -> SourceLoad:
    """Validate each source on its own, for the DAG files: a mistake in one source's declaration becomes that
    source's `BrokenSource`, and the others load. Mistakes of the whole file (unreadable, not YAML, bad
    `defaults`, no `sources` list) still raise ConfigError, since they concern every source."""
    file, raw = _read(path)
    entries = raw.get("sources")
    if not isinstance(entries, list) or not entries:
        load_config(file)  # raises the whole-file error with its usual message
    assert isinstance(entries, list)
    valid: list[SourceConfig] = []
    broken: list[BrokenSource] = []
    for index, entry in enumerate(entries):
        name = entry.get("name") if isinstance(entry, dict) else None
        name = name if isinstance(name, str) and re.fullmatch(SOURCE_NAME_PATTERN, name) else None
        try:
            source = SourceConfig.model_validate(entry)
        except ValidationError as exc:
            errors = [{**error, "loc": ("sources", index, *error["loc"])} for error in exc.errors()]
            broken.append(BrokenSource(index, name, _describe(file, raw, errors)))
            continue
        if any(other.name == source.name for other in valid):
            message = f"invalid config file {file}:\n  sources[{index}] ({name}): source names must be unique; "
            broken.append(BrokenSource(index, None, message + f"{name!r} is declared before"))
            continue
        valid.append(source)
    return SourceLoad(tuple(valid), tuple(broken))


def load_source(path: str | os.PathLike[str] | None, name: str) -> SourceConfig:
    """The declaration of source `name`, validated; other sources' mistakes do not stop it (see load_sources)."""
    loaded = load_sources(path)
    for source in loaded.sources:
        if source.name == name:
            return source
    for broken in loaded.broken:
        if broken.name == name:
            raise ConfigError(broken.message)
    known = ", ".join(s.name for s in loaded.sources)
    raise ConfigError(f"unknown source {name!r}; configured sources: {known}")


def valid_sources(path: str | os.PathLike[str] | None = None) -> LakeloaderConfig:
    """The sources that validate, as a configuration (replay works on those); ConfigError when there is none."""
    loaded = load_sources(path)
    if loaded.config is None:
        raise ConfigError("\n".join(broken.message for broken in loaded.broken))
    return loaded.config


def _read(path: str | os.PathLike[str] | None) -> tuple[Path, dict]:
    """The file and its content with `defaults` merged into each source and local paths resolved; ConfigError for
    mistakes of the whole file."""
    file = config_path(path)
    try:
        raw = yaml.safe_load(file.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"config file {file} not found (set ${CONFIG_ENV_VAR} or create it)") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {file} cannot be read: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {file} is not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {file}: expected a mapping with a 'sources' list at the top")
    defaults = raw.pop("defaults", None) or {}
    if not isinstance(defaults, dict):
        raise ConfigError(f"config file {file}: 'defaults' must be a mapping of source keys")
    unknown = [key for key in defaults if key not in SourceConfig.model_fields]
    if unknown:
        details = "\n".join(f"  defaults.{key}: {_unknown_key(key, SourceConfig)}" for key in unknown)
        raise ConfigError(f"invalid config file {file}:\n{details}")
    sources = raw.get("sources")
    if isinstance(sources, list):
        raw["sources"] = [_resolve_paths({**defaults, **s}, file.parent) if isinstance(s, dict) else s for s in sources]
    return file, raw


def _resolve_paths(source: dict, base: Path) -> dict:
    for key in ("export_uri", "lake_root"):
        value = source.get(key)
        if isinstance(value, str) and "://" not in value:
            source[key] = str((base / os.path.expandvars(value)).resolve())
    snapshot = source.get("snapshot")
    if isinstance(snapshot, dict) and isinstance(snapshot.get("uri"), str) and "://" not in snapshot["uri"]:
        source["snapshot"] = {**snapshot, "uri": str((base / os.path.expandvars(snapshot["uri"])).resolve())}
    return source


def _describe(file: Path, raw: dict, errors: list) -> str:
    item_errors = any(len(error["loc"]) > 1 for error in errors)
    lines = [f"invalid config file {file}:"]
    for error in errors:
        if error["type"] == "too_short" and item_errors:
            continue  # pydantic adds "at least 1 item" when every item failed; the item errors say why
        location = _location(raw, error["loc"])
        model = SourceConfig if len(error["loc"]) > 1 else LakeloaderConfig
        field = model.model_fields.get(str(error["loc"][-1]))
        message = error["msg"]
        if error["type"] == "missing":
            expected = f" ({field.description})" if field and field.description else ""
            message = f"required key is missing{expected}"
        elif error["type"] == "extra_forbidden":
            message = _unknown_key(str(error["loc"][-1]), model)
        elif error["type"] == "literal_error":
            message = f"expected one of {error['ctx']['expected']}, got {error['input']!r}"
        elif error["type"] == "string_pattern_mismatch" and field and field.description:
            message = f"expected a {field.description}, got {error['input']!r}"
        elif error["type"] == "value_error":
            message = str(error["ctx"]["error"])
        elif error["type"] == "too_short" and error["loc"] == ("sources",):
            message = "expected a list of at least one source"
        lines.append(f"  {location}: {message}")
    return "\n".join(lines)


def _unknown_key(key: str, model: type[BaseModel]) -> str:
    known = list(model.model_fields)
    close = difflib.get_close_matches(key, known, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"unknown key (check its spelling; {hint}known keys: {', '.join(known)})"


def _location(raw: dict, loc: tuple) -> str:
    """Render a pydantic error location, naming sources by their `name` where they have one."""
    parts: list[str] = []
    node: object = raw
    for item in loc:
        if isinstance(item, int):
            name = node[item].get("name") if isinstance(node, list) and isinstance(node[item], dict) else None
            parts[-1] += f"[{item}]" + (f" ({name})" if name else "")
            node = node[item] if isinstance(node, list) else None
        else:
            parts.append(str(item))
            node = node.get(item) if isinstance(node, dict) else None
    return ".".join(parts)
