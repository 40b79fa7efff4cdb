"""The best configurations of a study as something a person can paste or deploy.

formats.py  what is exported (``export_data``) and the formats: sh, env, json, yaml
deploy.py   the deploy targets: a ``docker run`` script and a Kubernetes Deployment
lines.py    the lines every format shares: header comments, quoted command, environment
"""

from autotune.export.formats import FORMATS, Format, export, export_data, pareto_data

__all__ = ["FORMATS", "Format", "export", "export_data", "pareto_data"]
