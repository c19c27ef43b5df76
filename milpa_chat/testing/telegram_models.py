"""Temporary alias of :mod:`milpa_chat.testing.telegram.models` (the old module path and names); import from there."""

from milpa_chat.testing.telegram.models import *  # noqa: F403
from milpa_chat.testing.telegram.models import TelegramApiCall as ApiCall  # noqa: F401
from milpa_chat.testing.telegram.models import TelegramCallbackQuery as CallbackQueryRecord  # noqa: F401
from milpa_chat.testing.telegram.models import TelegramChat as Chat  # noqa: F401
from milpa_chat.testing.telegram.models import TelegramChatAction as ChatAction  # noqa: F401
from milpa_chat.testing.telegram.models import TelegramFile as UploadedFile  # noqa: F401
from milpa_chat.testing.telegram.models import TelegramMessage as ChatMessage  # noqa: F401
from milpa_chat.testing.telegram.models import TelegramMessageVersion as MessageVersion  # noqa: F401
from milpa_chat.testing.telegram.models import TelegramUpdate as UpdateRecord  # noqa: F401
from milpa_chat.testing.telegram.models import TelegramUser as User  # noqa: F401
from milpa_chat.testing.telegram.models import TelegramWebhookDelivery as WebhookDelivery  # noqa: F401
