"""wikisim spoken by other stacks: the HTTP server and its compatible routes, MCP, verl and TRL adapters."""
