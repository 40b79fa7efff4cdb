"""ray_cluster.yaml is a valid cluster-launcher config with the node types docs/cluster.md names."""

from __future__ import annotations

from pathlib import Path

import yaml

from autotune.dispatch.ray import GPU_NODE_RESOURCE

ROOT = Path(__file__).resolve().parents[2]


def test_ray_cluster_yaml_passes_the_launchers_own_validation() -> None:
    from ray.autoscaler._private.util import prepare_config, validate_config

    config = prepare_config(yaml.safe_load((ROOT / "ray_cluster.yaml").read_text()))
    validate_config(config)  # raises on a schema error
    types = config["available_node_types"]
    head = types[config["head_node_type"]]
    assert head["resources"].get("CPU") == 0 and not head["resources"].get("GPU")
    gpu_types = [t for name, t in types.items() if name != config["head_node_type"]]
    assert gpu_types and all(t["resources"]["GPU"] == 8 for t in gpu_types)
    assert all(t["resources"][GPU_NODE_RESOURCE] == 1 for t in gpu_types)
    setup = " ".join(config["setup_commands"])
    assert "pip install" in setup and "autotune" in setup
