"""The durable work queue between `scorewatch serve` and `scorewatch worker`: a Redis stream.

`stream.py` is the stream itself (the entry's format, names, consumer group, gauges),
`worker.py` the consumer that scores and stores each entry, `worker_process.py` the
`scorewatch worker` process around it, `dependencies.py` the reachability checks of the
services it and the shared store need (`serve --check`, the worker). The producer side is
`intake/redis_queue.py`.
"""
