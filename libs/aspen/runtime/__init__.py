"""The in-process runtimes of a set of named views: :class:`~aspen.runtime.local.LocalRuntime`
(N logical nodes in one process), :class:`~aspen.runtime.node.NodeRuntime` (one query node) and
the round protocol the Spark runtime runs (:mod:`aspen.runtime.rounds`). They compile the views
with :func:`aspen.views.build_dataflow` and run the operators of :mod:`aspen.engine`."""
