"""The built-in web console and its JSON API (docs/console.md)."""

from tidelog.web.console.app import Console

__all__ = ["Console"]
