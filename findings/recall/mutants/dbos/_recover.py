"""Start the workflow of _crash.py (killed in step two), recover it; (its status, the steps' runs)."""

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent


def crash_and_recover() -> tuple[str, list[str]]:
    subprocess.run([sys.executable, str(HERE / "_crash.py"), "start"], capture_output=True)
    proc = subprocess.run([sys.executable, str(HERE / "_crash.py"), "recover"], capture_output=True, text=True)
    status = (proc.stdout.strip().splitlines() or ["no status"])[-1]
    return status, Path("steps.log").read_text().split()
