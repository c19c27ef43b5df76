"""The proxy's TOML file: the upstream MCP servers, how their tools are gated, and who decides.

Read with :func:`load_proxy_config` (a path) or :meth:`ProxyConfig.from_toml_text`; every mistake is a
:class:`~milpa_chat.errors.DeclarationError` naming the file, the key and the fix. ``${NAME}`` in a string
(an auth header, an env value) is read from the environment when the file is loaded, so secrets stay out
of the file; a variable that is not set is an error, never an empty string.

See ``docs/mcp.md`` ("The gating proxy") for the reference.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from milpa_chat.errors import DeclarationError

__all__ = ["ProxyConfig", "ToolRule", "UpstreamConfig", "VerifyRule", "load_proxy_config"]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_PREFIX = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,40}$")
#: The longest a proxied call may wait in its own ``tools/call`` for a person's decision.
MAX_WAIT_SECONDS = 3600.0


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class VerifyRule(_Strict):
    """``verify = {approver_scopes = [...], quorum = 1, ...}``: approvers decide on their chats."""

    approver_scopes: tuple[str, ...] = Field(min_length=1)
    quorum: int = Field(1, ge=1)
    four_eyes: bool = True
    expires_in: float = Field(3600.0, gt=0)
    risk: Literal["low", "high"] | None = None


class ToolRule(_Strict):
    """``[upstream.tools.NAME]``: what the file says of one upstream tool, over what its annotations say."""

    mutating: bool | None = None
    confirm: bool | None = None
    verify: VerifyRule | None = None
    scopes: tuple[str, ...] | None = None
    risk: Literal["low", "high"] | None = None
    wait_seconds: float | None = Field(None, ge=0, le=MAX_WAIT_SECONDS)
    hidden: bool = False
    acts_on: str | None = None
    effects: dict[str, str] | None = None


class UpstreamConfig(_Strict):
    """``[[upstream]]``: one MCP server, a stdio ``command`` or a streamable HTTP ``url``."""

    name: str = Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_\-]{0,40}$")
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    prefix: str | None = None
    timeout: float = Field(60.0, gt=0)
    connect_timeout: float = Field(30.0, gt=0)
    scopes: tuple[str, ...] = ()
    wait_seconds: float = Field(0.0, ge=0, le=MAX_WAIT_SECONDS)
    tools: dict[str, ToolRule] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_transport(self) -> UpstreamConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError(
                f'upstream {self.name!r} needs exactly one of command = "..." (stdio) or '
                f'url = "https://..." (streamable HTTP)'
            )
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"upstream {self.name!r}: url must start with http:// or https://, got {self.url!r}")
        if self.command is None and (self.args or self.env or self.cwd):
            raise ValueError(f"upstream {self.name!r}: args, env and cwd are for a stdio command, not a url")
        if self.url is None and self.headers:
            raise ValueError(f"upstream {self.name!r}: headers are for a url; give a stdio command env instead")
        if self.prefix is not None and self.prefix and not _PREFIX.match(self.prefix):
            raise ValueError(f"upstream {self.name!r}: prefix {self.prefix!r} may hold letters, digits, '_', '-', '.'")
        return self

    @property
    def tool_prefix(self) -> str:
        """What every imported tool name starts with (``prefix``; none by default)."""
        return self.prefix or ""

    def rule(self, tool: str) -> ToolRule:
        return self.tools.get(tool) or ToolRule.model_validate({})


class TelegramSettings(_Strict):
    """``[telegram]``: the bot that shows approval cards (its token read from ``token_env``)."""

    token_env: str = "TELEGRAM_TOKEN"
    base_url: str | None = None
    polling: bool = True


class ProxyConfig(_Strict):
    """The whole file: ``[proxy]`` settings, ``[[upstream]]`` servers, optional ``[telegram]``."""

    name: str = "milpa-chat-proxy"
    store: str | None = None
    identities: str | None = None
    tokens: str | None = None
    wait_seconds: float = Field(0.0, ge=0, le=MAX_WAIT_SECONDS)
    upstream: tuple[UpstreamConfig, ...] = Field((), validate_default=True)
    telegram: TelegramSettings | None = None
    base: Path = Path(".")

    @field_validator("upstream", mode="after")
    @classmethod
    def _distinct(cls, value: tuple[UpstreamConfig, ...]) -> tuple[UpstreamConfig, ...]:
        if not value:
            raise ValueError(
                "the file names no upstream; add an [[upstream]] table with a name and a command "
                "(stdio) or a url (streamable HTTP)"
            )
        names = [u.name for u in value]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"two upstreams are named {twice[0]!r}; give each [[upstream]] its own name")
        return value

    def path(self, value: str | None) -> Path | None:
        """A path the file names, relative to the file's folder."""
        return None if value is None else (self.base / value)

    @classmethod
    def from_mapping(
        cls, data: Mapping[str, Any], *, where: str = "the proxy configuration", base: Path | None = None
    ) -> ProxyConfig:
        body = dict(_expand(data, where))
        settings = dict(body.pop("proxy", {}) or {})
        try:
            return cls.model_validate({**settings, **body, "base": base or Path(".")})
        except ValidationError as exc:
            raise DeclarationError(f"{where}: {_explain(exc)}") from None

    @classmethod
    def from_toml_text(
        cls, text: str, *, where: str = "the proxy configuration", base: Path | None = None
    ) -> ProxyConfig:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise DeclarationError(f"{where} is not valid TOML: {exc}") from None
        return cls.from_mapping(data, where=where, base=base)


def load_proxy_config(path: str | Path) -> ProxyConfig:
    """Read the proxy's TOML file (paths inside it are relative to its folder)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise DeclarationError(f"cannot read the proxy configuration {str(file)!r}: {exc.strerror or exc}") from None
    return ProxyConfig.from_toml_text(text, where=str(file), base=file.resolve().parent)


def _expand(value: Any, where: str) -> Any:
    if isinstance(value, str):

        def var(m: re.Match[str]) -> str:
            found = os.environ.get(m.group(1))
            if found is None:
                raise DeclarationError(
                    f"{where} uses ${{{m.group(1)}}}, which is not set in the environment; "
                    f"export {m.group(1)}=... before starting the proxy"
                )
            return found

        return _VAR.sub(var, value)
    if isinstance(value, Mapping):
        return {k: _expand(v, where) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, where) for v in value]
    return value


def _explain(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "is not a setting the proxy knows (check its spelling against docs/mcp.md)"
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)
