"""Temporary: the old generic names of the Telegram records, for code not yet moved to the new ones."""

OLD_TELEGRAM_NAMES = {
    "ApiCall": "TelegramApiCall",
    "CallbackQueryRecord": "TelegramCallbackQuery",
    "Chat": "TelegramChat",
    "ChatAction": "TelegramChatAction",
    "ChatMessage": "TelegramMessage",
    "MessageVersion": "TelegramMessageVersion",
    "UpdateRecord": "TelegramUpdate",
    "UploadedFile": "TelegramFile",
    "User": "TelegramUser",
    "WebhookDelivery": "TelegramWebhookDelivery",
}
