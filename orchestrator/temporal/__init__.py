"""Threads on Temporal (docs/scale-out.md, docs/format.md section 17): the optional extra.

A thread is a workflow (its id is the thread id) that runs the same moderator as a local run;
each role step is an activity on a worker. The modules:

    codec       events, outcomes and step plans as JSON values (what crosses Temporal)
    workflow    ThreadWorkflow: decide, judge, apply, with answers, resumes and cancels as updates
    activities  run_step: the actor's call on a worker, with heartbeats
    worker      `orchestrator worker`: the worker process
    client      connecting, and reading Temporal's errors as the session's
    session     TemporalSession: the session contract (run/contract.py), on Temporal

Nothing is imported here: `temporalio` is needed only by the modules that use it, and this
package's name is all the command line looks up before it knows the extra is wanted.
"""

MISSING = (
    "running threads on Temporal needs the `temporal` extra: "
    "pip install '.[temporal]' in orchestrator's folder"
)
DEFAULT_TASK_QUEUE = "orchestrator"
