"""FileCheckpointStorage.get_latest returns the newest checkpoint of the workflow (what a restore continues from).

Exit 0 when it returns the checkpoint saved last, 1 when an older one.
"""

import asyncio
import sys
import time
import warnings

warnings.filterwarnings("ignore")

from agent_framework import FileCheckpointStorage  # noqa: E402
from agent_framework._workflows._checkpoint import WorkflowCheckpoint  # noqa: E402


async def main() -> int:
    storage = FileCheckpointStorage("checkpoints")
    saved = []
    for step in range(3):
        saved.append(
            await storage.save(
                WorkflowCheckpoint(workflow_name="orders", graph_signature_hash="h", state={"step": step})
            )
        )
        time.sleep(0.01)
    latest = await storage.get_latest(workflow_name="orders")
    print("latest:", latest.state.get("step"), "saved last:", 2)
    return 0 if latest.checkpoint_id == saved[-1] else 1


sys.exit(asyncio.run(main()))
