"""A form generated from a tool's JSON schema, with each field's error shown beside it.

Kinds of field, chosen from the property's schema:

* ``enum`` (also a nullable one) -> a dropdown, with "(not set)" when the field may be left out;
* ``boolean`` -> a checkbox; a nullable boolean without a default -> a true/false/(not set) dropdown;
* ``integer`` / ``number`` with a default -> a number box (bounded by ``minimum``/``maximum``,
  which is also how ``Param(clamp=...)`` ranges appear), else a text box read as a number;
* ``string`` -> a text box (a password box for secret-named fields, a text area for long text);
* ``array`` of strings or numbers -> a tags box; anything else (objects, arrays of objects,
  unions) -> JSON in a text area, checked when the form is read.

Empty text leaves the field out, so the tool's default applies or the pipeline reports the
missing field by name.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets

from milpa_chat.errors import MilpaError
from milpa_chat.renderers import is_secret_key

__all__ = ["EditPanel", "FieldError", "FormField", "SchemaForm"]

NOT_SET = "(not set)"
_MISSING = object()
_LABEL_WIDTH = "170px"


class FieldError(MilpaError, ValueError):
    """A value the form itself cannot read (bad JSON, text that is not a number)."""


@dataclass(frozen=True, slots=True)
class _Spec:
    """A property's schema with ``$ref`` resolved and ``null`` taken out of its type."""

    schema: dict[str, Any]
    types: tuple[str, ...]
    nullable: bool
    required: bool

    @property
    def default(self) -> Any:
        return self.schema.get("default", _MISSING)

    @property
    def optional(self) -> bool:
        """True when leaving the field out is fine (not required; no default or a null one)."""
        return not self.required and self.default in (_MISSING, None)


def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any]) -> dict[str, Any]:
    node = dict(schema)
    for _ in range(16):
        ref = node.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#/$defs/"):
            break
        target = root.get("$defs", {}).get(ref.removeprefix("#/$defs/"), {})
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _spec(schema: Mapping[str, Any], root: Mapping[str, Any], required: bool) -> _Spec:
    node = _resolve(schema, root)
    nullable = False
    alternatives = node.get("anyOf") or node.get("oneOf")
    if isinstance(alternatives, list):
        real = [a for a in alternatives if not (isinstance(a, dict) and a.get("type") == "null")]
        nullable = len(real) < len(alternatives)
        if len(real) == 1 and isinstance(real[0], dict):
            extra = {k: v for k, v in node.items() if k not in ("anyOf", "oneOf")}
            node = {**_resolve(real[0], root), **extra}
    raw = node.get("type")
    types = tuple(raw) if isinstance(raw, list) else (raw,) if isinstance(raw, str) else ()
    nullable = nullable or "null" in types or None in node.get("enum", ())
    return _Spec(node, tuple(t for t in types if t != "null"), nullable, required)


def _hint(spec: _Spec) -> str:
    s = spec.schema
    low, high = s.get("minimum", s.get("exclusiveMinimum")), s.get("maximum", s.get("exclusiveMaximum"))
    words = [" or ".join(spec.types) or "JSON"]
    if low is not None or high is not None:
        words.append(f"{'' if low is None else low} – {'' if high is None else high}")
    if "default" in s and s["default"] is not None and s["default"] != "":
        words.append(f"default {json.dumps(s['default'], ensure_ascii=False)}")
    return ", ".join(words)


class FormField:
    """One property: its input widget, a hint, and the error shown beside it."""

    def __init__(self, name: str, spec: _Spec) -> None:
        self.name = name
        self.spec = spec
        self.kind, self.widget = _make_input(name, spec)
        self.error = widgets.HTML(value="")
        description = str(spec.schema.get("description") or spec.schema.get("title") or "")
        star = " *" if spec.required else ""
        self.label = widgets.HTML(
            value=f"<b>{html.escape(name)}</b>{star}<br><small>{html.escape(description)}</small>",
            layout=widgets.Layout(width=_LABEL_WIDTH),
        )
        self.hint = widgets.HTML(value=f"<small style='color:#666'>{html.escape(_hint(spec))}</small>")
        self.row = widgets.HBox([self.label, self.widget, widgets.VBox([self.hint, self.error])])

    @property
    def value(self) -> Any:
        return self.widget.value

    @value.setter
    def value(self, new: Any) -> None:
        """Fill the field from a JSON value (what a user would type)."""
        if self.kind in ("json", "number-text"):
            self.widget.value = "" if new is None else json.dumps(new, ensure_ascii=False)
        elif self.kind in ("enum", "tristate"):
            self.widget.value = NOT_SET if new is None else _option_label(new)
        else:
            self.widget.value = new

    def show_error(self, message: str) -> None:
        self.error.value = f"<span style='color:#d32f2f'>⚠ {html.escape(message)}</span>"

    def clear_error(self) -> None:
        self.error.value = ""

    @property
    def error_text(self) -> str:
        """The error shown beside the field, as plain text ("" when none)."""
        return html.unescape(self.error.value.split(">", 1)[-1].rsplit("<", 1)[0]).removeprefix("⚠ ")

    def read(self) -> Any:
        """The JSON value to send, ``_MISSING`` to leave the field out; raises :class:`FieldError`."""
        return _READERS[self.kind](self)


def _option_label(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _make_input(name: str, spec: _Spec) -> tuple[str, Any]:
    s, default = spec.schema, spec.default
    width = widgets.Layout(width="320px")
    if "enum" in s:
        options = [_option_label(v) for v in s["enum"] if v is not None]
        if spec.optional or spec.nullable:
            options.insert(0, NOT_SET)
        value = _option_label(default) if default not in (_MISSING, None) else options[0]
        return "enum", widgets.Dropdown(options=options, value=value, layout=width)
    if spec.types == ("boolean",):
        if spec.optional:
            return "tristate", widgets.Dropdown(options=[NOT_SET, "true", "false"], value=NOT_SET, layout=width)
        return "boolean", widgets.Checkbox(value=bool(default is True), indent=False)
    if spec.types in (("integer",), ("number",)):
        return _number_input(spec, width)
    if spec.types == ("string",):
        text = "" if not isinstance(default, str) else default
        if is_secret_key(name):
            return "text", widgets.Password(value=text, layout=width)
        if int(s.get("maxLength", 0)) > 200:
            return "text", widgets.Textarea(value=text, layout=width)
        return "text", widgets.Text(value=text, layout=width, placeholder=spec.types[0])
    if spec.types == ("array",):
        return _array_input(spec, width)
    text = "" if default in (_MISSING, None) else json.dumps(default, ensure_ascii=False, indent=1)
    return "json", widgets.Textarea(value=text, placeholder="JSON", layout=widgets.Layout(width="320px", height="72px"))


def _number_input(spec: _Spec, width: widgets.Layout) -> tuple[str, Any]:
    s, default = spec.schema, spec.default
    integer = spec.types == ("integer",)
    if not isinstance(default, int | float) or isinstance(default, bool):
        return "number-text", widgets.Text(value="", placeholder=_hint(spec), layout=width)
    low, high = s.get("minimum"), s.get("maximum")
    if low is not None and high is not None:
        box = widgets.BoundedIntText if integer else widgets.BoundedFloatText
        return "number", box(value=default, min=low, max=high, layout=width)
    return "number", (widgets.IntText if integer else widgets.FloatText)(value=default, layout=width)


def _array_input(spec: _Spec, width: widgets.Layout) -> tuple[str, Any]:
    raw = spec.schema.get("items")
    items: dict[str, Any] = raw if isinstance(raw, dict) else {}
    default = spec.default if isinstance(spec.default, list) else []
    kind = items.get("type")
    if kind == "string" and all(isinstance(v, str) for v in default):
        allowed = [v for v in items.get("enum", []) if isinstance(v, str)]
        return "tags", widgets.TagsInput(value=default, allowed_tags=allowed, allow_duplicates=True, layout=width)
    if kind in ("integer", "number") and all(isinstance(v, int | float) for v in default):
        box = widgets.IntsInput if kind == "integer" else widgets.FloatsInput
        return "tags", box(value=default, allow_duplicates=True, layout=width)
    text = json.dumps(default, ensure_ascii=False) if spec.default is not _MISSING else ""
    return "json", widgets.Textarea(value=text, placeholder="JSON array", layout=width)


def _read_enum(f: FormField) -> Any:
    chosen = f.widget.value
    if chosen == NOT_SET:
        return _MISSING if f.spec.optional else None
    for v in f.spec.schema["enum"]:
        if v is not None and _option_label(v) == chosen:
            return v
    raise FieldError(f"choose one of: {', '.join(str(o) for o in f.widget.options)}")


def _read_tristate(f: FormField) -> Any:
    return {NOT_SET: _MISSING, "true": True, "false": False}[f.widget.value]


def _read_text(f: FormField) -> Any:
    text = f.widget.value
    return _MISSING if text == "" else text


def _read_number_text(f: FormField) -> Any:
    text = f.widget.value.strip()
    if not text:
        return _MISSING
    if text.lower() in ("null", "none") and f.spec.nullable:
        return None
    integer = f.spec.types == ("integer",)
    try:
        number: float = int(text) if integer else float(text)
    except ValueError:
        kind = "a whole number" if integer else "a number"
        raise FieldError(f"{text!r} is not {kind}; type digits such as 42") from None
    if not math.isfinite(number):
        raise FieldError("type a finite number")
    return int(text) if not integer and text.lstrip("+-").isdigit() else number


def _read_tags(f: FormField) -> Any:
    values = list(f.widget.value)
    if not values and not f.spec.required and not f.spec.default:
        return _MISSING
    return values


def _read_json(f: FormField) -> Any:
    text = f.widget.value.strip()
    if not text:
        return _MISSING
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FieldError(f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    if f.spec.types == ("object",) and not isinstance(value, dict) and not (value is None and f.spec.nullable):
        raise FieldError('must be a JSON object, like {"key": "value"}')
    if f.spec.types == ("array",) and not isinstance(value, list):
        raise FieldError('must be a JSON array, like ["a", "b"]')
    return value


_READERS = {
    "enum": _read_enum,
    "tristate": _read_tristate,
    "boolean": lambda f: bool(f.widget.value),
    "number": lambda f: f.widget.value,
    "number-text": _read_number_text,
    "text": _read_text,
    "tags": _read_tags,
    "json": _read_json,
}


class SchemaForm:
    """The form for one input schema: ``values()`` reads it, ``show_errors()`` marks fields."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        raw = schema.get("properties")
        props: dict[str, Any] = raw if isinstance(raw, dict) else {}
        required = set(schema.get("required", ()))
        self.fields: dict[str, FormField] = {
            name: FormField(name, _spec(prop, schema, name in required))
            for name, prop in props.items()
            if isinstance(prop, dict)
        }
        self.general_error = widgets.HTML(value="")
        rows = [f.row for f in self.fields.values()] or [widgets.HTML(value="<i>This tool takes no arguments.</i>")]
        self.widget = widgets.VBox([*rows, self.general_error])

    def close(self) -> None:
        """Close every widget of the form (the kernel forgets them; the front end removes them)."""
        pending = [self.widget]
        while pending:
            widget = pending.pop()
            pending.extend(getattr(widget, "children", ()))
            widget.close()

    def __getitem__(self, name: str) -> FormField:
        try:
            return self.fields[name]
        except KeyError:
            raise KeyError(f"no field {name!r}; the fields are: {', '.join(self.fields) or 'none'}") from None

    def fill(self, values: Mapping[str, Any]) -> None:
        """Set fields from a dict of JSON values, as a user would type them."""
        for name, value in values.items():
            self[name].value = value

    def values(self) -> dict[str, Any] | None:
        """The arguments to send, or ``None`` when a field cannot be read (its error is shown)."""
        self.clear_errors()
        out: dict[str, Any] = {}
        ok = True
        for name, f in self.fields.items():
            try:
                value = f.read()
            except FieldError as exc:
                f.show_error(str(exc))
                ok = False
                continue
            if value is not _MISSING:
                out[name] = value
        return out if ok else None

    def clear_errors(self) -> None:
        self.general_error.value = ""
        for f in self.fields.values():
            f.clear_error()

    def show_errors(self, errors: Iterable[Mapping[str, Any]]) -> None:
        """Show ``[{path, message}]`` (the pipeline's ``data.errors``) beside the fields they name."""
        general: list[str] = []
        per_field: dict[str, list[str]] = {}
        for error in errors:
            path, message = str(error.get("path") or ""), str(error.get("message") or "invalid")
            head, _, rest = path.partition(".")
            if head in self.fields:
                per_field.setdefault(head, []).append(f"{rest}: {message}" if rest else message)
            else:
                general.append(f"{path}: {message}" if path else message)
        for name, messages in per_field.items():
            self.fields[name].show_error("; ".join(messages))
        if general:
            text = html.escape("; ".join(general))
            self.general_error.value = f"<span style='color:#d32f2f'>⚠ {text}</span>"


class EditPanel:
    """The form for editing a pending approval's arguments: ``schema``'s fields prefilled with ``values``
    (what would run), "Save edit" and "Cancel". ``on_save(arguments)`` gets what the form reads.
    Secret fields (``api_key``, ``password``, ...) are neither shown nor changed: they keep their value."""

    def __init__(
        self,
        schema: Mapping[str, Any],
        values: Mapping[str, Any],
        *,
        on_save: Callable[[dict[str, Any]], None],
        on_cancel: Callable[[], None],
    ) -> None:
        props = schema.get("properties")
        shown = {k: v for k, v in (props if isinstance(props, dict) else {}).items() if not is_secret_key(k)}
        self.form = SchemaForm(
            {**schema, "properties": shown, "required": [r for r in schema.get("required", ()) if r in shown]}
        )
        self.form.fill({k: v for k, v in values.items() if k in self.form.fields})
        self.save_button = widgets.Button(
            description="Save edit",
            button_style="primary",
            tooltip="checked as a new call; the approvals so far are reset",
        )
        self.cancel_button = widgets.Button(description="Cancel")
        self.save_button.on_click(lambda _b: self._save(on_save))
        self.cancel_button.on_click(lambda _b: on_cancel())
        note = widgets.HTML(
            value="<small>Edit the arguments; another approver then decides the edited version.</small>"
        )
        self.widget = widgets.VBox([note, self.form.widget, widgets.HBox([self.save_button, self.cancel_button])])

    def _save(self, on_save: Callable[[dict[str, Any]], None]) -> None:
        values = self.form.values()
        if values is not None:
            on_save(values)

    def show_refusal(self, errors: Mapping[str, str], message: str) -> None:
        """A refused edit: each field's error beside it, or the reason under the form."""
        self.form.show_errors([{"path": k, "message": v} for k, v in errors.items()] or [{"message": message}])
