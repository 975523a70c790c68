"""weft: the Python client of Weft.

Write and read versioned tables on a Weft server (``flightd serve``), scan
them as PyTorch datasets, and train on deterministic weighted mixes that
resume exactly on any number of ranks::

    import weft
    client = weft.Client("grpc://127.0.0.1:8815")
    robots = client.create_project("robotics").branch("main")
    robots.table("grasps").append(pyarrow_table)
    loader = weft.TrainLoader(weft.Recipe(seed=1, batch_size=64, components=[
        weft.Component(robots.table("grasps"), weight=1.0)]))

``Client``, tables and recipes need only pyarrow; ``ScanDataset`` and
``TrainLoader`` import torch (>= 1.13) when first used.
"""

from typing import TYPE_CHECKING, Any

from ._client import (Client, Commit, Connection, Project, Ref, ScanPlan, ScanRequest, Shard, Shards, Table,
                      compute_shards)
from ._errors import (Aborted, AlreadyExists, InvalidArgument, NotFound, PermissionDenied, ServerError, TransformError,
                      Unauthenticated, Unavailable, WeftError)
from ._recipe import Component, Recipe, Rows, ShuffleConfig, Video, Window, Windows, World

if TYPE_CHECKING:
    from ._checkpoints import Checkpoint, Checkpoints
    from ._convert import fixed_size_binary, to_tensors
    from ._scan import ScanLoader
    from ._spark import WeftDataSource
    from ._torch import ScanDataset, TrainLoader

__version__ = "0.1.0"

__all__ = [
    "Aborted", "AlreadyExists", "Checkpoint", "Checkpoints", "Client", "Commit", "Component", "Connection",
    "InvalidArgument", "NotFound", "PermissionDenied", "Project", "Recipe", "Ref", "Rows", "ScanDataset",
    "ScanLoader", "ScanPlan", "ScanRequest", "ServerError", "Shard", "Shards", "ShuffleConfig", "Table",
    "TrainLoader", "TransformError", "Unauthenticated", "Unavailable", "Video", "WeftDataSource", "WeftError",
    "Window", "Windows", "World", "compute_shards", "fixed_size_binary", "to_tensors",
]

_TORCH = {"Checkpoint": "_checkpoints", "Checkpoints": "_checkpoints", "ScanLoader": "_scan", "ScanDataset": "_torch",
          "TrainLoader": "_torch", "to_tensors": "_convert", "fixed_size_binary": "_convert",
          "WeftDataSource": "_spark"}


def __getattr__(name: str) -> Any:
    # The torch parts load on first use, so writing tables needs no torch
    # (and the Spark data source needs pyspark only when used).
    if name in _TORCH:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_TORCH[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
