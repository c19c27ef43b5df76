"""``python -m milpa_chat.playground``: the same as ``milpa-chat playground``."""

from milpa_chat.playground.cli import main

raise SystemExit(main())
