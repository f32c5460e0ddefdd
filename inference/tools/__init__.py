"""Tools in the chat: the built-in ones, MCP servers staff registered, and one call's run."""
