"""Reading a finished (or running) study for people."""
