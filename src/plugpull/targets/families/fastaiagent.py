"""FastAIAgent: a refund agent whose tool needs approval, with FastAIAgent's checkpointer."""

from __future__ import annotations

from plugpull import notes as n
from plugpull.notes import Note
from plugpull.postgres import URL_ENV
from plugpull.targets.families import Family, Variant

FAMILY = Family(name="fastaiagent", framework="fastaiagent", module="fastaiagent", extra="fastaiagent")

# FastAIAgent documents an atomic claim of the pending approval (AlreadyResumed for the loser)
# and crash recovery that re-invokes the saved tool (Agent.aresume docstring, 1.94.0; docs/agents/durability.md,
# "Tool-boundary crash"). Kind: bug (findings/resume-after-approval/finding.toml).
# The agent's recover exits 4 and prints this line only when both public ways were refused
# (src/plugpull/targets/fastaiagent_approval.py); recover's stderr is the one under the line.
FASTAIAGENT_BOTH_REFUSED = "ChainCheckpointError without Resume; AlreadyResumed with Resume(approved=True)"
FASTAIAGENT_CLAIM_KEPT = Note(
    text="the approval's claim is taken before the tool runs and a crash cannot give it back: "
    "resume(id) says 'pass resume_value', resume(id, Resume) says AlreadyResumed; FastAIAgent's docs: "
    '"If the process is killed (SIGKILL, OOM, container restart) while a tool is running, [...] A plain '
    '`agent.resume(execution_id)` re-invokes the saved tool with the saved args"',
    condition=f"recover exited 4 saying {FASTAIAGENT_BOTH_REFUSED!r}",
    holds=lambda r: n.recover_exit(r) == 4 and FASTAIAGENT_BOTH_REFUSED in r.stderr,
    url="https://github.com/fastaifoundry/fastaiagent-sdk/blob/main/docs/agents/durability.md",
)

APPROVAL = FAMILY.built_in(
    "fastaiagent",
    "fastaiagent_approval",
    scenario="resume-after-approval",
    notes=(FASTAIAGENT_CLAIM_KEPT,),
)

# The same agent on FastAIAgent's PostgresCheckpointer (plugpull.postgres: the server in $PLUGPULL_POSTGRES_URL,
# one database per run), whose claim of a pending approval is one DELETE ... RETURNING. A target of its own so that
# the findings running `fastaiagent` need no server. psycopg_pool: the fastaiagent[postgres] extra.
APPROVAL_POSTGRESQL = FAMILY.built_in(
    "fastaiagent-postgresql",
    "fastaiagent_approval",
    variants=(Variant(options={"store": "postgresql"}),),
    flags=("store",),
    scenario="resume-after-approval",
    notes=(FASTAIAGENT_CLAIM_KEPT,),
    also=("psycopg", "psycopg_pool"),
    server=URL_ENV,
)

BUILT_INS = (APPROVAL, APPROVAL_POSTGRESQL)

# The tour (bare `plugpull`, docs/cli.md): per scenario a line its finding claims FAILs and one it claims PASSes, no
# timing line (tests/test_tour.py holds the claims to this); the verdicts are measured as on every line.
TOUR = (
    APPROVAL.stop({}, "approve-elsewhere", "killed-before-effect"),
    APPROVAL_POSTGRESQL.stop({"store": "postgresql"}, "approve-elsewhere", "killed-before-effect"),
)
UPGRADE = None
