"""The sweep's executors share one declared interface (:class:`~privgraph.experiments.executors.Executor`)."""

from privgraph.experiments import executors

MEMBERS = ("submit", "pending", "wait", "describe", "close")


def test_every_executor_has_the_declared_interface():
    classes = (executors._LocalExecutor, executors._ProcessExecutor, executors._AutoExecutor, executors._RayExecutor)
    for cls in classes:
        assert all(callable(getattr(cls, name, None)) for name in MEMBERS), cls.__name__
    assert isinstance(executors._LocalExecutor(), executors.Executor)
    assert isinstance(executors.make_executor("local", 1, None, 3), executors._LocalExecutor)
