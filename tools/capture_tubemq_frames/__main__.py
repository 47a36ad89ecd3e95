"""``python -m tools.capture_tubemq_frames``: see :mod:`tools.capture_tubemq_frames`."""

from tools.capture_tubemq_frames import main

raise SystemExit(main())
