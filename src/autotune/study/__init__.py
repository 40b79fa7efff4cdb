"""The study: the Optuna side of autotune, on the driver's machine.

driver.py    the loop: propose, screen, launch, collect, stop
tell.py      what Optuna is told about a trial, and what is written down with it
ledger.py    everything kept in Optuna storage, written and read as typed records
outcome.py   a trial's result -> Optuna state, value and constraints
deadends.py  configurations never launched again after a permanent failure
storage.py   the storage, the sampler (autotune.search's) and the one-driver-per-study lock
events.py    what the driver reports to whoever shows progress
"""
