"""``python -m autotune.sim``: the stand-in SGLang server (see autotune.sim.server)."""

from autotune.sim.server import main

raise SystemExit(main())
