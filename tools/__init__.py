"""Development tools of the repository (run from its root with ``python -m tools.<name>``); never
imported by Tidelog itself."""
