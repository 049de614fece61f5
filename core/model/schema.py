"""Settings described once: each pydantic field's title, unit, range and help drive the settings dialog, the
per-chat overrides, the validation messages and the README's settings table.

A setting is a field with a `title` (the label in the window) and a `description` (its help); `json_schema_extra`
may give a `unit`, a `page` (the settings page it is edited on, when a model's fields are on two) and `line` (true:
a string edited on one line, such as a URL, not as a block of text). A unit starting with "%" marks a fraction
shown as a percentage: 0.8 is shown and typed as 80.
The range comes from the field's ge/gt/le/lt/max_length constraints. Fields without a title are stored but are
not settings a person edits (a chat's model, provider and base URL are set elsewhere).
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Any, Literal

import annotated_types
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

# How a setting is edited: a check box, a list of choices, a number box (an optional one may be empty), a text.
SettingKind = Literal["bool", "choice", "int", "optional_int", "float", "text", "line"]


@dataclass(frozen=True)
class SettingField:
    name: str
    title: str
    help: str
    kind: SettingKind
    default: Any
    unit: str = ""
    page: str = ""
    choices: tuple[str, ...] = ()
    low: float | None = None
    low_inclusive: bool = True
    high: float | None = None
    high_inclusive: bool = True
    max_length: int | None = None

    @property
    def percent(self) -> bool:
        return self.unit.startswith("%")

    def shown(self, value: Any) -> str:
        """The value as the window shows it (a fraction as a percentage, no unit)."""
        if value is None:
            return ""
        if self.kind == "bool":
            return "on" if value else "off"
        if self.percent:
            return f"{round(value * 100, 6):g}"
        return str(value)

    def parse(self, text: str) -> Any:
        """A typed number as the value stored (80 for a percentage is 0.8); ValueError says what is wrong."""
        raw = text.strip().removesuffix("%").strip() if self.percent else text.strip()
        if self.kind == "optional_int" and not raw:
            return None
        try:
            number = float(raw) if self.kind == "float" else int(raw)
        except ValueError:
            raise ValueError(f"must be {'a number' if self.kind == 'float' else 'a whole number'}, "
                             f"not {text.strip()!r}") from None
        return number / 100 if self.percent else number

    def with_unit(self, value: Any) -> str:
        shown = self.shown(value)
        if not self.unit or not shown:
            return shown
        return f"{shown} {self.unit}"

    def range_text(self) -> str:
        """'from 1 to 1000 messages', 'above 0 and at most 100 % of the budget', '' when unbounded."""
        low = None if self.low is None else self.shown(self.low)
        high = None if self.high is None else self.shown(self.high)
        if low is not None and high is not None and self.low_inclusive and self.high_inclusive:
            parts = [f"from {low} to {high}"]
        else:
            parts = []
            if low is not None:
                parts.append(f"at least {low}" if self.low_inclusive else f"above {low}")
            if high is not None:
                parts.append(f"at most {high}" if self.high_inclusive else f"below {high}")
        if parts and self.unit:
            parts[-1] += f" {self.unit}"
        if self.max_length is not None:
            parts.append(f"at most {self.max_length} characters")
        return " and ".join(parts)


def setting_fields(model: type[BaseModel]) -> list[SettingField]:
    """The model's settings (fields with a title) in declaration order."""
    fields = []
    for name, info in model.model_fields.items():
        if not info.title:
            continue
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        kind, choices = _kind(info.annotation)
        if kind == "text" and extra.get("line"):
            kind = "line"
        bounds: dict[str, Any] = {}
        for rule in info.metadata:
            if isinstance(rule, annotated_types.Ge):
                bounds.update(low=rule.ge, low_inclusive=True)
            elif isinstance(rule, annotated_types.Gt):
                bounds.update(low=rule.gt, low_inclusive=False)
            elif isinstance(rule, annotated_types.Le):
                bounds.update(high=rule.le, high_inclusive=True)
            elif isinstance(rule, annotated_types.Lt):
                bounds.update(high=rule.lt, high_inclusive=False)
            elif isinstance(rule, annotated_types.MaxLen):
                bounds.update(max_length=rule.max_length)
        fields.append(SettingField(name=name, title=info.title, help=info.description or "", kind=kind,
                                   default=info.get_default(call_default_factory=True),
                                   unit=str(extra.get("unit", "")), page=str(extra.get("page", "")),
                                   choices=choices, **bounds))
    return fields


def _kind(annotation: Any) -> tuple[SettingKind, tuple[str, ...]]:
    if typing.get_origin(annotation) is Literal:
        return "choice", tuple(str(choice) for choice in typing.get_args(annotation))
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        inner = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if inner == [int]:
            return "optional_int", ()
    kinds: dict[Any, SettingKind] = {bool: "bool", int: "int", float: "float", str: "text"}
    if annotation not in kinds:
        raise TypeError(f"a setting of type {annotation!r} has no editor; use bool, int, float, str or a Literal")
    return kinds[annotation], ()


def setting_errors(model: type[BaseModel], values: dict[str, Any]) -> dict[str, str]:
    """Validate `values` against `model`: {field: reason in the window's words}, '' for rules across fields."""
    try:
        model(**values)
    except ValidationError as exc:
        by_name = {field.name: field for field in setting_fields(model)}
        errors: dict[str, str] = {}
        for err in exc.errors():
            name = str(err["loc"][0]) if err["loc"] else ""
            field = by_name.get(name)
            errors[name] = _reason(field, err) if field else err["msg"].removeprefix("Value error, ")
        return errors
    return {}


def _reason(field: SettingField, err: ErrorDetails) -> str:
    kind = err["type"]
    if kind == "value_error":  # a validator's own words
        return err["msg"].removeprefix("Value error, ")
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal", "string_too_long"):
        return f"must be {field.range_text()}"
    if field.kind == "choice":
        return f"must be one of {', '.join(field.choices)}"
    if field.kind == "bool":
        return "must be on or off"
    if field.kind in ("int", "optional_int"):
        return "must be a whole number" + (" or empty" if field.kind == "optional_int" else "")
    if field.kind == "float":
        return "must be a number"
    return "must be text"


def settings_table(sections: list[tuple[str, type[BaseModel]]]) -> str:
    """The README's settings table (markdown): one row per setting, by section."""
    rows = ["| Setting | Default | Range | What it does |", "|---|---|---|---|"]
    for section, model in sections:
        for field in setting_fields(model):
            if field.kind == "choice":
                allowed = " / ".join(field.choices)
            elif field.kind == "bool":
                allowed = "on / off"
            else:
                allowed = field.range_text() or "any"
            default = field.with_unit(field.default) if field.default not in ("", None) else "(empty)"
            rows.append(f"| {section}: {field.title} | {default} | {allowed} | {field.help} |")
    return "\n".join(rows) + "\n"
