"""The vocabulary every layer above shares (it imports only ``models`` and ``errors``).

records.py   what a study keeps and hands out: trial, study, skip and tracker records
summary.py   the one typed summary of a study every reader shows (figures, gains, ablation)
fmt.py       how numbers and configurations are written for people
redact.py    secrets masked in whatever is stored or shown
registry.py  name -> implementation registries for the plug-in interfaces
"""

from autotune.core import fmt, records, redact, registry, summary

__all__ = ["fmt", "records", "redact", "registry", "summary"]
