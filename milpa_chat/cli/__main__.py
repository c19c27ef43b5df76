"""``python -m milpa_chat.cli``: what the ``milpa-chat`` script runs."""

from milpa_chat.cli.main import main

raise SystemExit(main())
