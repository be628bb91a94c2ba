"""The source declarations: one YAML file read by the DAGs, the Spark jobs and the local runner.

Loading validates everything up front, so a typo fails before any run with a message that names the key
and says what is expected.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

CONFIG_ENV_VAR = "LAKELOADER_CONFIG"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CONFIG_PATH = PROJECT_ROOT / "config" / "sources.yaml"

SUPPORTED_FORMATS = ("dataworks_json",)
SOURCE_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,62}$"


class ConfigError(ValueError):
    """The configuration file is missing, unreadable or invalid; the message says what to fix."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SourceConfig(_Strict):
    """One upstream topic export, loaded into one set of silver tables."""

    name: str = Field(pattern=SOURCE_NAME_PATTERN, description="lower-case identifier, used in paths and DAG ids")
    format: Literal[SUPPORTED_FORMATS]  # type: ignore[valid-type]
    export_uri: str = Field(description="where the exporter drops topic files: a directory or s3://bucket/prefix")
    lake_root: str = Field(description="root of the raw/bronze/silver/audit zones: a directory or s3://bucket/prefix")
    tables: tuple[str, ...] | None = Field(default=None, description="include list of 'db.table' names")
    primary_keys: dict[str, tuple[str, ...]] = Field(default_factory=dict, description="'db.table' -> key columns")
    schedule: str = Field(default="0 * * * *", description="cron expression; each run covers one interval")
    start_date: str = Field(default="2026-01-01T00:00:00+00:00", description="first data interval start (ISO 8601)")
    retries: int = Field(default=2, ge=0)
    s3_endpoint_url: str | None = Field(default=None, description="S3-compatible endpoint (e.g. http://127.0.0.1:9000)")

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

    def includes(self, db: str, table: str) -> bool:
        """Whether changes of db.table are loaded (all tables when no include list is given)."""
        return self.tables is None or f"{db}.{table}" in self.tables


class LakeloaderConfig(_Strict):
    sources: tuple[SourceConfig, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_names(self) -> LakeloaderConfig:
        names = [source.name for source in self.sources]
        duplicated = sorted({name for name in names if names.count(name) > 1})
        if duplicated:
            raise ValueError(f"source names must be unique; repeated: {', '.join(duplicated)}")
        return self

    def source(self, name: str) -> SourceConfig:
        for source in self.sources:
            if source.name == name:
                return source
        known = ", ".join(s.name for s in self.sources)
        raise ConfigError(f"unknown source {name!r}; configured sources: {known}")


def _require_qualified(name: str) -> None:
    if not re.fullmatch(r"[^.\s]+\.[^.\s]+", name):
        raise ValueError(f"table {name!r} must be written as 'db.table'")


def config_path(path: str | os.PathLike[str] | None = None) -> Path:
    """The config file in use: the argument, else $LAKELOADER_CONFIG, else config/sources.yaml."""
    return Path(path or os.environ.get(CONFIG_ENV_VAR) or DEFAULT_CONFIG_PATH).resolve()


def load_config(path: str | os.PathLike[str] | None = None) -> LakeloaderConfig:
    """Read and validate the configuration; relative local paths resolve against the file's directory."""
    file = config_path(path)
    try:
        raw = yaml.safe_load(file.read_text())
    except FileNotFoundError as exc:
        raise ConfigError(f"config file {file} not found (set ${CONFIG_ENV_VAR} or create it)") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {file} is not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {file}: expected a mapping with a 'sources' list at the top")
    defaults = raw.pop("defaults", None) or {}
    if not isinstance(defaults, dict):
        raise ConfigError(f"config file {file}: 'defaults' must be a mapping of source keys")
    sources = raw.get("sources")
    if isinstance(sources, list):
        raw["sources"] = [_resolve_paths({**defaults, **s}, file.parent) if isinstance(s, dict) else s for s in sources]
    try:
        return LakeloaderConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_describe(file, raw, exc)) from None


def _resolve_paths(source: dict, base: Path) -> dict:
    for key in ("export_uri", "lake_root"):
        value = source.get(key)
        if isinstance(value, str) and "://" not in value:
            source[key] = str((base / os.path.expandvars(value)).resolve())
    return source


def _describe(file: Path, raw: dict, exc: ValidationError) -> str:
    lines = [f"invalid config file {file}:"]
    for error in exc.errors():
        location = _location(raw, error["loc"])
        message = error["msg"]
        if error["type"] == "missing":
            message = "required key is missing"
        elif error["type"] == "extra_forbidden":
            message = "unknown key (check its spelling)"
        elif error["type"] == "literal_error":
            message = f"expected one of {', '.join(SUPPORTED_FORMATS)}, got {error['input']!r}"
        lines.append(f"  {location}: {message}")
    return "\n".join(lines)


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
