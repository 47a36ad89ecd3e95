"""``python -m tidelog`` runs the ``tidelog`` command line."""

from tidelog.cli.main import main

raise SystemExit(main())
