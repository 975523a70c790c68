"""One rank of test_client.py's torch.distributed test: joins a gloo group
from $MASTER_ADDR/$MASTER_PORT/$RANK/$WORLD_SIZE, reads its rank of the run
(TrainLoader takes the world from torch.distributed), gathers every rank's
batches and rank 0 writes them to a JSON file.

    python dist_worker.py GRPC_URI PROJECT OUT.json
"""

import json
import sys

import torch.distributed as dist

import weft


def main():
    uri, project, out = sys.argv[1:4]
    dist.init_process_group("gloo", init_method="env://")
    br = weft.Client(uri).project(project).branch("main")
    recipe = weft.Recipe(seed=2048, batch_size=20, steps=25, components=[
        weft.Component(br.table("a"), weight=0.3),
        weft.Component(br.table("b"), weight=0.7)])
    loader = weft.TrainLoader(recipe)  # world=None: torch.distributed's rank and size
    batches = [list(zip(b["_component"].tolist(), b["_row"].tolist())) for b in loader]
    mine = {"rank": dist.get_rank(), "world_size": loader.world.world_size, "run": loader.run_id, "batches": batches}
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, mine)
    if dist.get_rank() == 0:
        with open(out, "w") as f:
            json.dump(gathered, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
