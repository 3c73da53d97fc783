"""What the suite will ask of a submission, all of it, to send to its worker in one request.

The tests ask the worker one probe at a time, in table order: the `match` cases, then the
`eval` and `dropout` cases, then (on a CPU-only machine) every right CPU case of each GPU
target again under the device guard. A correct submission is asked every one of these; so
they go to the worker together, in that order, as one batch (Submission.prefetch), and the
tests then read the replies instead of asking.

The `match` probes are the batch's certain part: their replies are read before any test
compares, as when they alone were asked ahead. The others are speculative: a test may never
ask one (a device probe of a case that is wrong on the CPU, say), so a reply is read when
its test asks for it, and a failure of the worker on a probe no test has asked yet costs
nothing (the probe is asked again, alone, if its test comes). Later requests are only those
a result decides: the perturbed inputs of suite/work.py, follow-through marking, a probe
after the worker failed.
"""


def asks(session, reference, state_of):
    """[(probe, call text, expected ProbeResult, speculative)] in the order the tests ask
    them, for the cases the run selected (session.selected: None for every case).
    `state_of(case)`: the weights a module's case loads (checks._state)."""
    table = session.table
    selected = session.selected

    def chosen(case):
        return selected is None or case.id in selected

    out = []
    for case in table.cases("match"):
        probe = case.probe(state_of(case))
        out.append((probe, case.call_text(), reference.run(probe, case.call_text()), False))
    for check in ("eval", "dropout"):
        for case in table.cases(check):
            if not chosen(case):
                continue
            state = state_of(case)
            bound = case.probe(state, calls=1) if check == "eval" \
                else case.probe(state, mode="eval", calls=1)
            out.append((case.probe(state), case.call_text(),
                        reference.run(bound, case.call_text()), True))
    for case in table.cases("device"):
        if not chosen(case):
            continue
        for sample in table.same_target(case):
            state = state_of(sample)
            expected = reference.run(sample.probe(state), sample.call_text())
            out.append((sample.probe(state, device="cpu", guard=True), sample.call_text(),
                        expected, True))
    return out
