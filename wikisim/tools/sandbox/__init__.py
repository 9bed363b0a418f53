"""The python tool's sandbox: config and result records, the host-side runner, the child bootstrap."""
