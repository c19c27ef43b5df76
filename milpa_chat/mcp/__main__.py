"""``python -m milpa_chat.mcp --tools pkg.mod:obj [--http PORT --tokens FILE]``."""

from milpa_chat.cli.mcp import main

raise SystemExit(main())
