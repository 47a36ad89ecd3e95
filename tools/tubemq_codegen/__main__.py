"""``python -m tools.tubemq_codegen``: see :mod:`tools.tubemq_codegen`."""

from tools.tubemq_codegen import main

raise SystemExit(main())
