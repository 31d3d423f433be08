"""lost-session-write evidence -> verdict: the probe, the store fault's proof, stored items after resume."""

from __future__ import annotations

from plugpull.checks.judgement import Judgement, check_outlived, error, without_fault
from plugpull.checks.protocol import usage_refused
from plugpull.evidence import StoreEvidence, StoreProbe
from plugpull.results import Verdict
from plugpull.store import STAGED


def prove_probe(probe: StoreProbe) -> Judgement | None:
    """None when the probe ran clean and found writes carrying the staged input; else the ERROR."""
    start = probe.start
    if start.spawn_error:
        return error(f"probe: cannot start the target: {start.spawn_error}")
    if start.outlived:
        return check_outlived("start", start, "the probe's start")
    if start.timed_out:
        return error(f"probe: start did not finish within {probe.start_timeout:g}s (killed)")
    if start.returncode != 0:
        return error(f"probe: start failed ({start.describe_exit()}) with every store call answered")
    if probe.token is None:
        return error("probe: the app announced no staged input (announce(staged_input=TOKEN))")
    if not probe.carrying:
        return error(f"probe: none of the {len(probe.writes)} store writes carried the staged input")
    twice = {k: c for k, c in probe.session.items() if c >= 2}
    if twice:
        listed = ", ".join(f"{_short(k)} x{c}" for k, c in twice.items())
        return without_fault(
            f"item duplicated: the probe (every store call answered) already stores {listed}",
            show="start",
        )
    return None


def prove_store_fault(ev: StoreEvidence) -> Judgement | None:
    """None when the fault is proven to have landed on a write carrying the staged input.

    Proven means: start reached the faulted write and it was dropped at the point; that
    write carried the staged input; up to it the staged input was in the same writes as in
    the probe (start took the probed path); start failed; start wrote nothing after it.
    """
    start, n = ev.start, ev.write
    if start.spawn_error:
        return error(f"write {n}: cannot start the target: {start.spawn_error}")
    if start.outlived:
        return check_outlived("start", start, f"start (write {n} faulted)")
    if start.timed_out:
        return error(f"write {n}: start did not finish within {ev.start_timeout:g}s (killed)")
    start_writes = [w for w in ev.writes if w.get("phase") == "start"]
    faulted = next((w for w in start_writes if w.get("number") == n), None)
    if faulted is None:
        return error(f"write {n}: start never reached write {n} (it made {len(start_writes)} writes)")
    if faulted.get("fault") != ev.point or faulted.get("answered"):
        return error(f"write {n}: the store did not drop write {n} at {ev.point}")
    if ev.token is None:
        return error(f"write {n}: start announced no staged input")
    if n not in ev.carrying:
        return error(f"write {n}: write {n} did not carry the staged input (the probe's did)")
    upto = [c for c in ev.carrying if c <= n]
    probed = [c for c in ev.probe_carrying if c <= n]
    if upto != probed:
        return error(f"write {n}: the staged input was in writes {upto} up to write {n}, in the probe {probed}")
    if start.returncode == 0:
        return error(f"write {n}: start exited 0 although write {n} failed: the app never saw the failure")
    later = [w.get("number") for w in start_writes if w.get("number", 0) > n]
    if later:
        return error(f"write {n}: start went on writing after the faulted write (writes {later})")
    return None


def judge_items(ev: StoreEvidence) -> Judgement:
    """Every item ever written must be stored exactly once; the staged input is named first.

    ``ev.counts`` is keyed by store.identity; a user message's key holds its text, so the
    staged input's key is the one holding this run's token.
    """
    if ev.golden:
        return judge_session(ev)
    n, staged = ev.write, ev.staged_stored
    others = {k: c for k, c in ev.counts.items() if not (ev.token and ev.token in k)}
    parts = []
    if staged == 0:
        parts.append("staged input lost: stored 0 times after resume (expected 1)")
    elif staged >= 2:
        parts.append(f"staged input duplicated: stored {staged} times after resume (expected 1)")
    lost = [k for k, c in others.items() if c == 0]
    dup = {k: c for k, c in others.items() if c >= 2}
    if lost:
        parts.append(f"{len(lost)} other item(s) lost: " + ", ".join(_short(k) for k in lost))
    if dup:
        parts.append(f"{len(dup)} other item(s) duplicated: " + ", ".join(f"{_short(k)} x{c}" for k, c in dup.items()))
    if parts:
        return Judgement(Verdict.FAIL, f"write {n}: " + "; ".join(parts))
    return Judgement(
        Verdict.PASS, f"write {n}: staged input stored once; every other written item ({len(others)}) stored once"
    )


def judge_session(ev: StoreEvidence) -> Judgement:
    """The golden-session rule: every item of the probe's session stored exactly once, and nothing beyond it.

    The probe (no fault) is the golden session. Items are compared by store.identity with each run's
    own tokens and ids named (``ev.session`` and ``ev.golden``), so a rewrite of the same logical item
    still matches and an item the fault-free run never stored reads as one beyond the session.
    """
    n, staged = ev.write, ev.staged_stored
    expected = [k for k in ev.golden if STAGED not in k]
    parts = []
    if staged == 0:
        parts.append("staged input lost: stored 0 times after resume (expected 1)")
    elif staged >= 2:
        parts.append(f"staged input duplicated: stored {staged} times after resume (expected 1)")
    lost = [k for k in expected if ev.session.get(k, 0) == 0]
    dup = {k: c for k, c in ev.session.items() if c >= 2 and STAGED not in k}
    beyond = [k for k, c in ev.session.items() if c >= 1 and k not in ev.golden and STAGED not in k]
    if lost:
        parts.append(f"{len(lost)} other item(s) lost: " + ", ".join(_short(k) for k in lost))
    if dup:
        parts.append(f"{len(dup)} other item(s) duplicated: " + ", ".join(f"{_short(k)} x{c}" for k, c in dup.items()))
    if beyond:
        parts.append(f"{len(beyond)} item(s) beyond the probe's session: " + ", ".join(_short(k) for k in beyond))
    if parts:
        return Judgement(Verdict.FAIL, f"write {n}: " + "; ".join(parts))
    return Judgement(
        Verdict.PASS,
        f"write {n}: staged input stored once; every other item of the probe's session ({len(expected)}) "
        "stored once, none beyond it",
    )


def _short(key: str, limit: int = 48) -> str:
    return key if len(key) <= limit else key[: limit - 3] + "..."


def judge_lost_session_write(ev: StoreEvidence) -> Judgement:
    """The verdict for one faulted write at one point."""
    unproven = prove_store_fault(ev)
    if unproven is not None:
        return unproven
    n, resume = ev.write, ev.resume
    if resume is None:
        return error(f"write {n}: resume was not run", show="")
    if resume.spawn_error:
        return error(f"write {n}: cannot start resume: {resume.spawn_error}", show="resume")
    if resume.outlived:
        return check_outlived("resume", resume, f"resume (write {n} faulted)")
    if resume.timed_out:
        return Judgement(Verdict.FAIL, f"write {n}: resume hung: killed after {ev.resume_timeout:g}s", "resume")
    refused = usage_refused(resume, "resume")
    if refused is not None:
        return Judgement(refused.verdict, f"write {n}: {refused.message}", refused.show)
    items = judge_items(ev)
    if resume.returncode != 0:
        detail = items.message.split(": ", 1)[1]
        return Judgement(Verdict.FAIL, f"write {n}: resume crashed ({resume.describe_exit()}); {detail}", "resume")
    return items
