"""Loopback stand-ins for external HTTP APIs (the only stand-ins the tests allow)."""
