"""``python -m milpa_chat.mcp --tools pkg.mod:obj [--http PORT --tokens FILE]``."""

from milpa_chat.mcp.cli import main

raise SystemExit(main())
