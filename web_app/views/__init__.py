"""Staff pages: chat, memory browser (memories, sessions, imports) and context settings."""
