"""Runnable example assistants: ``python -m bots.telegram_assistant``."""
