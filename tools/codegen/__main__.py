"""``python -m tools.codegen``: see :mod:`tools.codegen`."""

from tools.codegen import main

raise SystemExit(main())
