"""Every built-in kill-mid-tool target keeps the recovery protocol plugpull checks first.

``resume`` on the state a finished clean run left is the documented no-op: exit 0, the run's result
again, no new effect (checks.check_finished_resume). A built-in that broke it would turn each of its
lines into ERROR, so this runs each one's clean run and that resume, with the real framework.
"""

import pytest

import shared_forks
from plugpull import checks, targets
from plugpull.evidence import KillEvidence, Outcome
from plugpull.scenarios import Settings
from plugpull.scenarios.kill_mid_tool import clean_run

VARIANTS = {
    variant.argv: variant
    for built_in in targets.BUILT_INS.values()
    if built_in.installed()
    for variant in built_in.variants
    if variant.scenario == "kill-mid-tool"
}


# Each line forks its target from the pytest process's server of its framework (tests/shared_forks.py: one server a
# framework, not a target module), in its framework's xdist group, with the other tests of that framework.
@pytest.mark.parametrize(
    "variant",
    [pytest.param(v, marks=shared_forks.group_of_built_in(v.name)) for v in VARIANTS.values()],
    ids=[v.label() for v in VARIANTS.values()],
)
def test_a_built_in_targets_resume_of_a_finished_run_is_a_no_op(variant, forked, request):
    if targets.BUILT_INS[variant.name].server:  # a -postgresql target: its state lives on a throwaway cluster
        request.getfixturevalue("server")
    clean = clean_run(variant, Settings(timeout=120), forked)
    ev = KillEvidence(point="", start=Outcome(argv=[]), clean=clean, golden=list(clean.results))
    assert checks.check_clean_run(ev) is None, (checks.check_clean_run(ev), clean.finished_resume)
    assert clean.finished_resume is not None and clean.finished_resume.returncode == 0
    assert clean.finished_effects == {}
    if clean.results:
        assert clean.finished_results, "resume of a finished run reported no result"
