"""Power cuts: a FUSE file system that keeps a model of what a disk would hold, and cuts the power.

- :mod:`plugpull.powercut.durability`: the pure model (stdlib only): which writes and namespace
  operations are durable, what a disk holds after a cut under each variant, the losses in words.
- :mod:`plugpull.powercut.backing`: reading a directory into the model, writing a cut onto it.
- :mod:`plugpull.powercut.passthrough`: the FUSE operations (mfusepy) that feed the model.
- :mod:`plugpull.powercut.daemon`: the process that mounts the passthrough and obeys ``cut``.
- :mod:`plugpull.powercut.mount`: the harness side: :class:`~plugpull.powercut.mount.PowerCutMount`.
- :mod:`plugpull.powercut.overhead`: what the mount costs a SQLite workload, as a ratio.

Nothing here imports mfusepy except the daemon's process: the harness needs neither libfuse nor
the binding to tell that FUSE is unavailable (:class:`~plugpull.powercut.mount.FuseUnavailable`).
"""
