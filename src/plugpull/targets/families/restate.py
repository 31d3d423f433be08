"""Restate: a durable handler whose tool is a ctx.run action, on a throwaway Restate server."""

from __future__ import annotations

from plugpull.targets.families import Family, Variant, refunded_again

# The server is the npm package @restatedev/restate-server's binary, not a Python distribution: a built-in
# that needs it also needs `restate-server` (plugpull.targets.restate_support.server_binary).
FAMILY = Family(
    name="restate",
    framework="restate-sdk",
    module="restate",
    extra="restate",
    also=("hypercorn",),
    programs=(("restate-server", "npm install -g @restatedev/restate-server"),),
)

# Restate's docs: ctx.run stores the action's result in the execution log; until it is stored the action
# may run again ("Restate might re-execute the closure multiple times until it records a result", the
# Kotlin SDK's runBlock; the Python page describes the same ctx.run).
RESTATE_RUN = "https://docs.restate.dev/ktdocs/sdk-api-kotlin/dev.restate.sdk.kotlin/-context/run-block"

REFUND = FAMILY.built_in(
    "restate",
    "restate_refund",
    flags=("server", "key"),
    variants=[
        # server=sidecar: plugpull runs the server apart from the run (Target.sidecar) and the kill takes the
        # service process only; server=in-run: start runs the server in its process group, the kill takes both.
        Variant(options={"server": server, "key": key}, sidecar="serve" if server == "sidecar" else None)
        for server in ("sidecar", "in-run")
        for key in ("none", "journaled")
    ],
    result_ignore=("request_id",),
    notes=(
        refunded_again(
            "the ctx.run action in flight when the process died had no result in the journal: Restate ran it again",
            RESTATE_RUN,
        ),
    ),
)

BUILT_INS = (REFUND,)

# The tour (bare `plugpull`, docs/cli.md): per scenario a line its finding claims FAILs and one it claims PASSes, no
# timing line (tests/test_tour.py holds the claims to this); the verdicts are measured as on every line.
TOUR = (REFUND.stop({"server": "sidecar", "key": "none"}, "before-effect", "after-effect"),)
UPGRADE = None
