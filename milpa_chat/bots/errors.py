"""Why a bot could not start, in one sentence (the runnable bots print it and exit with status 2)."""

from __future__ import annotations

from milpa_chat.errors import MilpaError

__all__ = ["BotStartupError"]


class BotStartupError(MilpaError, RuntimeError):
    """The platform refused the bot's credentials or could not be reached; the message says which, and
    what to check. Raised by the start methods of ``TelegramBot`` and ``SlackBot``."""


def telegram_startup_error(exc: BaseException, base_url: str, token: str = "") -> BotStartupError | None:
    """A one-line :class:`BotStartupError` for what python-telegram-bot raised while starting, or ``None``.
    ``base_url`` is shown without ``token`` (PTB's ``bot.base_url`` ends with it)."""
    from telegram.error import InvalidToken, NetworkError

    if token:
        base_url = base_url.replace(token, "<token>")
    if isinstance(exc, InvalidToken):
        return BotStartupError(
            "Telegram rejected the bot token (TELEGRAM_TOKEN): check it with @BotFather (/token) and try again"
        )
    if isinstance(exc, NetworkError):
        return BotStartupError(
            f"cannot reach the Telegram Bot API at {base_url} ({exc.message}); check the network, or TELEGRAM_BASE_URL"
        )
    return None


def slack_startup_error(exc: BaseException, base_url: str) -> BotStartupError | None:
    """A one-line :class:`BotStartupError` for what slack_sdk/aiohttp raised on ``auth.test``, or ``None``."""
    import aiohttp
    from slack_sdk.errors import SlackApiError

    if isinstance(exc, SlackApiError):
        error = exc.response.get("error")
        if error in ("invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired"):
            return BotStartupError(
                f"Slack rejected the bot token (SLACK_BOT_TOKEN: {error}); copy the Bot User "
                "OAuth Token (xoxb-…) again from your app's 'OAuth & Permissions' page"
            )
        return BotStartupError(f"Slack refused auth.test ({error})")
    if isinstance(exc, aiohttp.ClientError | TimeoutError | OSError):
        return BotStartupError(
            f"cannot reach the Slack Web API at {base_url} ({type(exc).__name__}: {exc}); "
            "check the network, or SLACK_BASE_URL"
        )
    return None
