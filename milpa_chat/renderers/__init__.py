"""Renderers: a ToolResult or an approval card as each channel's native payload."""
